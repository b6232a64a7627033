// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "common/shared_av.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace softnic {
namespace {

constexpr uint64_t kMagic = 0x736f66746e696176ULL;  // "softniav"

std::string shm_name(const std::string &name) {
    std::string n = "/softnic-av-";
    for (char c : name)
        n += (c == '/') ? '_' : c;
    return n;
}

}  // namespace

SharedAvTable::~SharedAvTable() {
    if (map_) munmap(map_, size_);
    if (owner_) shm_unlink(name_.c_str());
}

int SharedAvTable::create(const std::string &name, size_t addrlen, size_t capacity,
                          SharedAvTable **out) {
    auto *t = new SharedAvTable;
    t->name_ = shm_name(name);
    t->size_ = sizeof(Header) + capacity * (1 + addrlen);
    int fd = shm_open(t->name_.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, off_t(t->size_)) != 0) {
        int e = errno;
        if (fd >= 0) close(fd);
        delete t;
        return -e;
    }
    t->map_ = mmap(nullptr, t->size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (t->map_ == MAP_FAILED) {
        t->map_ = nullptr;
        delete t;
        return -ENOMEM;
    }
    t->owner_ = true;
    t->hdr_ = static_cast<Header *>(t->map_);
    t->data_ = static_cast<uint8_t *>(t->map_) + sizeof(Header);
    t->addrlen_ = addrlen;
    t->capacity_ = capacity;
    t->hdr_->addrlen = uint32_t(addrlen);
    t->hdr_->capacity = uint32_t(capacity);
    t->hdr_->count.store(0);
    t->hdr_->magic = kMagic;
    *out = t;
    return 0;
}

int SharedAvTable::open(const std::string &name, size_t addrlen, SharedAvTable **out) {
    auto *t = new SharedAvTable;
    t->name_ = shm_name(name);
    int fd = shm_open(t->name_.c_str(), O_RDONLY, 0);
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0 || size_t(st.st_size) < sizeof(Header)) {
        int e = fd < 0 ? errno : EINVAL;
        if (fd >= 0) close(fd);
        delete t;
        return -e;
    }
    t->size_ = size_t(st.st_size);
    t->map_ = mmap(nullptr, t->size_, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (t->map_ == MAP_FAILED) {
        t->map_ = nullptr;
        delete t;
        return -ENOMEM;
    }
    t->hdr_ = static_cast<Header *>(t->map_);
    t->data_ = static_cast<uint8_t *>(t->map_) + sizeof(Header);
    // Written by another process: check the geometry before trusting it.
    size_t cap = t->hdr_->capacity;
    if (t->hdr_->magic != kMagic || t->hdr_->addrlen != addrlen ||
        sizeof(Header) + cap * (1 + addrlen) > t->size_) {
        delete t;
        return -EINVAL;
    }
    t->addrlen_ = addrlen;
    t->capacity_ = cap;
    *out = t;
    return 0;
}

void SharedAvTable::publish(size_t i, const void *addr) {
    uint8_t *s = slot(i);
    if (addr) std::memcpy(s + 1, addr, addrlen_);
    std::atomic_ref<uint8_t>(s[0]).store(addr ? 1 : 0, std::memory_order_release);
    uint64_t c = hdr_->count.load();
    while (c < i + 1 && !hdr_->count.compare_exchange_weak(c, i + 1)) {
    }
}

bool SharedAvTable::read(size_t i, void *addr) const {
    if (i >= capacity_) return false;
    const uint8_t *s = slot(i);
    if (!std::atomic_ref<uint8_t>(const_cast<uint8_t &>(s[0])).load(std::memory_order_acquire))
        return false;
    std::memcpy(addr, s + 1, addrlen_);
    return true;
}

}  // namespace softnic

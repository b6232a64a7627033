#include "transport/shm/ring.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <new>

namespace softnic::transport::shm {
namespace {

bool process_alive(pid_t pid) {
    return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

// A segment left behind by a process that died can be reclaimed. It is marked closed
// first, so that senders still mapping it notice and look the name up again.
bool stale(const std::string &name) {
    int fd = shm_open(name.c_str(), O_RDWR, 0);
    if (fd < 0) return errno == ENOENT;
    struct stat st {};
    bool dead = false;
    if (fstat(fd, &st) == 0 && size_t(st.st_size) >= sizeof(RingHeader)) {
        void *p = mmap(nullptr, sizeof(RingHeader), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p != MAP_FAILED) {
            auto *h = static_cast<RingHeader *>(p);
            dead = h->magic == kRingMagic && !process_alive(h->owner_pid);
            if (dead) h->state.store(kRingClosed, std::memory_order_release);
            munmap(p, sizeof(RingHeader));
        }
    }
    close(fd);
    return dead;
}

}  // namespace

Segment::~Segment() {
    if (addr_) munmap(addr_, size_);
    if (owner_) shm_unlink(name_.c_str());
}

int Segment::create(const std::string &name, size_t size, bool reclaim) {
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0) {
            if (errno != EEXIST) return -errno;
            if (attempt == 0 && (reclaim || stale(name))) {
                shm_unlink(name.c_str());
                continue;
            }
            return -EADDRINUSE;
        }
        if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
            int e = errno;
            close(fd);
            shm_unlink(name.c_str());
            return -e;
        }
        void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        int e = errno;
        close(fd);
        if (p == MAP_FAILED) {
            shm_unlink(name.c_str());
            return -e;
        }
        name_ = name;
        addr_ = p;
        size_ = size;
        owner_ = true;
        return 0;
    }
    return -EADDRINUSE;
}

int Segment::open(const std::string &name) {
    int fd = shm_open(name.c_str(), O_RDWR, 0);
    if (fd < 0) return -errno;
    struct stat st {};
    if (fstat(fd, &st) != 0 || size_t(st.st_size) < sizeof(RingHeader)) {
        close(fd);
        return -ENOENT;
    }
    void *p = mmap(nullptr, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) return -e;
    name_ = name;
    addr_ = p;
    size_ = st.st_size;
    return 0;
}

size_t ring_bytes(uint32_t cell_size, uint32_t cell_count) {
    return sizeof(RingHeader) + size_t(cell_size) * cell_count;
}

bool ring_valid(const RingHeader *h, size_t mapped, uint32_t &cell_size, uint32_t &cell_count) {
    if (mapped < sizeof(RingHeader)) return false;
    // Each field read once: the segment may change under us.
    const volatile RingHeader *v = h;
    if (v->magic != kRingMagic || v->version != kRingVersion) return false;
    cell_size = v->cell_size;
    cell_count = v->cell_count;
    if (cell_count == 0 || (cell_count & (cell_count - 1))) return false;
    if (cell_size < 64 || cell_size % 64 || cell_size > (1u << 20)) return false;
    return ring_bytes(cell_size, cell_count) <= mapped;
}

}  // namespace softnic::transport::shm

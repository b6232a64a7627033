// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "cxil/usage.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>

#include "cxil/service.hpp"

namespace softnic::cxil {
namespace {

constexpr uint32_t kMagic = 0x53564355;  // "UCVS"
constexpr size_t kSlots = 1024;

struct Slot {
    int32_t pid;
    uint32_t svc_id;
    uint64_t start;  // the process's start time: a reused pid is not the same process
    uint16_t in_use[CXI_RSRC_TYPE_MAX];
};

// Start time of a process in clock ticks (field 22 of /proc/<pid>/stat), 0 if gone.
uint64_t start_time(int pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    size_t p = s.rfind(')');
    if (p == std::string::npos) return 0;
    // Fields after the command name are space separated; the 3rd is at p + 2.
    int field = 2;
    size_t i = p + 1;
    while (i < s.size() && field < 22)
        if (s[i++] == ' ') field++;
    unsigned long long v = 0;
    if (std::sscanf(s.c_str() + i, "%llu", &v) != 1) return 0;
    return v;
}

}  // namespace

struct Usage::Table {
    uint32_t magic;
    uint32_t slots;
    Slot slot[kSlots];
};

template <typename F>
auto Usage::locked(F &&f) {
    while (flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
    auto r = f();
    flock(fd_, LOCK_UN);
    return r;
}

Usage::Usage(const std::string &device) {
    std::string path = Registry::dir() + "/" + device + ".usage";
    fd_ = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd_ < 0 && errno == ENOENT && geteuid() == 0) {  // root makes it, for every user
        fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (fd_ >= 0) fchmod(fd_, 0666);
    }
    if (fd_ < 0) return;
    struct stat st;
    if (fstat(fd_, &st) != 0 ||
        (size_t(st.st_size) < sizeof(Table) && ftruncate(fd_, sizeof(Table)) != 0))
        return;
    void *p = mmap(nullptr, sizeof(Table), PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) return;
    table_ = static_cast<Table *>(p);
    locked([&] {
        if (table_->magic != kMagic || table_->slots != kSlots) {  // new, or not ours
            std::memset(static_cast<void *>(table_), 0, sizeof(Table));
            table_->magic = kMagic;
            table_->slots = kSlots;
        }
        return 0;
    });
}

Usage::~Usage() {
    if (table_) munmap(table_, sizeof(Table));
    if (fd_ >= 0) close(fd_);
}

namespace {

bool alive(const Slot &s) {
    if (s.pid <= 0) return false;
    if (kill(s.pid, 0) != 0 && errno == ESRCH) return false;
    return start_time(s.pid) == s.start;
}

Counts sum(const Slot *slots, uint32_t svc_id) {
    Counts c{};
    for (size_t i = 0; i < kSlots; i++) {
        const Slot &s = slots[i];
        if (s.svc_id != svc_id || !alive(s)) continue;
        for (int t = 0; t < CXI_RSRC_TYPE_MAX; t++)
            c[t] += s.in_use[t];
    }
    return c;
}

}  // namespace

int Usage::take(uint32_t svc_id, cxi_rsrc_type type, unsigned n, unsigned max) {
    if (!table_) return 0;  // no table: nothing is counted, nothing refused
    return locked([&] {
        if (max && sum(table_->slot, svc_id)[type] + n > max) return -ENOSPC;
        int pid = getpid();
        uint64_t start = start_time(pid);  // read /proc once, not per slot
        Slot *mine = nullptr, *free_slot = nullptr;
        for (Slot &s : table_->slot) {
            if (s.pid == pid && s.svc_id == svc_id && s.start == start) mine = &s;
            if (!mine && !free_slot && (s.pid == 0 || !alive(s))) free_slot = &s;
            if (mine) break;
        }
        if (!mine) {
            if (!free_slot) return -ENOSPC;
            *free_slot = Slot{pid, svc_id, start, {}};
            mine = free_slot;
        }
        if (mine->in_use[type] + n > 0xffff) return -ENOSPC;
        mine->in_use[type] = uint16_t(mine->in_use[type] + n);
        return 0;
    });
}

void Usage::give(uint32_t svc_id, cxi_rsrc_type type, unsigned n) {
    if (!table_) return;
    locked([&] {
        int pid = getpid();
        for (Slot &s : table_->slot) {
            if (s.pid != pid || s.svc_id != svc_id) continue;
            s.in_use[type] = uint16_t(s.in_use[type] > n ? s.in_use[type] - n : 0);
            bool empty = true;
            for (uint16_t v : s.in_use)
                empty = empty && v == 0;
            if (empty) s = Slot{};
            break;
        }
        return 0;
    });
}

Counts Usage::total(uint32_t svc_id) {
    if (!table_) return Counts{};
    return locked([&] { return sum(table_->slot, svc_id); });
}

bool Usage::in_use(uint32_t svc_id) {
    Counts c = total(svc_id);
    for (uint32_t v : c)
        if (v) return true;
    return false;
}

}  // namespace softnic::cxil

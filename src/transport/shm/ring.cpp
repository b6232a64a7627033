// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "transport/shm/ring.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <new>

namespace softnic::transport::shm {
namespace {

bool process_alive(pid_t pid) {
    return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

// A ring whose maker has not written its owner yet is being made right now (a few
// microseconds after O_EXCL), unless it is old: then its maker died in that window.
constexpr time_t kUnownedGraceSeconds = 2;

enum class Verdict {
    kLive,       // a live owner, or one being made: the name is taken
    kReclaimed,  // left by a dead process: marked closed and unlinked, the name is free
    kGoing,      // closed by its owner or by another reclaimer: the name frees shortly
};

// Whether `name` still names the file open as `st`: a reclaimer that waited for the lock
// may find that the file it opened was unlinked meanwhile and the name given to a new ring.
bool still_named(const std::string &name, const struct stat &st) {
    int fd = shm_open(name.c_str(), O_RDONLY, 0);
    if (fd < 0) return false;
    struct stat now {};
    bool same = fstat(fd, &now) == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino;
    close(fd);
    return same;
}

// Judges an existing ring `name` under an exclusive lock on it. Two processes reclaiming
// one name must not unlink each other's new ring: the second, let in after the first had
// unlinked the old ring and made its own, finds that the name is no longer the file it
// holds (it judged the file, not the name, before). A ring marked closed makes its
// senders look the name up again.
Verdict reclaim_if_stale(const std::string &name) {
    int fd = shm_open(name.c_str(), O_RDWR, 0);
    if (fd < 0) return errno == ENOENT ? Verdict::kGoing : Verdict::kLive;
    flock(fd, LOCK_EX);
    Verdict v = Verdict::kLive;
    struct stat st {};
    if (fstat(fd, &st) != 0) {
        // unknown: taken to be live
    } else if (!still_named(name, st)) {
        v = Verdict::kGoing;  // reclaimed by another: the name is free or someone else's now
    } else {
        RingHeader *h = nullptr;
        if (size_t(st.st_size) >= sizeof(RingHeader)) {
            void *p = mmap(nullptr, sizeof(RingHeader), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (p != MAP_FAILED) h = static_cast<RingHeader *>(p);
        }
        pid_t owner = h ? h->owner_pid : 0;
        bool ours = !h || h->magic == kRingMagic || h->magic == 0;
        bool dead =
            owner > 0 ? !process_alive(owner) : time(nullptr) - st.st_ctime > kUnownedGraceSeconds;
        if (ours && dead) {
            if (h) h->state.store(kRingClosed, std::memory_order_release);
            shm_unlink(name.c_str());
            v = Verdict::kReclaimed;
        } else if (h && h->state.load(std::memory_order_acquire) == kRingClosed) {
            v = Verdict::kGoing;
        }
        if (h) munmap(h, sizeof(RingHeader));
    }
    flock(fd, LOCK_UN);
    close(fd);
    return v;
}

}  // namespace

Segment::~Segment() {
    if (addr_) munmap(addr_, size_);
    if (owner_) shm_unlink(name_.c_str());
}

int Segment::create(const std::string &name, size_t size, bool reclaim) {
    for (int attempt = 0; attempt < 8; attempt++) {
        int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0) {
            if (errno != EEXIST) return -errno;
            if (reclaim) {  // the name is ours alone (it carries our pid): what is there is stale
                if (attempt) return -EADDRINUSE;
                shm_unlink(name.c_str());
                continue;
            }
            Verdict v = reclaim_if_stale(name);
            if (v == Verdict::kLive) return -EADDRINUSE;
            if (v == Verdict::kGoing) sched_yield();
            continue;
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

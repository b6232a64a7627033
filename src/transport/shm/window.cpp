// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "transport/shm/window.hpp"

#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace softnic::transport::shm {
namespace {

constexpr uint32_t kMaxSlots = 1u << 16;
constexpr uint32_t kMaxCounters = 1u << 16;
constexpr uint32_t kMaxBoards = 1u << 10;
// A peer that died in the middle of a copy never leaves: do not wait for it forever.
constexpr auto kWithdrawWait = std::chrono::milliseconds(500);

size_t slots_offset(uint32_t counters) {
    size_t head = sizeof(WindowHeader) + size_t(counters) * sizeof(uint64_t);
    return (head + 63) & ~size_t(63);
}

size_t board_offset(uint32_t counters, uint32_t slots) {
    return slots_offset(counters) + size_t(slots) * sizeof(RegionSlot);
}

size_t window_bytes(uint32_t counters, uint32_t slots, uint32_t boards) {
    return board_offset(counters, slots) + Board::bytes(boards);
}

Board board_of(WindowHeader *h, uint32_t counters, uint32_t slots, uint32_t boards) {
    auto *at = reinterpret_cast<uint8_t *>(h) + board_offset(counters, slots);
    return Board(reinterpret_cast<BoardEntry *>(at), boards);
}

RegionSlot *slots_of(WindowHeader *h, uint32_t counters) {
    return reinterpret_cast<RegionSlot *>(reinterpret_cast<uint8_t *>(h) + slots_offset(counters));
}

uint32_t home(uint64_t key, uint32_t slot_count) {
    return uint32_t((key * 0x9E3779B97F4A7C15ULL) >> 32) & (slot_count - 1);
}

// Windows are named after their owner's pid, so the name of one whose owner died
// without closing its domain is never reused: unlink those we find (Linux keeps POSIX
// shared memory in /dev/shm).
void reap_stale_windows() {
    DIR *d = opendir("/dev/shm");
    if (!d) return;
    const char prefix[] = "softnic-win-";
    while (dirent *e = readdir(d)) {
        if (std::strncmp(e->d_name, prefix, sizeof(prefix) - 1) != 0) continue;
        long pid = std::strtol(e->d_name + sizeof(prefix) - 1, nullptr, 10);
        if (pid <= 0 || kill(pid_t(pid), 0) == 0 || errno != ESRCH) continue;
        shm_unlink((std::string("/") + e->d_name).c_str());
    }
    closedir(d);
}

}  // namespace

std::string window_name(pid_t pid, uint32_t seq) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "/softnic-win-%d-%u", int(pid), seq);
    return buf;
}

std::unique_ptr<Window> Window::create(const std::string &name, uint32_t counters, uint32_t slots,
                                       uint32_t boards, int &err) {
    if (!slots || (slots & (slots - 1)) || slots > kMaxSlots || counters > kMaxCounters ||
        boards > kMaxBoards) {
        err = -EINVAL;
        return nullptr;
    }
    reap_stale_windows();
    std::unique_ptr<Window> w(new Window);
    // The name carries our pid: an existing segment was left by a dead process.
    err = w->seg_.create(name, window_bytes(counters, slots, boards), true);
    if (err) return nullptr;
    auto *h = static_cast<WindowHeader *>(w->seg_.addr());
    h->version = kWindowVersion;
    h->owner_pid = getpid();
    h->slot_count = slots;
    h->counter_count = counters;
    h->board_count = boards;
    std::atomic_thread_fence(std::memory_order_release);
    h->magic = kWindowMagic;  // the segment is zero-filled: every slot and entry starts empty
    w->hdr_ = h;
    w->slot_count_ = slots;
    w->counter_count_ = counters;
    w->board_ = board_of(h, counters, slots, boards);
    return w;
}

std::atomic<uint64_t> *Window::counters() {
    return reinterpret_cast<std::atomic<uint64_t> *>(hdr_ + 1);
}

RegionSlot *Window::slots() {
    return slots_of(hdr_, counter_count_);
}

bool Window::publish(uint64_t key, uint64_t base, uint64_t len, uint64_t access) {
    std::lock_guard<std::mutex> g(lock_);
    const uint32_t n = slot_count_;
    for (uint32_t i = 0, at = home(key, n); i < n; i++, at = (at + 1) & (n - 1)) {
        RegionSlot &s = slots()[at];
        if (s.state.load(std::memory_order_relaxed) == kSlotLive) continue;
        s.seq.fetch_add(1, std::memory_order_acq_rel);
        s.key.store(key, std::memory_order_relaxed);
        s.base.store(base, std::memory_order_relaxed);
        s.len.store(len, std::memory_order_relaxed);
        s.access.store(access, std::memory_order_relaxed);
        s.state.store(kSlotLive, std::memory_order_relaxed);
        s.seq.fetch_add(1, std::memory_order_release);
        return true;
    }
    return false;
}

void Window::withdraw(uint64_t key) {
    std::lock_guard<std::mutex> g(lock_);
    const uint32_t n = slot_count_;
    for (uint32_t i = 0, at = home(key, n); i < n; i++, at = (at + 1) & (n - 1)) {
        RegionSlot &s = slots()[at];
        uint64_t st = s.state.load(std::memory_order_relaxed);
        if (st == kSlotEmpty) return;  // never published (table was full)
        if (st != kSlotLive || s.key.load(std::memory_order_relaxed) != key) continue;
        s.seq.fetch_add(1, std::memory_order_seq_cst);  // new peers now fail their check
        auto until = std::chrono::steady_clock::now() + kWithdrawWait;
        while (int64_t(s.users.load(std::memory_order_seq_cst)) > 0) {
            if (std::chrono::steady_clock::now() > until) {
                s.users.store(0, std::memory_order_relaxed);
                break;
            }
            sched_yield();
        }
        s.state.store(kSlotDead, std::memory_order_relaxed);  // keeps later probes going
        s.seq.fetch_add(1, std::memory_order_release);
        return;
    }
}

std::unique_ptr<WindowView> WindowView::open(const std::string &name, pid_t owner) {
    std::unique_ptr<WindowView> v(new WindowView);
    if (v->seg_.open(name)) return nullptr;
    auto *h = static_cast<WindowHeader *>(v->seg_.addr());
    if (v->seg_.size() < sizeof(WindowHeader) || h->magic != kWindowMagic ||
        h->version != kWindowVersion || h->owner_pid != owner)
        return nullptr;
    uint32_t slots = h->slot_count, counters = h->counter_count, boards = h->board_count;
    if (!slots || (slots & (slots - 1)) || slots > kMaxSlots || counters > kMaxCounters ||
        boards > kMaxBoards || window_bytes(counters, slots, boards) > v->seg_.size())
        return nullptr;
    v->hdr_ = h;
    v->slot_count_ = slots;
    v->counter_count_ = counters;
    v->board_ = board_of(h, counters, slots, boards);
    return v;
}

bool WindowView::enter(uint64_t key, uint64_t offset, uint64_t len, uint64_t access, uint64_t &addr,
                       Ticket &t) {
    RegionSlot *slots = slots_of(hdr_, counter_count_);
    const uint32_t n = slot_count_;
    for (uint32_t i = 0, at = home(key, n); i < n; i++, at = (at + 1) & (n - 1)) {
        RegionSlot &s = slots[at];
        uint64_t seq = s.seq.load(std::memory_order_acquire);
        if (seq & 1) return false;  // changing: let the owner answer instead
        uint64_t st = s.state.load(std::memory_order_relaxed);
        if (st == kSlotEmpty) return false;
        uint64_t k = s.key.load(std::memory_order_relaxed);
        uint64_t base = s.base.load(std::memory_order_relaxed);
        uint64_t rlen = s.len.load(std::memory_order_relaxed);
        uint64_t acc = s.access.load(std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_acquire);
        if (s.seq.load(std::memory_order_relaxed) != seq) return false;
        if (st != kSlotLive || k != key) continue;
        if ((acc & access) != access || offset > rlen || len > rlen - offset || !base ||
            base + offset < base)
            return false;
        s.users.fetch_add(1, std::memory_order_seq_cst);
        if (s.seq.load(std::memory_order_seq_cst) != seq) {  // withdrawn meanwhile
            s.users.fetch_sub(1, std::memory_order_release);
            return false;
        }
        addr = base + offset;
        t.slot = &s;
        return true;
    }
    return false;
}

void WindowView::leave(Ticket &t) {
    if (t.slot) t.slot->users.fetch_sub(1, std::memory_order_release);
    t.slot = nullptr;
}

std::atomic<uint64_t> *WindowView::counter(uint32_t id) {
    if (id >= counter_count_) return nullptr;
    return reinterpret_cast<std::atomic<uint64_t> *>(hdr_ + 1) + id;
}

}  // namespace softnic::transport::shm

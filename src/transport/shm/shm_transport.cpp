// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "transport/shm/shm_transport.hpp"

#include <signal.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/short_copy.hpp"

namespace softnic::transport::shm {
namespace {
bool g_single_copy = true;
// How far ahead of its position a streaming sender claims a cell's line: a few sends'
// time covers a line's trip between cores (ShmLink::expect_more).
constexpr uint64_t kStreamAhead = 4;
}  // namespace

void set_single_copy(bool enabled) {
    g_single_copy = enabled;
}

std::unique_ptr<ShmRxQueue> ShmRxQueue::create(const std::string &name, RingGeometry g, int &err,
                                               uint64_t attachment) {
    std::unique_ptr<ShmRxQueue> q(new ShmRxQueue);
    err = q->seg_.create(name, ring_bytes(g.cell_size, g.cell_count));
    if (err) return nullptr;
    auto *h = static_cast<RingHeader *>(q->seg_.addr());
    // The owner first: a process that finds the name taken judges the ring by its owner
    // (ring.cpp), and a ring with our magic but no owner yet must not look abandoned.
    h->owner_pid = getpid();
    std::atomic_thread_fence(std::memory_order_release);
    h->magic = kRingMagic;
    h->version = kRingVersion;
    h->cell_size = g.cell_size;
    h->cell_count = g.cell_count;
    h->attachment.store(attachment, std::memory_order_relaxed);
    h->enqueue_pos.store(0, std::memory_order_relaxed);
    for (uint64_t i = 0; i < g.cell_count; i++)
        ring_cell(h, i, g.cell_size, g.cell_count)->seq.store(i);
    h->state.store(kRingReady, std::memory_order_release);
    q->ring_ = h;
    q->geo_ = g;
    q->head_cell_ = ring_cell(h, 0, g.cell_size, g.cell_count);
    return q;
}

ShmRxQueue::~ShmRxQueue() {
    if (ring_) ring_->state.store(kRingClosed, std::memory_order_release);
}

std::unique_ptr<ShmLink> ShmLink::open(const std::string &name, int &err) {
    std::unique_ptr<ShmLink> l(new ShmLink);
    err = l->seg_.open(name);
    if (err) return nullptr;
    auto *h = static_cast<RingHeader *>(l->seg_.addr());
    RingGeometry g;
    if (h->state.load(std::memory_order_acquire) != kRingReady ||
        !ring_valid(h, l->seg_.size(), g.cell_size, g.cell_count)) {
        err = -ENOENT;
        return nullptr;
    }
    if (h->owner_pid <= 0 || (kill(h->owner_pid, 0) != 0 && errno == ESRCH)) {
        err = -ENOENT;  // the ring of a process that died: nobody will read it
        return nullptr;
    }
    l->ring_ = h;
    l->geo_ = g;
    l->set_queued_complete_max(l->max_packet());
    l->owner_ = h->owner_pid;
    l->cma_ok_ = g_single_copy;
    return l;
}

// A packet's bytes into its cell; returns its length. Out of line (memcpy's calls).
[[gnu::noinline]] static size_t fill_cell(uint8_t *dst, const void *hdr, size_t hdr_len,
                                          const iovec *iov, size_t iovcnt) {
    short_copy(dst, hdr, hdr_len);
    size_t off = hdr_len;
    for (size_t i = 0; i < iovcnt; i++) {
        short_copy(dst + off, iov[i].iov_base, iov[i].iov_len);
        off += iov[i].iov_len;
    }
    return off;
}

bool ShmLink::send(const void *hdr, size_t hdr_len, const iovec *iov, size_t iovcnt, bool) {
    RingHeader *h = ring_;
    uint64_t pos = h->enqueue_pos.load(std::memory_order_relaxed);
    CellHeader *c;
    for (;;) {
        c = ring_cell(h, pos, geo_.cell_size, geo_.cell_count);
        uint64_t seq = c->seq.load(std::memory_order_acquire);
        int64_t dif = int64_t(seq) - int64_t(pos);
        if (dif == 0) {
            if (h->enqueue_pos.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed))
                break;
        } else if (dif < 0) {
            return false;  // full
        } else {
            pos = h->enqueue_pos.load(std::memory_order_relaxed);
        }
    }
    uint8_t *dst = reinterpret_cast<uint8_t *>(c) + kCellHeader;
    size_t len;
    if (hdr_len <= kShortCopyMax && iovcnt <= 1 && (!iovcnt || iov->iov_len <= kShortCopyMax)) {
        // A small packet (the 8-byte path's): copied without a call
        copy_upto32(dst, hdr, hdr_len);
        if (iovcnt) copy_upto32(dst + hdr_len, iov->iov_base, iov->iov_len);
        len = hdr_len + (iovcnt ? iov->iov_len : 0);
    } else {
        len = fill_cell(dst, hdr, hdr_len, iov, iovcnt);
    }
    c->len = static_cast<uint32_t>(len);
    c->seq.store(pos + 1, std::memory_order_release);
    return true;
}

// Own the line of a cell a few ahead of the next send's, before a sender reaches it, so
// that its send neither waits for the line nor drains the store buffer on it. Only for a
// stream: in a ping-pong the reader would be fetching our last cell while that line went
// the other way (one way took 1.71 -> 2.31 line floors with it on every send).
void ShmLink::expect_more() {
    const uint64_t pos = ring_->enqueue_pos.load(std::memory_order_relaxed);
    __builtin_prefetch(ring_cell(ring_, pos + kStreamAhead, geo_.cell_size, geo_.cell_count), 1);
}

bool ShmLink::alive() {
    return ring_->state.load(std::memory_order_acquire) == kRingReady;
}

LinkFailure ShmLink::failure() const {
    if (ring_->state.load(std::memory_order_acquire) == kRingReady) return {};
    return {LinkFailure::kClosed, true};
}

bool ShmLink::peer_dead() {
    return kill(owner_, 0) != 0 && errno == ESRCH;
}

ssize_t ShmLink::read(void *local, uint64_t remote_addr, size_t len) {
    return copy(local, remote_addr, len, false);
}

ssize_t ShmLink::write(uint64_t remote_addr, const void *local, size_t len) {
    return copy(const_cast<void *>(local), remote_addr, len, true);
}

ssize_t ShmLink::copy(void *local, uint64_t remote_addr, size_t len, bool to_peer) {
    size_t done = 0;
    while (done < len) {
        iovec l{static_cast<uint8_t *>(local) + done, len - done};
        iovec r{reinterpret_cast<void *>(remote_addr + done), len - done};
        ssize_t n = to_peer ? process_vm_writev(owner_, &l, 1, &r, 1, 0)
                            : process_vm_readv(owner_, &l, 1, &r, 1, 0);
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            if (e == EPERM || e == ENOSYS) cma_ok_ = false;  // fall back to the ring
            return -e;
        }
        done += size_t(n);
    }
    return ssize_t(done);
}

}  // namespace softnic::transport::shm

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Shared-memory transport: each endpoint owns one ring that every local sender writes
// into; large payloads are pulled in a single copy with process_vm_readv.
#pragma once

#include <string>

#include "transport/shm/ring.hpp"
#include "transport/transport.hpp"

namespace softnic::transport::shm {

struct RingGeometry {
    uint32_t cell_size = 4096;
    uint32_t cell_count = 256;
};

// The consumer side: created exclusively, so a second owner of the name is refused.
class ShmRxQueue final : public RxQueue {
  public:
    // Returns null and sets err (-EADDRINUSE when the name has a live owner). The
    // attachment is a word for the layer above, visible to producers from the start.
    static std::unique_ptr<ShmRxQueue> create(const std::string &name, RingGeometry g, int &err,
                                              uint64_t attachment = 0);
    ~ShmRxQueue() override;
    // Inline: the ports of an endpoint call it directly (the class is final) on every
    // progress call.
    size_t poll(PacketSink &sink, size_t budget) override;

  private:
    Segment seg_;
    RingHeader *ring_ = nullptr;
    RingGeometry geo_;                 // private copies: the segment's may be scribbled on
    uint64_t head_ = 0;                // consumer position: private to this process
    CellHeader *head_cell_ = nullptr;  // head_'s cell, kept rather than found on each poll
};

// Whether links may offer single-copy reads (process_vm_readv). On by default; off
// forces the streaming fallback (FI_CXI_SHM_CMA=0), which is also what happens by
// itself when the kernel refuses cross-process reads.
void set_single_copy(bool enabled);

// The producer side, towards one peer's ring.
class ShmLink final : public Link, private BulkAccess {
  public:
    // Null with err = -ENOENT when no such ring exists (no endpoint at that address).
    static std::unique_ptr<ShmLink> open(const std::string &name, int &err);
    size_t max_packet() const override { return geo_.cell_size - kCellHeader; }
    bool send(const void *hdr, size_t hdr_len, const iovec *iov, size_t iovcnt, bool more) override;
    void expect_more() override;
    bool alive() override;
    bool peer_dead() override;
    BulkAccess *bulk() override { return cma_ok_ ? this : nullptr; }
    bool shared_memory() const override { return true; }
    LinkFailure failure() const override;

    // BulkAccess: the consumer's OS process and its attachment word.
    pid_t process() const override { return owner_; }
    uint64_t attachment() const override {
        return ring_->attachment.load(std::memory_order_acquire);
    }

  private:
    ssize_t read(void *local, uint64_t remote_addr, size_t len) override;
    ssize_t write(uint64_t remote_addr, const void *local, size_t len) override;
    ssize_t copy(void *local, uint64_t remote_addr, size_t len, bool to_peer);

    Segment seg_;
    RingHeader *ring_ = nullptr;
    RingGeometry geo_;  // validated at open; the owner may change the segment's later
    pid_t owner_ = 0;
    bool cma_ok_ = true;  // cleared when the kernel refuses process_vm_readv
};

inline size_t ShmRxQueue::poll(PacketSink &sink, size_t budget) {
    size_t n = 0;
    const uint32_t max_len = geo_.cell_size - kCellHeader;
    CellHeader *c = head_cell_;
    for (; n < budget; n++) {
        if (c->seq.load(std::memory_order_acquire) != head_ + 1) break;  // nothing published
        // The next cell is the one this loop reads last, on the message's critical path.
        // Cells are a page apart, so their headers share one L1 set and that line is
        // rarely still cached: fetch it while this message is delivered.
        CellHeader *next = ring_cell(ring_, head_ + 1, geo_.cell_size, geo_.cell_count);
        __builtin_prefetch(next);
        uint32_t len = c->len;
        const uint8_t *data = reinterpret_cast<const uint8_t *>(c) + kCellHeader;
        // A peer's bytes: a length past the cell is never trusted. The protocol gets an
        // empty packet instead, which it drops, logs and counts like any other bad one.
        if (len > max_len) len = 0;
        if (!sink.deliver(data, len)) break;
        c->seq.store(head_ + geo_.cell_count, std::memory_order_release);
        head_++;
        head_cell_ = c = next;
    }
    return n;
}

}  // namespace softnic::transport::shm

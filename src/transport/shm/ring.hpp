// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A multi-producer, single-consumer ring of fixed-size cells in POSIX shared memory.
//
// Producers claim a cell with one CAS on the enqueue position and publish it by storing
// the cell's sequence number (bounded MPMC queue after D. Vyukov); the single consumer
// reads cells in order. Everything in the segment is written by other processes and is
// therefore untrusted: the consumer checks every length before use.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace softnic::transport::shm {

constexpr uint64_t kRingMagic = 0x736f66746e696331ULL;  // "softnic1"
constexpr uint32_t kRingVersion = 2;

enum RingState : uint32_t { kRingInit = 0, kRingReady = 1, kRingClosed = 2 };

struct RingHeader {
    uint64_t magic;
    uint32_t version;
    uint32_t cell_size;   // bytes per cell, including CellHeader
    uint32_t cell_count;  // power of two
    int32_t owner_pid;    // OS pid of the consumer, for liveness and single-copy reads
    std::atomic<uint32_t> state;
    uint32_t reserved;
    std::atomic<uint64_t> attachment;  // opaque to the transport: set by the layer above
    alignas(64) std::atomic<uint64_t> enqueue_pos;
    alignas(64) uint8_t cells[];
};

struct CellHeader {
    std::atomic<uint64_t> seq;
    uint32_t len;
    uint32_t reserved;
};

constexpr size_t kCellHeader = 16;

// A mapped segment; unmapped (and unlinked, for the owner) on destruction.
class Segment {
  public:
    Segment() = default;
    ~Segment();
    Segment(const Segment &) = delete;
    Segment &operator=(const Segment &) = delete;

    // Create exclusively; -EADDRINUSE when a live owner holds the name. With
    // `reclaim`, any existing segment of that name is taken to be stale.
    int create(const std::string &name, size_t size, bool reclaim = false);
    int open(const std::string &name);  // -ENOENT when absent
    void *addr() const { return addr_; }
    size_t size() const { return size_; }

  private:
    std::string name_;
    void *addr_ = nullptr;
    size_t size_ = 0;
    bool owner_ = false;
};

size_t ring_bytes(uint32_t cell_size, uint32_t cell_count);
// Validate a mapped ring header written by someone else; the geometry it checked comes
// back in cell_size and cell_count (use those, not the segment's).
bool ring_valid(const RingHeader *h, size_t mapped, uint32_t &cell_size, uint32_t &cell_count);

// Cell `pos` of a ring whose geometry the caller took once (at create or validated at
// open) and keeps privately: the copy in the segment may be overwritten by anyone.
inline CellHeader *ring_cell(RingHeader *h, uint64_t pos, uint32_t cell_size, uint32_t cell_count) {
    return reinterpret_cast<CellHeader *>(h->cells + (pos & (cell_count - 1)) * size_t(cell_size));
}

}  // namespace softnic::transport::shm

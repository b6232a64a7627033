// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A ring of per-packet slots indexed by sequence number, sized to what a channel has
// needed rather than to its window: it starts small, doubles when the packets in flight
// (or held for reordering) need more room, up to the window, and goes back to its first
// size when the channel is quiet. An idle peer so costs a few slots, not a window's worth.
// Sizes are powers of two: a slot is found with a mask, not a division.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace softnic::transport::udp {

template <typename Slot>
class SeqRing {
  public:
    // `max` slots at most (rounded up to a power of two), `initial` at first.
    SeqRing(uint32_t initial, uint32_t max)
        : max_(pow2(max)),
          initial_(std::min(pow2(initial), max_)),
          slots_(initial_),
          mask_(initial_ - 1) {}

    Slot &operator[](uint64_t seq) { return slots_[seq & mask_]; }
    const Slot &operator[](uint64_t seq) const { return slots_[seq & mask_]; }
    uint32_t size() const { return uint32_t(slots_.size()); }
    uint32_t max() const { return max_; }
    bool grown() const { return slots_.size() > initial_; }

    // Room for sequences [lo, lo + need), `need` at most max(). The slots that held
    // [lo, lo + size()) keep their contents (and buffers) under the same sequences.
    void grow(uint64_t lo, uint64_t need) {
        uint32_t n = size();
        while (n < need && n < max_)
            n *= 2;
        if (n == size()) return;
        std::vector<Slot> bigger(n);
        for (uint64_t s = lo; s < lo + size(); s++)
            bigger[s & (n - 1)] = std::move(slots_[s & mask_]);
        slots_ = std::move(bigger);
        mask_ = n - 1;
    }

    // Back to the first size, the slots of [lo, lo + initial) kept; call only when no
    // slot beyond those holds anything the channel still needs.
    void shrink(uint64_t lo) {
        if (!grown()) return;
        std::vector<Slot> smaller(initial_);
        for (uint64_t s = lo; s < lo + initial_; s++)
            smaller[s & (initial_ - 1)] = std::move(slots_[s & mask_]);
        slots_ = std::move(smaller);
        mask_ = initial_ - 1;
    }

    auto begin() { return slots_.begin(); }
    auto end() { return slots_.end(); }
    auto begin() const { return slots_.begin(); }
    auto end() const { return slots_.end(); }

  private:
    static uint32_t pow2(uint32_t v) {
        uint32_t p = 1;
        while (p < v)
            p *= 2;
        return p;
    }

    uint32_t max_, initial_;
    std::vector<Slot> slots_;
    uint64_t mask_;
};

}  // namespace softnic::transport::udp

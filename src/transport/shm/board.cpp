// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "transport/shm/board.hpp"

#include <cstring>

namespace softnic::transport::shm {

BoardEntry *Board::claim(uint64_t owner, uint64_t key) {
    for (uint32_t i = 0; i < count_; i++) {
        BoardEntry &e = entries_[i];
        uint64_t free = 0;
        if (!e.owner.compare_exchange_strong(free, ~0ULL, std::memory_order_acq_rel)) continue;
        // Ours now, still invisible to finders (no owner matches ~0): reset it.
        for (BoardCell &c : e.cells)
            c.seq.store(0, std::memory_order_relaxed);
        e.low.store(0, std::memory_order_relaxed);
        e.ready.store(0, std::memory_order_relaxed);
        e.key.store(key, std::memory_order_relaxed);
        e.owner.store(owner, std::memory_order_release);
        return &e;
    }
    return nullptr;
}

void Board::release(BoardEntry *e) {
    if (!e) return;
    e->key.store(0, std::memory_order_relaxed);
    e->owner.store(0, std::memory_order_release);
}

BoardEntry *Board::find(uint64_t owner, uint64_t key) const {
    for (uint32_t i = 0; i < count_; i++) {
        BoardEntry &e = entries_[i];
        if (e.owner.load(std::memory_order_acquire) == owner &&
            e.key.load(std::memory_order_relaxed) == key)
            return &e;
    }
    return nullptr;
}

void Board::post(BoardEntry &e, uint32_t seq, uint64_t word, const void *data, size_t len) {
    BoardCell &c = e.cells[seq % kBoardDepth];
    c.tag = e.key.load(std::memory_order_relaxed);
    c.word = word;
    if (len) std::memcpy(c.data, data, len < kBoardBytes ? len : kBoardBytes);
    c.seq.store(uint64_t(seq) + 1, std::memory_order_release);
}

// The seq is checked again after the copy: an owner that broke the protocol (or a
// hostile one) may have rewritten the cell meanwhile.
bool Board::read(const BoardEntry &e, uint64_t key, uint32_t seq, uint64_t &word,
                 uint8_t (&data)[kBoardBytes]) {
    const BoardCell &c = e.cells[seq % kBoardDepth];
    if (c.seq.load(std::memory_order_acquire) != uint64_t(seq) + 1) return false;
    const uint64_t tag = c.tag;
    word = c.word;
    std::memcpy(data, c.data, kBoardBytes);
    std::atomic_thread_fence(std::memory_order_acquire);
    return tag == key && c.seq.load(std::memory_order_relaxed) == uint64_t(seq) + 1;
}

}  // namespace softnic::transport::shm

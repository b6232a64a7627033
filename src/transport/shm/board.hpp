// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A board: entries in a process's memory window that local peers read without the
// owner's help. The collective engine posts each call's contribution in a cell of its
// group's entry, and the other members on the host read it there instead of each
// receiving a packet: one store for the writer, one cache line for each reader.
//
// Only the owner writes its entries (several of its endpoints may claim concurrently:
// claiming is one CAS). Everything a peer reads here is untrusted.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace softnic::transport::shm {

constexpr uint32_t kBoardDepth = 16;  // cells per entry: how far behind a reader may be
constexpr size_t kBoardBytes = 32;    // payload of one cell

struct alignas(64) BoardCell {
    std::atomic<uint64_t> seq;  // the call's number + 1, stored last
    uint64_t tag;               // the entry's key when the cell was written
    uint64_t word;              // for the layer above
    uint8_t data[kBoardBytes];
};

struct alignas(64) BoardEntry {
    std::atomic<uint64_t> owner;  // 0: free; else which of the owner's endpoints
    std::atomic<uint64_t> key;    // what the entry is for (a collective group)
    std::atomic<uint64_t> low;    // the owner reads no cell of a call below this one
    std::atomic<uint64_t> ready;  // the owner reads the entries of every other member
    BoardCell cells[kBoardDepth];
};

// The entries of one window, as its owner or a peer maps them.
class Board {
  public:
    Board() = default;
    Board(BoardEntry *entries, uint32_t count) : entries_(entries), count_(count) {}
    static size_t bytes(uint32_t count) { return size_t(count) * sizeof(BoardEntry); }

    // Owner: a free entry for (`owner`, `key`) with every cell empty; null when full.
    // `owner` must not be 0.
    BoardEntry *claim(uint64_t owner, uint64_t key);
    static void release(BoardEntry *e);
    // Peer: the live entry of (`owner`, `key`), or null.
    BoardEntry *find(uint64_t owner, uint64_t key) const;

    // Owner: post call `seq` in its cell. The caller has made sure every reader is past
    // the call the cell held before (their `low`).
    static void post(BoardEntry &e, uint32_t seq, uint64_t word, const void *data, size_t len);
    // Peer: call `seq` from its cell, if it is there; copies out the word and data.
    static bool read(const BoardEntry &e, uint64_t key, uint32_t seq, uint64_t &word,
                     uint8_t (&data)[kBoardBytes]);

  private:
    BoardEntry *entries_ = nullptr;
    uint32_t count_ = 0;
};

}  // namespace softnic::transport::shm

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A memory window: what a process publishes so that local peers can reach its
// registered memory without its help (single-copy one-sided operations within a host).
//
// The segment holds a table of regions (key -> address, length, access), an array of
// counters that peers may bump (the emulated NIC's telemetry) and a board of collective
// contributions (board.hpp). Only the owner
// writes the table; each slot is a seqlock, and peers announce an access in progress
// in the slot's `users` word so that withdrawing a region waits for them (Dekker-style,
// both sides sequentially consistent). Everything a peer reads here is untrusted.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "transport/shm/board.hpp"
#include "transport/shm/ring.hpp"

namespace softnic::transport::shm {

constexpr uint64_t kWindowMagic = 0x736f66746e696377ULL;  // "softnicw"
constexpr uint32_t kWindowVersion = 2;

struct WindowHeader {
    uint64_t magic;
    uint32_t version;
    int32_t owner_pid;
    uint32_t slot_count;     // power of two
    uint32_t counter_count;  // counters follow the header, then the slots, then the board
    uint32_t board_count;
    uint32_t reserved;
};

enum SlotState : uint64_t { kSlotEmpty = 0, kSlotLive = 1, kSlotDead = 2 };

struct alignas(64) RegionSlot {
    std::atomic<uint64_t> seq;  // odd while the owner changes the slot
    std::atomic<uint64_t> state, key, base, len, access;
    std::atomic<uint64_t> users;  // peers copying to or from the region right now
};

// The name of the window `seq` of process `pid`.
std::string window_name(pid_t pid, uint32_t seq);

// The owner's side.
class Window {
  public:
    static std::unique_ptr<Window> create(const std::string &name, uint32_t counters,
                                          uint32_t slots, uint32_t boards, int &err);
    std::atomic<uint64_t> *counters();
    Board &board() { return board_; }
    // False when the table is full: the region is then reached through the owner.
    bool publish(uint64_t key, uint64_t base, uint64_t len, uint64_t access);
    // Unpublish `key`, waiting (boundedly) for peers that are copying.
    void withdraw(uint64_t key);

  private:
    RegionSlot *slots();
    Segment seg_;
    WindowHeader *hdr_ = nullptr;
    uint32_t slot_count_ = 0, counter_count_ = 0;  // ours: peers map the header writable
    Board board_;
    std::mutex lock_;  // owners may register from several threads
};

// A peer's view of someone else's window.
class WindowView {
  public:
    // Null unless `name` is a valid window of process `owner`.
    static std::unique_ptr<WindowView> open(const std::string &name, pid_t owner);

    // An access in progress; leave() ends it.
    struct Ticket {
        RegionSlot *slot = nullptr;
    };
    // Find `key` and check that [offset, offset + len) lies in the region with `access`;
    // on success `addr` is the owner's address and the access is announced.
    bool enter(uint64_t key, uint64_t offset, uint64_t len, uint64_t access, uint64_t &addr,
               Ticket &t);
    void leave(Ticket &t);
    // The owner's counter `id`, or null when out of range.
    std::atomic<uint64_t> *counter(uint32_t id);
    const Board &board() const { return board_; }

  private:
    Segment seg_;
    WindowHeader *hdr_ = nullptr;
    uint32_t slot_count_ = 0, counter_count_ = 0;  // copied once: the header is untrusted
    Board board_;
};

}  // namespace softnic::transport::shm

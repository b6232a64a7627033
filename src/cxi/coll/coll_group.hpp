// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The state of one joined collective group and of its calls in flight, shared by the
// engine's files (coll.cpp: the packet protocol; coll_board.cpp: contributions through
// the shared-memory board).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

#include "cxi/coll/coll.hpp"
#include "transport/shm/board.hpp"

namespace softnic::cxi {

// What every member of a group must agree on about a call, and how contributions travel.
namespace coll_shape {

// Small groups exchange contributions directly, everyone with everyone, and fold them
// locally in rank order: one hop instead of two, the same bits on every member.
constexpr size_t kDirectMax = 4;
inline bool direct(size_t members, CollKind kind) {
    return members <= kDirectMax && (kind == CollKind::kAllreduce || kind == CollKind::kBarrier);
}

// The shape of a call, which every member must agree on: kind, op, datatype, count (at
// most 32: 6 bits), root (20 bits) and a double sum's rounding (4 bits). Bits 24-31
// carry the packet's flags.
inline uint64_t signature(const CollArgs &a) {
    return uint64_t(a.kind) | uint64_t(uint8_t(a.op)) << 8 | uint64_t(uint8_t(a.dt)) << 16 |
           uint64_t(a.count & 0xff) << 32 | uint64_t(a.root & 0xfffff) << 40 |
           uint64_t(a.fp_mode & 0xf) << 60;
}

// The payload a contribution of this shape carries (a broadcast's only from its root).
inline size_t payload_of(uint64_t sig, uint32_t from) {
    auto kind = CollKind(sig & 0xff);
    if (kind > CollKind::kAllreduce) return SIZE_MAX;  // no such call: a mismatch
    if (kind == CollKind::kBroadcast && from != uint32_t((sig >> 40) & 0xfffff)) return 0;
    return coll_bytes(kind, int(uint8_t(sig >> 8)), int(uint8_t(sig >> 16)), (sig >> 32) & 0xff);
}

}  // namespace coll_shape

struct CollEngine::Op {
    bool used = false;  // the slot holds call `seq`
    uint32_t seq = 0;
    bool posted = false;  // the local call was made (a root may hear from others first)
    CollArgs a{};
    size_t len = 0;
    uint32_t arrived = 0;                                     // root: contributions in
    std::vector<std::array<uint8_t, kCollMaxBytes>> contrib;  // root: by rank
    std::vector<uint64_t> sig;                                // root: each call's shape
    std::vector<uint8_t> got;
    uint64_t posted_ns = 0, probed_ns = 0;
};

struct CollEngine::Group {
    uint64_t key;
    std::vector<CxiAddr> members;
    std::vector<transport::Link *> links;  // to each member, resolved on first use
    uint32_t rank;
    uint32_t next_seq = 0;
    int failed = 0;  // the reduction error every later call gets once a member died
    size_t posted = 0;
    // Calls by sequence number, in a ring of slots reused without allocation: members
    // are at most a few calls apart (kMaxInFlight each), far fewer than kSlots.
    static constexpr uint32_t kSlots = 4 * kMaxInFlight;
    std::array<Op, kSlots> slots;

    Op *find(uint32_t seq) {
        Op &o = slots[seq % kSlots];
        return o.used && o.seq == seq ? &o : nullptr;
    }
    // The slot of `seq`, made ready for it; null while an older call still holds it.
    Op *claim(uint32_t seq) {
        Op &o = slots[seq % kSlots];
        if (o.used) return o.seq == seq ? &o : nullptr;
        o.used = true;
        o.seq = seq;
        o.posted = false;
        o.arrived = 0;
        o.contrib.resize(members.size());  // allocates on a slot's first use only
        o.sig.assign(members.size(), 0);
        o.got.assign(members.size(), 0);
        return &o;
    }
    void release(Op &o) {
        o.used = false;
        if (mine) publish_low();
    }

    // The board (coll_board.cpp): our entry in our window, and each member's entry as we
    // map it (null: not found, or packets only).
    transport::shm::BoardEntry *mine = nullptr;
    std::vector<transport::shm::BoardEntry *> boards;
    bool board_all = false;    // every member reads the board: our contributions go there
    uint32_t board_until = 0;  // calls below this fit without looking at the members' `low`
    uint32_t low = 0;          // our lowest call in flight (next_seq when none)
    unsigned looks = 0;        // eager looks for the members' entries so far

    // After a call ends: the lowest call we still read, for writers to see.
    void publish_low() {
        uint32_t l = next_seq;
        for (const Op &o : slots)
            if (o.used && o.posted && int32_t(o.seq - l) < 0) l = o.seq;
        low = l;
        mine->low.store(l, std::memory_order_release);
    }
};

}  // namespace softnic::cxi

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Direct contributions within a host through the board (transport/shm/board.hpp): a
// member posts its contribution to a call in its own entry, in the window its domain
// already publishes, and the other members read it there. One store replaces a ring
// send to every other member, and a reader finds it with one cache line, with no
// packet to parse.
//
// Members agree on nothing in advance. Each claims an entry at join and looks for the
// others' entries (through its shared-memory links); once it found them all it says so
// (`ready`). A member posts on the board only while every other member is ready, so
// every reader looks there; otherwise, and whenever a slow reader has not yet read the
// cell the call would overwrite (its `low`), the contribution goes out in packets as
// before. Readers take both.
#include <cassini_cntr_defs.h>

#include "common/log.hpp"
#include "cxi/coll/coll_group.hpp"
#include "cxi/core/pid_engine.hpp"
#include "cxi/obj/domain.hpp"

namespace softnic::cxi {
using namespace coll_shape;
namespace shm = transport::shm;
namespace {

constexpr unsigned kEagerLooks = 16;  // calls that look for missing entries themselves

// Which of a process's endpoints an entry belongs to: never 0 (a free entry).
uint64_t board_owner(uint32_t pid) {
    return uint64_t(pid) << 1 | 1;
}

}  // namespace

void CollEngine::board_join(Group &g) {
    shm::Window *w = domain_.window();
    if (!w || !(g.mine = w->board().claim(board_owner(engine_.pid()), g.key))) return;
    board_groups_++;
    board_look(g);
}

void CollEngine::board_leave(Group &g) {
    if (!g.mine) return;
    shm::Board::release(g.mine);
    g.mine = nullptr;
    board_groups_--;
}

// Find the members' entries we lack; say we are ready once we have them all.
void CollEngine::board_look(Group &g) {
    bool found = true, ready = true;
    for (uint32_t r = 0; r < g.members.size(); r++) {
        if (r == g.rank) continue;
        if (!g.boards[r]) {
            transport::Link *link = link_to(g, r);
            // No window of its to read (another host, or no single-copy access): packets.
            if (link && !link->bulk()) {
                board_leave(g);
                return;
            }
            shm::WindowView *view = link ? domain_.window_of(link) : nullptr;
            if (view) g.boards[r] = view->board().find(board_owner(g.members[r].pid), g.key);
        }
        if (!g.boards[r]) {
            found = false;
            continue;
        }
        ready &= g.boards[r]->ready.load(std::memory_order_acquire) == 1;
    }
    if (found) g.mine->ready.store(1, std::memory_order_release);
    g.board_all = found && ready;
    g.board_until = g.next_seq;  // the first post looks at every reader's `low`
}

// Whether call `seq` may overwrite its cell: every reader is past the call it held.
bool CollEngine::board_room(Group &g, uint32_t seq) {
    uint32_t until = seq + shm::kBoardDepth;
    for (uint32_t r = 0; r < g.members.size(); r++) {
        if (r == g.rank) continue;
        uint32_t low = uint32_t(g.boards[r]->low.load(std::memory_order_acquire));
        if (int32_t(low + shm::kBoardDepth - until) < 0) until = low + shm::kBoardDepth;
    }
    g.board_until = until;
    return int32_t(seq - until) < 0;
}

bool CollEngine::board_post(Group &g, const Op &op, const void *data) {
    if (!g.board_all && g.looks < kEagerLooks) {
        g.looks++;
        board_look(g);
    }
    if (!g.mine || !g.board_all) return false;
    if (int32_t(op.seq - g.board_until) >= 0 && !board_room(g, op.seq)) return false;
    shm::Board::post(*g.mine, op.seq, signature(op.a), data, data ? op.len : 0);
    return true;
}

// Read the members' cells for each direct call of ours in flight.
void CollEngine::board_poll(Group &g) {
    const uint32_t n = uint32_t(g.members.size());
    for (uint32_t seq = g.low; seq != g.next_seq; seq++) {
        Op *op = g.find(seq);
        if (!op || !op->posted || !direct(n, op->a.kind)) continue;
        for (uint32_t r = 0; r < n; r++) {
            if (r == g.rank || op->got[r] || !g.boards[r]) continue;
            uint64_t word = 0;
            uint8_t data[shm::kBoardBytes];
            if (!shm::Board::read(*g.boards[r], g.key, seq, word, data)) continue;
            size_t len = payload_of(word, r);
            domain_.count(SOFTNIC_CNTR_COLL_BOARD);
            record(g, *op, r, word, data, len <= kCollMaxBytes ? len : 0);
            if (!op->used || op->seq != seq) break;  // finished
        }
        if (g.failed || !g.mine) return;
    }
}

}  // namespace softnic::cxi

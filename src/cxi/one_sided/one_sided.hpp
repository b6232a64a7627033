// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The one-sided engine of a context: RMA and atomics, both sides. The initiator's
// packets (rma.cpp, atomic.cpp) or a single copy through the target's memory window within
// the host (local_rma.cpp); the target's handling of writes, reads and atomics against
// its domain's MR table. The target's progress serves them; the offload helper does so
// while the target application is away.
#pragma once

#include <deque>
#include <unordered_map>

#include "cxi/core/tx_engine.hpp"
#include "cxi/core/wire.hpp"
#include "transport/shm/window.hpp"

namespace softnic::cxi {

class PidEngine;
class Domain;

class OneSided {
  public:
    explicit OneSided(PidEngine &engine);
    OneSided(const OneSided &) = delete;
    OneSided &operator=(const OneSided &) = delete;

    // Initiator side.
    bool single_copy(const SendArgs &a, transport::Link *link);  // true: done and completed
    void stage_amo(TxOp *op);                                    // the operands into `op`
    bool pump_rma(TxOp *op);                                     // true when every packet is queued
    bool pump_amo(TxOp *op);
    void on_read_resp(const WireHdr &h, const uint8_t *payload);
    void on_atomic_resp(const WireHdr &h, const uint8_t *payload);

    // Target side. A read request is always taken from the ring: answered now, or kept
    // until a reply slot frees (serve_owed, from progress). Holding it in the ring would
    // block the answers to our own reads behind it: two endpoints reading each other
    // would wait on each other forever.
    void on_write(const WireHdr &h, const uint8_t *payload);
    void on_read_req(const WireHdr &h);
    bool owes() const { return !owed_.empty(); }
    void serve_owed();
    void on_atomic(const WireHdr &h, const uint8_t *payload);

  private:
    Mr *target_mr(const WireHdr &h, uint64_t access);
    void send_reply(const WireHdr &req, uint16_t flags);
    void count_remote(Mr *mr, bool write);
    void count_write(const WireHdr &h, bool ok);
    bool restricted_here(const WireHdr &h) const;
    void report_write(const WireHdr &h, Mr *mr);
    transport::shm::WindowView *window_for(transport::Link *link);
    bool answer_read(const WireHdr &h);  // false: no reply slot free

    static constexpr size_t kMaxOwedReads = 1 << 16;
    std::deque<WireHdr> owed_;  // read requests waiting for a reply slot, oldest first
    PidEngine &engine_;
    Domain &domain_;
    std::unordered_map<transport::Link *, transport::shm::WindowView *> windows_;  // cache
};

}  // namespace softnic::cxi

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The transmit engine of a PID engine: posting sends and one-sided operations, pumping
// their packets into the peer's link, and completing them once transmitted, answered
// or acknowledged. It also sends the engine's control packets (kDone, kGetReq...).
#pragma once

#include <deque>
#include <vector>

#include "cxi/core/tx_op.hpp"
#include "cxi/core/wire.hpp"
#include "transport/msg/ack_queue.hpp"
#include "transport/transport.hpp"

namespace softnic::cxi {

class PidEngine;
class Domain;

class TxEngine {
  public:
    // Answers in flight at once; more wait as requests (OneSided::owed_) instead.
    static constexpr size_t kReplySlots = 64;

    TxEngine(PidEngine &engine, size_t tx_size);
    TxEngine(const TxEngine &) = delete;
    TxEngine &operator=(const TxEngine &) = delete;

    // Posting (tx_engine.cpp); the context's lock is held.
    ssize_t send(const SendArgs &a);
    TxOp *alloc();
    // A slot for what this context owes a peer (a read's data): never one of the
    // application's tx_size slots, so answers do not wait behind our own requests.
    TxOp *alloc_reply();
    TxOp *by_cookie(uint64_t cookie);   // null for stale or forged cookies
    void submit(TxOp *op);              // into the FIFO, and out unless an FI_MORE batch holds it
    void on_get_req(const WireHdr &h);  // a receiver pulls a rendezvous send's data
    // A control packet with at most 32 payload bytes; retried by progress when refused.
    void send_ctrl(transport::Link *link, const WireHdr &h, const void *data = nullptr);
    void fill_hdr(WireHdr &h, Pkt type, const SendArgs &a, const transport::Link *link) const;

    // Completion (tx_complete.cpp).
    void on_done(const WireHdr &h);
    void complete(TxOp *op, int err, int prov_errno);
    void complete_send(const SendArgs &a, int err, int prov_errno);
    // complete_send's common case, a send that succeeded (inline: tx_sent.hpp).
    inline void complete_sent(const SendArgs &a);
    void fail_link(transport::Link *link, int err, int prov_errno);  // the peer is gone

    // Retries of refused sends (rnr.cpp).
    void rnr_backoff(TxOp *op);

    // Backlog, retries, the FIFO, acknowledgements; `tick` counts progress calls. Inline:
    // with nothing in flight (an application waiting for a message) it costs a few loads.
    // Every queued operation holds a pool slot, so outstanding_ covers all the queues.
    void progress(unsigned tick) {
        if (busy()) progress_queues((tick & 4095) == 0);
    }
    size_t outstanding() const { return outstanding_; }
    bool busy() const { return outstanding_ || !ctrl_backlog_.empty(); }
    // A packet arrived: a send after it answers it (a ping-pong), not a stream.
    void saw_packet() { sends_unanswered_ = 0; }

  private:
    ssize_t send_device(SendArgs a, transport::Link *link);
    void post(TxOp *op);
    void enqueue(TxOp *op);
    bool try_fast_send(const SendArgs &a, transport::Link *link, int &err);
    bool try_acked_send(const SendArgs &a, transport::Link *link);
    inline bool send_small(const SendArgs &a, transport::Link *link);
    ssize_t send_queued(const SendArgs &a, transport::Link *link, int err);
    uint64_t completion_level(uint64_t flags) const;
    inline bool plain_completion(uint64_t flags) const;
    void free(TxOp *op);
    bool pump(TxOp *op);
    bool pump_msg(TxOp *op);
    void pump_pending();
    void pump_ops(transport::Link *&batch);
    void progress_queues(bool reap_due);
    void flush_ctrl();
    bool send_packet(transport::Link *link, const WireHdr &h, const void *data);
    void check_acks();
    void await_ack(TxOp *op, uint64_t token, int err, int prov_errno);
    void reap_dead_peers();
    void rnr_resend_due();

    PidEngine &engine_;
    Domain &domain_;
    std::vector<TxOp> pool_;  // the application's tx_size slots, then kReplySlots
    size_t app_slots_;
    size_t eager_max_;  // env().eager_max(), fixed once the provider is loaded
    TxOp *free_ = nullptr;
    TxOp *reply_free_ = nullptr;
    size_t outstanding_ = 0;
    List<TxOp> pending_;  // FIFO of operations still to (fully) transmit
    size_t pending_count_ = 0;
    bool holding_more_ = false;
    transport::msg::AckQueue<TxOp> awaiting_ack_;  // transmitted, waiting for the peer's ack
    std::vector<TxOp *> rnr_waiting_;  // refused by a receiver not ready: sent again when due
    unsigned eagain_streak_ = 0;       // full-ring refusals: every 1024th checks the peer lives
    // One-packet sends since the last packet arrived: from the second on, a stream, whose
    // link may get room ready ahead (Link::expect_more).
    unsigned sends_unanswered_ = 0;
    struct CtrlPkt {  // kDone/kGetReq/kAtomicResp/kColl to retry
        transport::Link *link;
        WireHdr h;
        uint8_t data[32];  // h.payload bytes: an atomic's previous value, a reduction
    };
    std::deque<CtrlPkt> ctrl_backlog_;
};

}  // namespace softnic::cxi

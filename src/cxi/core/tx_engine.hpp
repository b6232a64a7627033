// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The transmit engine of a context: posting sends and one-sided operations, pumping
// their packets into the peer's link, and completing them once transmitted, answered
// or acknowledged. It also sends the context's control packets (kDone, kGetReq...).
#pragma once

#include <rdma/fi_endpoint.h>

#include <deque>
#include <vector>

#include "cxi/core/rx_state.hpp"
#include "cxi/core/wire.hpp"
#include "cxi/prov/caps.hpp"
#include "transport/transport.hpp"

namespace softnic {
class Cntr;
class Mr;
}  // namespace softnic

namespace softnic::cxi {

class PidEngine;
class Domain;

// What a transmit operation is: its packets and its completion differ.
enum class OpKind : uint8_t {
    kSend,         // fi_send & co, fi_tsend & co
    kWrite,        // fi_write & co
    kRead,         // fi_read & co
    kReadResp,     // target side: data an initiator's read asked for (no completion)
    kAtomic,       // fi_atomic & co
    kFetchAtomic,  // fi_fetch_atomic & co, fi_compare_atomic & co
};

inline bool is_amo(OpKind k) {
    return k == OpKind::kAtomic || k == OpKind::kFetchAtomic;
}

// One-sided operations: the target MR's key and offset in it.
struct RemoteArgs {
    uint64_t key = 0, addr = 0;
    bool restricted = false;  // the hardware's restricted (light-weight) path
};

// Atomics: one element's comparand (or mask), where a fetched value goes, op and type.
struct AmoArgs {
    const void *compare = nullptr;
    void *result = nullptr;
    uint8_t op = 0, dt = 0;
};

// A triggered operation counts its completion on `cntr` (may be null) instead of the
// endpoint's counter.
struct TriggerArgs {
    bool active = false;
    Cntr *cntr = nullptr;
};

struct SendArgs {
    const void *buf;
    size_t len;
    fi_addr_t dest;
    uint64_t tag;
    uint64_t data;
    void *context;
    uint64_t flags;
    bool tagged;
    bool inject_call = false;  // fi_inject & co: never a completion entry
    OpKind kind = OpKind::kSend;
    RemoteArgs rma{};
    AmoArgs amo{};
    TriggerArgs trig{};
};

// Progress of the eager part: the header and the bytes that travel unasked.
struct EagerState {
    size_t len;   // bytes sent eagerly (all of them unless rendezvous)
    size_t sent;  // queued so far
    bool hdr_sent, rdzv, wait_done, done_seen;
};

// Data streamed on request (a receiver's kGetReq, a read's response, a write's payload).
struct StreamState {
    size_t off, end;
    uint64_t token;  // the link's token after the last packet sent without a copy
};

// Over a network link an operation completes once the peer acknowledged it.
struct AckState {
    bool awaiting;
    uint64_t token;  // the link's token for the last packet of this operation
    int err, prov_errno;
};

// FI_PROTO_CXI_RNR: a send retried while the receiver is not ready.
struct RnrState {
    bool ok;
    uint32_t tries;
    uint64_t start_us, due_us;  // first refusal; when to send again
};

struct TxOp {
    SendArgs a;
    transport::Link *link;
    uint64_t cookie;
    uint32_t gen;
    bool pending;  // in the FIFO of operations still to transmit
    EagerState eager;
    StreamState stream;
    AckState ack;
    RnrState rnr;
    size_t read_got;       // fi_read: bytes arrived
    uint64_t peer_cookie;  // kReadResp: the initiator's operation
    Mr *pinned;            // kReadResp: the MR being read, held until sent
    uint8_t inline_data[kInjectSize];
    TxOp *next, *prev;
};

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
    void fail_link(transport::Link *link, int err, int prov_errno);  // the peer is gone

    // Retries of refused sends (rnr.cpp).
    void rnr_backoff(TxOp *op);

    // Backlog, retries, the FIFO, acknowledgements. Inline: with nothing in flight (an
    // application waiting for a message) it costs a few loads.
    void progress() {
        bool reap_due = (++progress_calls_ & 4095) == 0;
        if (reap_due || !ctrl_backlog_.empty() || !rnr_waiting_.empty() || !pending_.empty() ||
            !awaiting_ack_.empty())
            progress_queues(reap_due);
    }
    size_t outstanding() const { return outstanding_; }
    bool busy() const { return outstanding_ || !ctrl_backlog_.empty(); }

  private:
    void enqueue(TxOp *op);
    bool try_fast_send(const SendArgs &a, transport::Link *link, int &err);
    uint64_t completion_level(uint64_t flags) const;
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
    TxOp *free_ = nullptr;
    TxOp *reply_free_ = nullptr;
    size_t outstanding_ = 0;
    List<TxOp> pending_;  // FIFO of operations still to (fully) transmit
    size_t pending_count_ = 0;
    bool holding_more_ = false;
    std::vector<TxOp *> awaiting_ack_;  // transmitted, waiting for the network to acknowledge
    std::vector<TxOp *> rnr_waiting_;   // refused by a receiver not ready: sent again when due
    unsigned eagain_streak_ = 0;        // full-ring refusals in a row: check the peer is alive
    unsigned progress_calls_ = 0;
    struct CtrlPkt {  // kDone/kGetReq/kAtomicResp/kColl to retry
        transport::Link *link;
        WireHdr h;
        uint8_t data[32];  // h.payload bytes: an atomic's previous value, a reduction
    };
    std::deque<CtrlPkt> ctrl_backlog_;
};

}  // namespace softnic::cxi

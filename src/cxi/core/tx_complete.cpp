// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Transmit engine, completion side: the receiver's or target's answer (kDone), the
// network's acknowledgement, and the failures of peers that went away. Each operation
// completes once, on the CQ and counter the endpoint bound for its kind.
#include <rdma/fi_cxi_ext.h>

#include <algorithm>

#include "common/hmem.hpp"
#include "common/log.hpp"
#include "cxi/core/pid_engine.hpp"
#include "cxi/core/tx_sent.hpp"
#include "cxi/obj/domain.hpp"

namespace softnic::cxi {

void TxEngine::on_done(const WireHdr &h) {
    TxOp *op = by_cookie(h.cookie);
    if (!op) {
        SN_DBG(FI_LOG_EP_DATA, "stale completion cookie %lx\n", h.cookie);
        domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
        return;
    }
    if (op->ack.awaiting) return;  // it asked for no kDone: a forged or stale one
    if ((h.flags & kWRnr) && op->rnr.ok && !op->pending) {  // receiver not ready: later
        rnr_backoff(op);
        return;
    }
    op->eager.done_seen = true;
    if (op->pending) return;  // still transmitting: completes when pumped out
    int err = h.flags & kWError ? FI_EIO : 0;
    int prov_errno = err ? C_RC_PT_DISABLED : 0;
    if (!op->link->acked(op->stream.token)) {  // streamed data still referenced: wait
        await_ack(op, op->stream.token, err, prov_errno);
        return;
    }
    complete(op, err, prov_errno);
}

// Sends over a network link complete once the peer acknowledged their last packet.
void TxEngine::check_acks() {
    awaiting_ack_.reap([this](TxOp *op) {
        op->ack.awaiting = false;
        complete(op, op->ack.err, op->ack.prov_errno);
    });
}

void TxEngine::await_ack(TxOp *op, uint64_t token, int err, int prov_errno) {
    op->ack = AckState{true, token, err, prov_errno};
    awaiting_ack_.wait(op, op->link, token);
}

void TxEngine::complete(TxOp *op, int err, int prov_errno) {
    SendArgs a = op->a;
    if (err)  // an application sees an error: the log says which peer and why
        SN_WARN(FI_LOG_EP_DATA, "operation %p (kind %d, %zu bytes) to %s failed: %s (%d)\n",
                a.context, int(a.kind), a.len, op->link ? op->link->describe().c_str() : "?",
                fi_strerror(err), prov_errno);
    if (op->pinned) op->pinned->refs().put();
    free(op);
    if (a.kind == OpKind::kReadResp) {  // the target's side of a read: nobody waits
        delete a.stage;
        return;
    }
    complete_send(a, err, prov_errno);
}

void TxEngine::complete_send(const SendArgs &a, int err, int prov_errno) {
    if (!err && a.kind == OpKind::kSend && !a.stage) return complete_sent(a);
    if (a.stage) {  // a device buffer's stand-in: a read's bytes go to the device first
        if (!err && a.kind == OpKind::kRead && a.stage->land(a.len)) err = FI_EIO;
        delete a.stage;
    }
    const CompletionBind &b = engine_.tx_bind();
    uint64_t flags = (a.tagged ? FI_TAGGED : FI_MSG) | FI_SEND;
    Cntr *cntr = b.cntr;
    if (a.kind != OpKind::kSend) {  // one-sided: fetching atomics count as reads
        bool w = a.kind == OpKind::kWrite || a.kind == OpKind::kAtomic;
        flags = (is_amo(a.kind) ? FI_ATOMIC : FI_RMA) | (w ? FI_WRITE : FI_READ);
        cntr = w ? b.write_cntr : b.read_cntr;
    }
    if (a.trig.active) cntr = a.trig.cntr;
    if (!err) {
        if (a.rma.restricted && (a.flags & FI_CXI_HRP)) domain_.count(C_CNTR_HNI_HRP_ACK);
        if (cntr) cntr->inc(cntr->counts_bytes() ? a.len : 1);
        if (a.inject_call || (b.selective && !(a.flags & FI_COMPLETION))) return;
        if (b.cq) b.cq->push(Completion{a.context, flags, 0, nullptr, 0, 0, FI_ADDR_NOTAVAIL});
        return;
    }
    if (cntr) cntr->inc_err();
    if (!b.cq) return;
    ErrorCompletion e;
    e.entry.op_context = a.context;
    e.entry.flags = flags;
    e.entry.err = err;
    e.entry.prov_errno = prov_errno;
    b.cq->push_error(e);
}

// The peer is gone: everything addressed to it fails instead of waiting forever.
void TxEngine::fail_link(transport::Link *link, int err, int prov_errno) {
    awaiting_ack_.drop(link);  // each completes below, with the pool's other operations
    std::erase_if(rnr_waiting_, [link](TxOp *op) { return op->link == link; });
    std::erase_if(ctrl_backlog_, [link](const CtrlPkt &c) { return c.link == link; });
    for (auto &op : pool_) {
        if (op.link != link || by_cookie(op.cookie) != &op) continue;
        if (op.pending) {
            pending_.remove(&op);
            pending_count_--;
            op.pending = false;
        }
        op.ack.awaiting = false;
        complete(&op, err, prov_errno);
    }
    domain_.peers().forget(link);
    if (Av *av = engine_.av()) av->forget_peer(link);  // cached routes must be re-resolved
}

// Sends waiting for a kDone from a peer that went away complete with an error.
void TxEngine::reap_dead_peers() {
    for (auto &op : pool_) {
        if (by_cookie(op.cookie) != &op || op.pending || !op.link) continue;
        if (!op.link->alive() || op.link->peer_dead())
            fail_link(op.link, FI_EHOSTUNREACH, C_RC_UNDELIVERABLE);
    }
}

}  // namespace softnic::cxi

// Transmit engine: eager sends straight into the peer's queue when they fit, otherwise a
// FIFO of operations pumped by progress; rendezvous sends wait for the receiver's kDone.
#include <rdma/fi_cxi_ext.h>

#include <cstring>

#include "common/log.hpp"
#include "cxi/context.hpp"
#include "cxi/domain.hpp"
#include "cxi/env.hpp"

namespace softnic::cxi {

void Context::fill_hdr(WireHdr &h, Pkt type, const SendArgs &a, const transport::Link *link) const {
    h = wire_hdr(type, vni_of(link), pid_, domain_.nic().addr);
    h.flags = (a.tagged ? kWTagged : 0) | ((a.flags & FI_REMOTE_CQ_DATA) ? kWCqData : 0);
    h.msg_len = a.len;
    h.eager_len = a.len;
    h.tag = a.tag;
    h.cq_data = a.data;
    h.rdzv_addr = reinterpret_cast<uint64_t>(a.buf);
}

// Transmit-complete is the default; delivery and match complete wait for the receiver.
uint64_t Context::completion_level(uint64_t flags) const {
    uint64_t lv = flags & kCompletionLevels;
    if (lv & FI_TRANSMIT_COMPLETE || lv & FI_INJECT_COMPLETE || !lv) return FI_TRANSMIT_COMPLETE;
    return lv & FI_MATCH_COMPLETE ? FI_MATCH_COMPLETE : FI_DELIVERY_COMPLETE;
}

// The common case: one packet straight into the peer's ring. err = -FI_EAGAIN when the
// message would have gone this way but the ring is full.
bool Context::try_fast_send(const SendArgs &a, transport::Link *link, int &err) {
    err = 0;
    if (rnr_ || a.kind != OpKind::kSend || !pending_.empty() || (a.flags & FI_MORE) ||
        a.len > env().eager_max())
        return false;
    if (a.len + sizeof(WireHdr) > link->max_packet()) return false;
    if (completion_level(a.flags) != FI_TRANSMIT_COMPLETE) return false;
    if (link->completes_on_ack()) return false;  // tracked until the peer acknowledges
    WireHdr h;
    fill_hdr(h, Pkt::kMsg, a, link);
    h.payload = static_cast<uint32_t>(a.len);
    iovec iov{const_cast<void *>(a.buf), a.len};
    if (!link->send(&h, sizeof(h), &iov, a.len ? 1 : 0)) {
        err = -FI_EAGAIN;
        return false;
    }
    domain_.count(C_CNTR_IXE_RX_PTL_UNRESTRICTED_PKT);
    complete_send(a, 0, 0);
    return true;
}

ssize_t Context::send(const SendArgs &a) {
    if (TriggeredIssue t = take_triggered_issue(); t.active) {  // once: the record is taken
        SendArgs b = a;
        b.triggered = true;
        b.trig_cntr = t.cntr;
        return send(b);
    }
    SpinGuard g(lock_);
    int err = 0;
    transport::Link *link = route(a.dest, err);
    if (!link) {
        if (err == -FI_EINVAL)
            SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "fi_addr %lu is not in the AV\n", a.dest);
        if (err == -FI_EHOSTUNREACH)  // no route to that NIC
            complete_send(a, FI_EHOSTUNREACH, C_RC_UNDELIVERABLE);
        else  // the NIC is here, but nobody listens at that PID
            complete_send(a, FI_EIO, C_RC_PTLTE_NOT_FOUND);
        return 0;
    }
    if (try_fast_send(a, link, err) || rma_single_copy(a, link)) {
        eagain_streak_ = 0;
        return 0;
    }
    if (err == -FI_EAGAIN) {  // the caller progresses and retries, as with a full NIC queue
        if ((++eagain_streak_ & 1023) == 0 && link->peer_dead())
            fail_link(link, FI_EHOSTUNREACH, C_RC_UNDELIVERABLE);
        return -FI_EAGAIN;
    }
    TxOp *op = alloc_tx();
    if (!op) return -FI_EAGAIN;
    op->a = a;
    op->link = link;
    if (is_amo(a.kind)) {
        stage_amo(op);
    } else if ((a.flags & FI_INJECT) && a.len) {  // the caller may reuse its buffer on return
        std::memcpy(op->inline_data, a.buf, a.len);
        op->a.buf = op->inline_data;
    }
    // An RNR send is one packet, the rest pulled after the match: a refusal wastes no more.
    op->rnr_ok = rnr_ && a.kind == OpKind::kSend;
    const size_t one_packet = link->max_packet() - sizeof(WireHdr);
    bool rdzv = a.kind == OpKind::kSend &&
                (a.len > env().eager_max() || (op->rnr_ok && a.len > one_packet));
    op->rdzv = rdzv;
    op->eager_len =
        rdzv ? (env().rdzv_offload ? std::min(env().rdzv_eager_size, a.len) : a.len) : a.len;
    if (op->rnr_ok) op->eager_len = std::min(a.len, one_packet);
    // One-sided operations complete on the target's answer (delivery complete).
    op->wait_done = rdzv || op->rnr_ok || a.kind != OpKind::kSend ||
                    completion_level(a.flags) != FI_TRANSMIT_COMPLETE;
    op->pending = true;
    pending_.push_back(op);
    pending_count_++;
    holding_more_ = a.flags & FI_MORE;
    if (!holding_more_) pump_pending();
    work_hint_.store(true, std::memory_order_relaxed);  // the offload helper may finish it
    return 0;
}

TxOp *Context::alloc_tx() {
    TxOp *op = tx_free_;
    if (!op) return nullptr;
    tx_free_ = op->next;
    uint32_t gen = op->gen + 1;
    *op = TxOp{};
    op->gen = gen;
    op->cookie = (uint64_t(gen) << 32) | uint64_t(op - tx_pool_.data());
    tx_outstanding_++;
    return op;
}

void Context::free_tx(TxOp *op) {
    op->gen++;  // stale cookies no longer resolve
    op->next = tx_free_;
    tx_free_ = op;
    tx_outstanding_--;
}

TxOp *Context::tx_by_cookie(uint64_t cookie) {
    size_t i = cookie & 0xffffffffULL;
    if (i >= tx_pool_.size()) return nullptr;
    TxOp *op = &tx_pool_[i];
    // alloc_tx and free_tx each bump the generation: live operations have odd ones, so
    // a forged cookie cannot name a slot that was never used (generation 0).
    bool live = op->gen & 1;
    return live && op->cookie == cookie && op->gen == uint32_t(cookie >> 32) ? op : nullptr;
}

// Queue as many packets of `op` as the peer accepts. True when nothing is left to send.
bool Context::pump(TxOp *op) {
    if (is_amo(op->a.kind)) return pump_amo(op);
    if (op->a.kind != OpKind::kSend) return pump_rma(op);
    transport::Link *link = op->link;
    const size_t room = link->max_packet() - sizeof(WireHdr);
    const auto *base = static_cast<const uint8_t *>(op->a.buf);
    WireHdr h;
    fill_hdr(h, Pkt::kMsg, op->a, link);
    h.cookie = op->cookie;
    h.eager_len = op->eager_len;
    h.flags |= (op->rdzv ? kWRdzv : 0) | (op->wait_done && !op->rdzv ? kWAckReq : 0) |
               (op->rdzv && op->eager_len == op->a.len ? kWWhole : 0) | (op->rnr_ok ? kWRnrOk : 0);
    while (!op->hdr_sent || op->sent < op->eager_len) {
        size_t n = std::min(room, op->eager_len - op->sent);
        if (op->hdr_sent) {
            h.type = static_cast<uint8_t>(Pkt::kData);
            h.offset = op->sent;
        }
        h.payload = static_cast<uint32_t>(n);
        iovec iov{const_cast<uint8_t *>(base + op->sent), n};
        if (!link->send(&h, sizeof(h), &iov, n ? 1 : 0, op->sent + n < op->eager_len)) return false;
        domain_.count(C_CNTR_IXE_RX_PTL_UNRESTRICTED_PKT);
        op->hdr_sent = true;
        op->sent += n;
    }
    h.type = static_cast<uint8_t>(Pkt::kData);
    h.flags |= kWPulled;
    while (op->stream_off < op->stream_end) {  // data the receiver asked for with kGetReq
        size_t n = std::min(room, op->stream_end - op->stream_off);
        h.offset = op->stream_off;
        h.payload = static_cast<uint32_t>(n);
        bool more = op->stream_off + n < op->stream_end;  // the stream leaves in batches
        // The buffer stays ours until the data is acknowledged (on_done waits for that),
        // so the transport may send it without a copy.
        if (!link->send_stable(&h, sizeof(h), base + op->stream_off, n, more)) return false;
        op->stream_off += n;
        op->stream_token = link->last_token();
    }
    return true;
}

// Operations to one peer in a row (an FI_MORE batch) leave in one batched send.
void Context::pump_pending() {
    transport::Link *batch = nullptr;
    pump_ops(batch);
    if (batch) batch->flush();
}

void Context::pump_ops(transport::Link *&batch) {
    while (TxOp *op = pending_.head) {
        // A fence waits until every earlier operation has completed.
        if ((op->a.flags & FI_FENCE) && tx_outstanding_ > pending_count_) return;
        if (batch && batch != op->link) batch->flush();
        batch = op->link;
        if (!pump(op)) {
            if (!op->link->alive() || op->link->peer_dead()) {
                fail_link(op->link, FI_EHOSTUNREACH, C_RC_UNDELIVERABLE);
                batch = nullptr;  // links of dead peers may be gone
            }
            return;
        }
        pending_.remove(op);
        pending_count_--;
        op->pending = false;
        if (op->a.kind == OpKind::kReadResp) {  // copied out: nothing refers to the MR now
            complete_tx(op, 0, 0);
            continue;
        }
        if (op->wait_done && !op->done_seen) continue;
        if (op->link->completes_on_ack() && !op->link->acked(op->link->last_token())) {
            await_ack(op, op->link->last_token(), 0, 0);
            continue;
        }
        complete_tx(op, 0, 0);
    }
}

void Context::on_done(const WireHdr &h) {
    TxOp *op = tx_by_cookie(h.cookie);
    if (!op) {
        SN_DBG(FI_LOG_EP_DATA, "stale completion cookie %lx\n", h.cookie);
        domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
        return;
    }
    if (op->awaiting_ack) return;  // it asked for no kDone: a forged or stale one
    if ((h.flags & kWRnr) && op->rnr_ok && !op->pending) {  // receiver not ready: later
        rnr_backoff(op);
        return;
    }
    op->done_seen = true;
    if (op->pending) return;  // still transmitting: completes when pumped out
    int err = h.flags & kWError ? FI_EIO : 0;
    int prov_errno = err ? C_RC_PT_DISABLED : 0;
    if (!op->link->acked(op->stream_token)) {  // streamed data still referenced: wait
        await_ack(op, op->stream_token, err, prov_errno);
        return;
    }
    complete_tx(op, err, prov_errno);
}

void Context::complete_tx(TxOp *op, int err, int prov_errno) {
    SendArgs a = op->a;
    if (op->pinned) op->pinned->refs().put();
    free_tx(op);
    if (a.kind == OpKind::kReadResp) return;  // the target's side of a read: nobody waits
    complete_send(a, err, prov_errno);
}

void Context::complete_send(const SendArgs &a, int err, int prov_errno) {
    uint64_t flags = (a.tagged ? FI_TAGGED : FI_MSG) | FI_SEND;
    Cntr *cntr = tx_.cntr;
    if (a.kind != OpKind::kSend) {  // one-sided: fetching atomics count as reads
        bool w = a.kind == OpKind::kWrite || a.kind == OpKind::kAtomic;
        flags = (is_amo(a.kind) ? FI_ATOMIC : FI_RMA) | (w ? FI_WRITE : FI_READ);
        cntr = w ? tx_.write_cntr : tx_.read_cntr;
    }
    if (a.triggered) cntr = a.trig_cntr;
    if (!err) {
        if (a.restricted && (a.flags & FI_CXI_HRP)) domain_.count(C_CNTR_HNI_HRP_ACK);
        if (cntr) cntr->inc(cntr->counts_bytes() ? a.len : 1);
        if (a.inject_call || (tx_.selective && !(a.flags & FI_COMPLETION))) return;
        if (tx_.cq) tx_.cq->push(Completion{a.context, flags, 0, nullptr, 0, 0, FI_ADDR_NOTAVAIL});
        return;
    }
    if (cntr) cntr->inc_err();
    if (!tx_.cq) return;
    ErrorCompletion e;
    e.entry.op_context = a.context;
    e.entry.flags = flags;
    e.entry.err = err;
    e.entry.prov_errno = prov_errno;
    tx_.cq->push_error(e);
}

}  // namespace softnic::cxi

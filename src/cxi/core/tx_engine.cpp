// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Transmit engine, posting side: eager sends straight into the peer's queue when they
// fit, otherwise a FIFO of operations pumped by progress; rendezvous sends wait for the
// receiver's kDone (tx_complete.cpp).
#include <rdma/fi_cxi_ext.h>

#include <cstring>
#include <new>

#include "common/log.hpp"
#include "cxi/core/pid_engine.hpp"
#include "cxi/core/tx_sent.hpp"
#include "cxi/obj/domain.hpp"
#include "cxi/prov/env.hpp"
#include "transport/msg/segments.hpp"

namespace softnic::cxi {

TxEngine::TxEngine(PidEngine &engine, size_t tx_size)
    : engine_(engine),
      domain_(engine.domain()),
      pool_((tx_size ? tx_size : 1) + kReplySlots),
      app_slots_(pool_.size() - kReplySlots),
      eager_max_(env().eager_max()) {
    for (size_t i = pool_.size(); i-- > 0;) {
        TxOp *&list = i < app_slots_ ? free_ : reply_free_;
        pool_[i].next = list;
        list = &pool_[i];
    }
    awaiting_ack_.reserve(pool_.size());
}

// The flags an operation's packets carry in either header format.
static uint16_t op_flags(const SendArgs &a) {
    return (a.tagged ? kWTagged : 0) | ((a.flags & FI_REMOTE_CQ_DATA) ? kWCqData : 0);
}

void TxEngine::fill_hdr(WireHdr &h, Pkt type, const SendArgs &a,
                        const transport::Link *link) const {
    h = wire_hdr(type, engine_.links().vni_of(link), engine_.pid(), domain_.nic().addr);
    h.flags = op_flags(a);
    h.msg_len = a.len;
    h.eager_len = a.len;
    h.tag = a.tag;
    h.cq_data = a.data;
    h.rdzv_addr = reinterpret_cast<uint64_t>(a.buf);
}

// Transmit-complete is the default; delivery and match complete wait for the receiver.
uint64_t TxEngine::completion_level(uint64_t flags) const {
    uint64_t lv = flags & kCompletionLevels;
    if (lv & FI_TRANSMIT_COMPLETE || lv & FI_INJECT_COMPLETE || !lv) return FI_TRANSMIT_COMPLETE;
    return lv & FI_MATCH_COMPLETE ? FI_MATCH_COMPLETE : FI_DELIVERY_COMPLETE;
}

// A plain send's flags pass in one test; only others are looked at closely. A batch
// (FI_MORE) and a fence (it waits for every earlier operation: pump_ops) take the queue.
inline bool TxEngine::plain_completion(uint64_t flags) const {
    constexpr uint64_t kNotPlain = FI_MORE | FI_FENCE | FI_DELIVERY_COMPLETE | FI_MATCH_COMPLETE;
    return !(flags & kNotPlain) ||
           (!(flags & (FI_MORE | FI_FENCE)) && completion_level(flags) == FI_TRANSMIT_COMPLETE);
}

// The one-packet message in kSmall's compact header; false when the peer's queue is full.
// Field by field: building it from a returned prefix measured 7 % fewer exchanges a
// second (fi_pingpong 8 B within a host).
[[gnu::always_inline]] inline bool TxEngine::send_small(const SendArgs &a, transport::Link *link) {
    SmallHdr h;
    h.type = static_cast<uint8_t>(Pkt::kSmall);
    h.version = kWireVersion;
    h.flags = op_flags(a);
    h.vni = engine_.links().vni_of(link);
    h.src_pid = static_cast<uint16_t>(engine_.pid());
    h.src_nic = domain_.nic().addr;
    h.payload = static_cast<uint32_t>(a.len);
    h.tag = a.tag;
    h.cq_data = a.data;
    iovec iov{const_cast<void *>(a.buf), a.len};
    if (++sends_unanswered_ > 1) link->expect_more();
    return link->send(&h, small_hdr_len(h.flags), &iov, a.len ? 1 : 0);
}

// The common case: one packet straight into the peer's ring. err = -FI_EAGAIN when the
// message would have gone this way but the ring is full.
bool TxEngine::try_fast_send(const SendArgs &a, transport::Link *link, int &err) {
    err = 0;
    if (engine_.rnr() || a.kind != OpKind::kSend || !pending_.empty() || a.len > eager_max_)
        return false;
    // Links that complete on acknowledgement offer no room here: try_acked_send.
    if (a.len + sizeof(WireHdr) > link->queued_complete_max()) [[unlikely]]
        return a.mem.host() && try_acked_send(a, link);
    if (!plain_completion(a.flags)) return false;
    if (!send_small(a, link)) {
        err = -FI_EAGAIN;
        return false;
    }
    domain_.count(C_CNTR_IXE_RX_PTL_UNRESTRICTED_PKT);
    if (a.stage) [[unlikely]]
        complete_send(a, 0, 0);
    else
        complete_sent(a);
    return true;
}

// The same packet over a network link (UDP), where the send completes once the peer
// acknowledged it: an operation slot waits for that, but none of the queue's pumping.
// A full window queues the send as before (false).
[[gnu::noinline]] bool TxEngine::try_acked_send(const SendArgs &a, transport::Link *link) {
    if (a.len + sizeof(WireHdr) > link->acked_complete_max() || a.stage ||
        !plain_completion(a.flags))
        return false;
    TxOp *op = alloc();
    if (!op) return false;
    if (!send_small(a, link)) {
        free(op);
        return false;
    }
    domain_.count(C_CNTR_IXE_RX_PTL_UNRESTRICTED_PKT);
    op->a = a;
    op->link = link;
    await_ack(op, link->last_token(), 0, 0);
    engine_.note_work();  // the offload helper may take the acknowledgement
    return true;
}

// A device buffer handed over unstaged (obj/ep_hmem.cpp): a receiver on this host copies
// it device to device (CUDA IPC, the allocation's handle in our operation for it to read);
// elsewhere it is staged through host memory here.
ssize_t TxEngine::send_device(SendArgs a, transport::Link *link) {
    hmem::IpcRef ref;
    bool ipc = link->shared_memory() && link->bulk() && !engine_.rnr() &&
               hmem::ipc_export(a.buf, a.len, a.mem.device, ref) == 0;
    if (!ipc) {
        int err = 0;
        a.stage = hmem::Staging::outbound(a.buf, a.len, a.mem.device, err);
        if (!a.stage) return err;
        a.buf = a.stage->host();
        a.mem = {};
        ssize_t ret = send(a);
        if (ret) delete a.stage;  // the caller posts it again, unstaged
        return ret;
    }
    TxOp *op = alloc();
    if (!op) return -FI_EAGAIN;
    op->a = a;
    op->link = link;
    static_assert(sizeof(ref) <= sizeof(op->inline_data));
    std::memcpy(op->inline_data, &ref, sizeof(ref));
    op->eager = EagerState{0, 0, false, true, true, false, true};  // nothing eager: pulled
    post(op);
    return 0;
}

ssize_t TxEngine::send(const SendArgs &a) {
    int err = 0;
    transport::Link *link = engine_.links().route(a.dest, err);
    if (link && try_fast_send(a, link, err)) [[likely]]
        return 0;
    return send_queued(a, link, err);
}

// Everything but the one-packet send, out of line: that path saves no registers for it.
[[gnu::noinline]] ssize_t TxEngine::send_queued(const SendArgs &a, transport::Link *link, int err) {
    if (!link) {
        if (err == -FI_EINVAL)
            SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "fi_addr %lu is not in the AV\n", a.dest);
        if (err == -FI_EHOSTUNREACH)  // no route to that NIC
            complete_send(a, FI_EHOSTUNREACH, C_RC_UNDELIVERABLE);
        else  // the NIC is here, but nobody listens at that PID
            complete_send(a, FI_EIO, C_RC_PTLTE_NOT_FOUND);
        return 0;
    }
    if (engine_.one_sided().single_copy(a, link)) {
        eagain_streak_ = 0;
        return 0;
    }
    // Device memory is never one packet (64 KiB and more) nor one-sided: checked here,
    // off the one-packet path.
    if (!a.mem.host()) return send_device(a, link);
    if (err == -FI_EAGAIN) {  // the caller progresses and retries, as with a full NIC queue
        if ((++eagain_streak_ & 1023) != 0 || !link->peer_dead()) return -FI_EAGAIN;
        // A dead process's ring stays full: this send fails too, or the caller would
        // retry it forever.
        fail_link(link, FI_EHOSTUNREACH, C_RC_UNDELIVERABLE);
        complete_send(a, FI_EHOSTUNREACH, C_RC_UNDELIVERABLE);
        return 0;
    }
    TxOp *op = alloc();
    if (!op) return -FI_EAGAIN;
    op->a = a;
    op->link = link;
    if (is_amo(a.kind)) {
        engine_.one_sided().stage_amo(op);
    } else if ((a.flags & FI_INJECT) && a.len) {  // the caller may reuse its buffer on return
        std::memcpy(op->inline_data, a.buf, a.len);
        op->a.buf = op->inline_data;
    }
    // An RNR send is one packet, the rest pulled after the match: a refusal wastes no more.
    op->rnr.ok = engine_.rnr() && a.kind == OpKind::kSend;
    const size_t one_packet = link->max_packet() - sizeof(WireHdr);
    bool rdzv = a.kind == OpKind::kSend &&
                (a.len > env().eager_max() || (op->rnr.ok && a.len > one_packet));
    // Within a host a rendezvous message streams whole through the ring, up to a size:
    // two copies that overlap beat the receiver's one process_vm_readv (which pins the
    // sender's pages first) when the sender just wrote its data, as applications do.
    const bool whole =
        !env().rdzv_offload || (link->shared_memory() && a.len <= env().shm_stream_max);
    EagerState &e = op->eager;
    e.rdzv = rdzv;
    e.len = rdzv && !whole ? std::min(env().rdzv_eager_size, a.len) : a.len;
    if (op->rnr.ok) e.len = std::min(a.len, one_packet);
    // One-sided operations complete on the target's answer (delivery complete).
    e.wait_done = rdzv || op->rnr.ok || a.kind != OpKind::kSend ||
                  completion_level(a.flags) != FI_TRANSMIT_COMPLETE;
    post(op);
    return 0;
}

// A new operation into the FIFO: pumped now unless FI_MORE holds the batch.
void TxEngine::post(TxOp *op) {
    enqueue(op);
    holding_more_ = op->a.flags & FI_MORE;
    if (!holding_more_) pump_pending();
    engine_.note_work();  // the offload helper may finish it
}

void TxEngine::enqueue(TxOp *op) {
    if (op->pending) return;
    op->pending = true;
    pending_.push_back(op);
    pending_count_++;
}

void TxEngine::submit(TxOp *op) {
    enqueue(op);
    if (!holding_more_) pump_pending();
}

// Slots are taken from one of two free lists; alloc and free each bump the generation.
static TxOp *take(TxOp *&list, const TxOp *base) {
    TxOp *op = list;
    if (!op) return nullptr;
    list = op->next;
    uint32_t gen = op->gen + 1;
    new (op) TxOp;  // default-initialised: inline_data is left as it was
    op->gen = gen;
    op->cookie = (uint64_t(gen) << 32) | uint64_t(op - base);
    return op;
}

TxOp *TxEngine::alloc() {
    TxOp *op = take(free_, pool_.data());
    outstanding_ += op != nullptr;
    return op;
}

TxOp *TxEngine::alloc_reply() {
    TxOp *op = take(reply_free_, pool_.data());
    outstanding_ += op != nullptr;
    return op;
}

void TxEngine::free(TxOp *op) {
    op->gen++;  // stale cookies no longer resolve
    TxOp *&list = size_t(op - pool_.data()) < app_slots_ ? free_ : reply_free_;
    op->next = list;
    list = op;
    outstanding_--;
}

TxOp *TxEngine::by_cookie(uint64_t cookie) {
    size_t i = cookie & 0xffffffffULL;
    if (i >= pool_.size()) return nullptr;
    TxOp *op = &pool_[i];
    // alloc and free each bump the generation: live operations have odd ones, so a
    // forged cookie cannot name a slot that was never used (generation 0).
    bool live = op->gen & 1;
    return live && op->cookie == cookie && op->gen == uint32_t(cookie >> 32) ? op : nullptr;
}

// Queue as many packets of `op` as the peer accepts. True when nothing is left to send.
bool TxEngine::pump(TxOp *op) {
    if (is_amo(op->a.kind)) return engine_.one_sided().pump_amo(op);
    if (op->a.kind != OpKind::kSend) return engine_.one_sided().pump_rma(op);
    return pump_msg(op);
}

bool TxEngine::pump_msg(TxOp *op) {
    transport::Link *link = op->link;
    const size_t room = link->max_packet() - sizeof(WireHdr);
    const auto *base = static_cast<const uint8_t *>(op->a.buf);
    EagerState &e = op->eager;
    WireHdr h;
    fill_hdr(h, Pkt::kMsg, op->a, link);
    if (e.ipc) {  // the receiver reads the export from our memory, then the device's bytes
        h.flags |= kWIpc;
        h.rdzv_addr = reinterpret_cast<uint64_t>(op->inline_data);
    }
    h.cookie = op->cookie;
    h.eager_len = e.len;
    h.flags |= (e.rdzv ? kWRdzv : 0) | (e.wait_done && !e.rdzv ? kWAckReq : 0) |
               (e.rdzv && e.len == op->a.len ? kWWhole : 0) | (op->rnr.ok ? kWRnrOk : 0);
    auto eager = [&](size_t off, size_t n, bool more) {
        if (e.hdr_sent) {  // the first packet is the header (kMsg), the rest kData
            h.type = static_cast<uint8_t>(Pkt::kData);
            h.offset = off;
        }
        h.payload = static_cast<uint32_t>(n);
        iovec iov{const_cast<uint8_t *>(base + off), n};
        if (!link->send(&h, sizeof(h), &iov, n ? 1 : 0, more)) return false;
        domain_.count(C_CNTR_IXE_RX_PTL_UNRESTRICTED_PKT);
        e.hdr_sent = true;
        return true;
    };
    if (!e.hdr_sent) {  // sent even for an empty message
        const size_t n = std::min(room, e.len);
        if (!eager(0, n, n < e.len)) return false;
        e.sent = n;
    }
    if (!transport::msg::cut(e.sent, e.len, room, eager)) return false;
    h.type = static_cast<uint8_t>(Pkt::kData);
    h.flags |= kWPulled;
    StreamState &s = op->stream;
    // Data the receiver asked for with kGetReq. The buffer stays ours until the data is
    // acknowledged (on_done waits for that), so the transport may send it without a copy.
    return transport::msg::cut(s.off, s.end, room, [&](size_t off, size_t n, bool more) {
        h.offset = off;
        h.payload = static_cast<uint32_t>(n);
        if (!link->send_stable(&h, sizeof(h), base + off, n, more)) return false;
        s.token = link->last_token();
        return true;
    });
}

// Operations to one peer in a row (an FI_MORE batch) leave in one batched send.
void TxEngine::pump_pending() {
    transport::Link *batch = nullptr;
    pump_ops(batch);
    if (batch) batch->flush();
}

void TxEngine::pump_ops(transport::Link *&batch) {
    while (TxOp *op = pending_.head) {
        // A fence waits until every earlier operation has completed.
        if ((op->a.flags & FI_FENCE) && outstanding_ > pending_count_) return;
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
            complete(op, 0, 0);
            continue;
        }
        if (op->eager.wait_done && !op->eager.done_seen) continue;
        if (op->link->completes_on_ack() && !op->link->acked(op->link->last_token())) {
            await_ack(op, op->link->last_token(), 0, 0);
            continue;
        }
        complete(op, 0, 0);
    }
}

// Rendezvous, the sender's side: stream what the receiver could not read itself.
void TxEngine::on_get_req(const WireHdr &h) {
    TxOp *op = by_cookie(h.cookie);
    if (!op || !op->eager.rdzv || h.offset > op->a.len || h.msg_len > op->a.len - h.offset) {
        SN_WARN(FI_LOG_EP_DATA, "dropping invalid rendezvous request\n");
        domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
        return;
    }
    if (op->eager.ipc && !op->a.stage) {  // the receiver could not map our device memory
        int err = 0;
        op->a.stage = hmem::Staging::outbound(op->a.buf, op->a.len, op->a.mem.device, err);
        if (!op->a.stage) {
            complete(op, FI_EIO, 0);
            return;
        }
        op->a.buf = op->a.stage->host();
    }
    op->stream.off = h.offset;
    op->stream.end = h.offset + h.msg_len;
    submit(op);
}

void TxEngine::send_ctrl(transport::Link *link, const WireHdr &h, const void *data) {
    if (!link) return;
    if (ctrl_backlog_.empty() && send_packet(link, h, data)) return;
    CtrlPkt &c = ctrl_backlog_.emplace_back(CtrlPkt{link, h, {}});  // retried by progress
    if (h.payload && data) std::memcpy(c.data, data, std::min<size_t>(h.payload, sizeof(c.data)));
}

void TxEngine::flush_ctrl() {
    while (!ctrl_backlog_.empty()) {
        CtrlPkt &c = ctrl_backlog_.front();
        if (!send_packet(c.link, c.h, c.data)) break;
        ctrl_backlog_.pop_front();
    }
}

// A control packet on the wire: a collective's packet that carries no reduction error
// goes in kCollSmall's compact header (one cache line within a host), the rest as is.
bool TxEngine::send_packet(transport::Link *link, const WireHdr &h, const void *data) {
    iovec iov{const_cast<void *>(data), h.payload};
    if (h.type == static_cast<uint8_t>(Pkt::kColl) && !h.rdzv_addr && h.msg_len == h.payload) {
        CollHdr c;
        static_cast<WirePrefix &>(c) = h;
        c.type = static_cast<uint8_t>(Pkt::kCollSmall);
        c.key = h.tag;
        c.shape = h.cq_data;
        c.seq = static_cast<uint32_t>(h.cookie);
        c.rank = static_cast<uint32_t>(h.offset);
        return link->send(&c, sizeof(c), &iov, h.payload ? 1 : 0);
    }
    return link->send(&h, sizeof(h), &iov, h.payload ? 1 : 0);
}

void TxEngine::progress_queues(bool reap_due) {
    flush_ctrl();
    if (!rnr_waiting_.empty()) rnr_resend_due();
    if (!pending_.empty() && !holding_more_) pump_pending();
    if (!awaiting_ack_.empty()) check_acks();
    if (reap_due && outstanding_ > pending_count_) reap_dead_peers();
}

}  // namespace softnic::cxi

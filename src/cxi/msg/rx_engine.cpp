// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Receive engine, arrival side: matching against posted receives (FIFO, tagged and
// untagged apart), multi-receive buffers, truncation and receive completions.
#include <rdma/fi_cxi_ext.h>

#include <cstring>

#include "common/hmem.hpp"
#include "common/log.hpp"
#include "common/short_copy.hpp"
#include "cxi/core/pid_engine.hpp"
#include "cxi/obj/domain.hpp"
#include "cxi/prov/env.hpp"
#include "transport/msg/segments.hpp"

namespace softnic::cxi {
namespace {

bool header_sane(const WireHdr &h) {
    bool rdzv = h.flags & kWRdzv;
    return h.msg_len <= kMaxMsgSize && h.eager_len <= h.msg_len && h.payload <= h.eager_len &&
           (rdzv || h.eager_len == h.msg_len) && (h.tag & ~kTagMask) == 0;
}

}  // namespace

bool RxMsg::tagged() const {
    return wflags & kWTagged;
}

RxEngine::RxEngine(PidEngine &engine) : engine_(engine), domain_(engine.domain()) {}

[[gnu::always_inline]] inline fi_addr_t RxEngine::cached_source(uint64_t key, bool &known) {
    Av *av = engine_.av();
    if (!av) {
        known = false;
        return FI_ADDR_NOTAVAIL;
    }
    SrcCacheEntry &c = src_cache_[(key * 0x9e3779b97f4a7c15ULL) >> 58];
    uint64_t gen = av->generation();
    if (c.key != key || c.gen != gen) c = SrcCacheEntry{key, gen, av->reverse(key)};
    known = c.addr != FI_ADDR_NOTAVAIL;
    return c.addr;
}

fi_addr_t RxEngine::source_of(uint64_t key, bool &known) {
    return cached_source(key, known);
}

// An arriving message's sender, when something asks for it: a directed receive's match,
// FI_SOURCE's completions, FI_SOURCE_ERR. Otherwise none is looked up and completions
// carry FI_ADDR_NOTAVAIL, as upstream's do without FI_SOURCE.
[[gnu::always_inline]] inline fi_addr_t RxEngine::arriving_source(uint64_t key, bool &known) {
    if (!(engine_.caps() & (FI_SOURCE | FI_SOURCE_ERR | FI_DIRECTED_RECV))) {
        known = true;  // nothing to look up again at a later match (rx_unexpected.cpp)
        return FI_ADDR_NOTAVAIL;
    }
    return cached_source(key, known);
}

bool RxEngine::recv_matches(const RecvOp &r, bool tagged, uint64_t tag, fi_addr_t src) const {
    if (r.tagged != tagged) return false;
    if (tagged && ((r.tag ^ tag) & ~r.ignore & kTagMask)) return false;
    if ((engine_.caps() & FI_DIRECTED_RECV) && r.src != FI_ADDR_UNSPEC && r.src != src)
        return false;
    return true;
}

[[gnu::always_inline]] inline RecvOp *RxEngine::match_posted(bool tagged, uint64_t tag,
                                                             fi_addr_t src) {
    List<RecvOp> &list = posted_[tagged];
    for (RecvOp *op = list.head; op; op = op->next)
        if (recv_matches(*op, tagged, tag, src)) return op;
    return nullptr;
}

// Point the message at the receive buffer (or the next slice of a multi-receive buffer).
// Non-multi receives are unlinked from the posted list here.
void RxEngine::bind_receive(RxMsg *m, RecvOp *op, bool listed) {
    m->op = op;
    uint8_t *dst = op->buf;
    size_t cap = op->len;
    if (op->flags & FI_MULTI_RECV) {
        dst += op->used;
        cap -= op->used;
        op->used += std::min(cap, m->msg_len);
        op->inflight++;
        if (op->len - op->used < min_multi_recv_ && !op->unlinked) {
            posted_[0].remove(op);
            op->unlinked = true;
        }
    } else if (listed) {
        posted_[op->tagged].remove(op);
    }
    m->want = std::min(cap, m->msg_len);
    m->dst = dst;
    m->dst_cap = m->want;
    m->pull_from = m->eager_len;
}

void RxEngine::place(RxMsg *m, size_t offset, const uint8_t *data, size_t n) {
    if (offset >= m->dst_cap || !n) return;
    std::memcpy(m->dst + offset, data, std::min(n, m->dst_cap - offset));
}

// The 8-byte path: no full header is built, no message record taken.
bool RxEngine::on_small(const SmallHdr &s, const uint8_t *payload, Match &m) {
    if (s.tag & ~kTagMask) return false;  // on_msg drops it, and says why
    const uint64_t key = engine_.links().source_key(s);
    bool known = false;
    const fi_addr_t src = arriving_source(key, known);
    RecvOp *op = match_posted(s.flags & kWTagged, s.tag, src);
    if (op && receive_whole(op, s, s.tag, s.flags & kWCqData ? s.cq_data : 0, payload, src, known))
        return true;
    m = Match{true, key, src, known, op};
    return false;
}

bool RxEngine::on_msg(const WireHdr &h, const uint8_t *payload, const Match *looked_up) {
    if (!header_sane(h)) {
        SN_WARN(FI_LOG_EP_DATA, "dropping message with inconsistent lengths\n");
        domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
        return true;
    }
    Match found{};
    if (!looked_up) {
        found.key = engine_.links().source_key(h);
        found.src = arriving_source(found.key, found.known);
        found.op = match_posted(h.flags & kWTagged, h.tag, found.src);
    }
    const Match &mt = looked_up ? *looked_up : found;
    const uint64_t key = mt.key;
    const fi_addr_t src = mt.src;
    const bool known = mt.known;
    RecvOp *op = mt.op;
    if (!op && rnr_refuse(h)) return true;
    if (op && h.payload == h.msg_len && !(h.flags & (kWRdzv | kWAckReq))) {
        if (receive_whole(op, h, h.tag, h.cq_data, payload, src, known)) return true;
        // One packet for a posted receive, with a twist (multi-receive, truncation...).
        RxMsg local{key,       h.src_nic, h.src_pid,   src,     known,     h.tag,
                    h.cq_data, h.cookie,  h.rdzv_addr, h.flags, h.msg_len, h.eager_len};
        bind_receive(&local, op, true);
        place(&local, 0, payload, h.payload);
        complete_rx(&local, 0, false);
        return true;
    }
    RxMsg *m = msgs_.take();
    *m = RxMsg{key,       h.src_nic, h.src_pid,   src,     known,     h.tag,
               h.cq_data, h.cookie,  h.rdzv_addr, h.flags, h.msg_len, h.eager_len};
    if (op) {
        bind_receive(m, op, true);
    } else {
        m->ux_cap = (h.flags & kWWhole) ? 0 : h.eager_len;  // eager rendezvous: keep the header
        m->ux_buf = alloc_ux(m->ux_cap);
        if (m->ux_cap && !m->ux_buf) {  // no room: leave it queued until receives drain space
            if (!env().fc_recovery)
                SN_WARN(FI_LOG_EP_DATA, "unexpected-message space is full: back-pressure\n");
            m->ux_cap = 0;
            free_msg(m);
            return false;
        }
        m->dst = m->ux_buf;
        m->dst_cap = m->ux_cap;
        unexpected_[m->tagged()].push_back(m);
    }
    place(m, 0, payload, h.payload);
    m->got = h.payload;
    if (!m->eager_done())
        inbound_[InKey{key, h.cookie}] = m;
    else
        finish_eager(m);
    return true;
}

void RxEngine::on_data(const WireHdr &h, const uint8_t *payload) {
    uint64_t key = engine_.links().source_key(h);
    bool pulled = h.flags & kWPulled;
    auto it = inbound_.find(InKey{pulled ? key | kPulledKey : key, h.cookie});
    if (it == inbound_.end()) {
        SN_DBG(FI_LOG_EP_DATA, "dropping data for no message in progress\n");
        domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
        return;
    }
    RxMsg *m = it->second;
    if (!pulled) {
        if (!transport::msg::within(h.offset, h.payload, m->eager_len)) {  // out of bounds: drop
            domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
            return;
        }
        place(m, h.offset, payload, h.payload);
        m->got += h.payload;
        if (!m->eager_done()) return;
        inbound_.erase(it);
        finish_eager(m);
        return;
    }
    if (h.offset < m->pull_from || !transport::msg::within(h.offset, h.payload, m->want)) {
        domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
        return;
    }
    std::memcpy(m->dst + h.offset, payload, h.payload);
    m->pull_got += h.payload;
    if (m->pull_got < m->want - m->pull_from) return;
    inbound_.erase(it);
    send_done(m, 0);
    complete_rx(m, 0);
}

// All eager bytes are in: complete, pull the rest, or wait in the unexpected list.
void RxEngine::finish_eager(RxMsg *m) {
    if (!m->op) return;
    if ((m->wflags & kWRdzv) && m->want > m->pull_from) {
        start_pull(m);
        return;
    }
    if (m->wflags & (kWAckReq | kWRdzv)) send_done(m, m->want < m->msg_len ? kWTrunc : 0);
    complete_rx(m, 0);
}

void RxEngine::complete_rx(RxMsg *m, int err, bool pooled) {
    RecvOp *op = m->op;
    const bool discard = op->flags & FI_DISCARD;  // no bytes wanted, none lost
    size_t olen = discard ? 0 : m->msg_len - m->want;
    // FI_CXI_TRUNC_OK on an RNR endpoint: truncation is a success, flagged FI_CXI_TRUNC.
    const bool trunc_ok = engine_.rnr() && env().trunc_ok && !err && olen;
    if (!err && olen && !trunc_ok) err = FI_ETRUNC;
    uint8_t *buf = (op->flags & FI_MULTI_RECV) ? m->dst : nullptr;
    complete_recv(op, discard ? m->msg_len : m->want, m, buf, err, olen, trunc_ok);
    if (pooled) free_msg(m);
}

// A receive's success: its counter, and its CQ entry unless it asked for none.
void RxEngine::report_recv(const RecvOp *op, uint64_t flags, size_t len, uint8_t *buf,
                           uint64_t data, uint64_t tag, fi_addr_t src) {
    const CompletionBind &b = engine_.rx_bind();
    Cntr *cntr = op->triggered ? op->trig_cntr : b.cntr;
    if (cntr) cntr->inc(cntr->counts_bytes() ? len : 1);
    bool wanted = !b.selective || (op->flags & FI_COMPLETION);
    if (b.cq && (wanted || (flags & FI_MULTI_RECV)))
        b.cq->push(Completion{op->context, wanted ? flags : FI_MULTI_RECV, wanted ? len : 0, buf,
                              data, tag, src});
}

// The common case: a one-packet message that fits a posted receive of its own, from a
// known source. Copied and completed without a message record.
[[gnu::always_inline]] inline bool RxEngine::receive_whole(RecvOp *op, const WirePrefix &p,
                                                           uint64_t tag, uint64_t cq_data,
                                                           const uint8_t *payload, fi_addr_t src,
                                                           bool known) {
    if ((op->flags & (FI_MULTI_RECV | FI_DISCARD)) || p.payload > op->len || op->stage ||
        (!known && (engine_.caps() & FI_SOURCE_ERR)))
        return false;
    posted_[op->tagged].remove(op);
    short_copy(op->buf, payload, p.payload);
    uint64_t flags = (op->tagged ? FI_TAGGED : FI_MSG) | FI_RECV;
    if (p.flags & kWCqData) flags |= FI_REMOTE_CQ_DATA;
    report_recv(op, flags, p.payload, nullptr, cq_data, op->tagged ? tag : 0, src);
    recvs_.give(op);
    return true;
}

void RxEngine::complete_recv(RecvOp *op, size_t len, const RxMsg *m, uint8_t *buf, int err,
                             size_t olen, bool truncated) {
    if (op->stage && !op->landed && (!err || err == FI_ETRUNC) && op->stage->land(len))
        err = FI_EIO;  // the bytes never reached the device buffer
    bool multi = op->flags & FI_MULTI_RECV;
    bool last = true;
    if (multi) {
        op->inflight--;
        last = op->unlinked && op->inflight == 0;
    }
    uint64_t flags = (op->tagged ? FI_TAGGED : FI_MSG) | FI_RECV;
    if (m && (m->wflags & kWCqData)) flags |= FI_REMOTE_CQ_DATA;
    if (multi && last) flags |= FI_MULTI_RECV;
    if (truncated) flags |= FI_CXI_TRUNC;
    fi_addr_t src = m ? m->src_addr : FI_ADDR_NOTAVAIL;
    CxiAddr peer{};
    if (m && !err && !m->src_known && (engine_.caps() & FI_SOURCE_ERR)) {
        err = FI_EADDRNOTAVAIL;
        peer = make_addr(m->src_nic, m->src_pid);
    }
    if (!err) {
        report_recv(op, flags, len, buf, m ? m->data : 0, op->tagged && m ? m->tag : 0, src);
    } else {
        Cntr *cntr = op->triggered ? op->trig_cntr : engine_.rx_bind().cntr;
        if (cntr) cntr->inc_err();
        SN_LOG(err == FI_ETRUNC ? FI_LOG_INFO : FI_LOG_WARN, FI_LOG_EP_DATA,
               "receive %p failed: %s (%zu of %zu bytes)\n", op->context, fi_strerror(err), len,
               size_t(olen));
        ErrorCompletion e;
        e.entry = err_entry(op->context, flags, len, buf, m ? m->data : 0, m ? m->tag : op->tag,
                            olen, err, err == FI_ETRUNC ? C_RC_OK : 0);
        e.src = src;
        if (err == FI_EADDRNOTAVAIL)
            e.err_data.assign(reinterpret_cast<uint8_t *>(&peer),
                              reinterpret_cast<uint8_t *>(&peer) + addr_len(domain_.api_version()));
        if (engine_.rx_bind().cq) engine_.rx_bind().cq->push_error(e);
    }
    if (!last) return;
    delete op->stage;
    recvs_.give(op);
}

// FI_PROTO_CXI_RNR, the receiver's half: true when the message was refused (no posted
// receive, and its sender retries: TxEngine::rnr_backoff). A sender that does not retry
// still gets its message kept as unexpected.
bool RxEngine::rnr_refuse(const WireHdr &h) {
    if (!engine_.rnr() || !(h.flags & kWRnrOk)) return false;
    int err = 0;
    transport::Link *link = engine_.links().link_for(h.src_nic, h.src_pid, h.vni, err);
    WireHdr d = wire_hdr(Pkt::kDone, h.vni, engine_.pid(), domain_.nic().addr);
    d.flags = kWError | kWRnr;
    d.cookie = h.cookie;
    engine_.tx().send_ctrl(link, d);
    return true;
}

}  // namespace softnic::cxi

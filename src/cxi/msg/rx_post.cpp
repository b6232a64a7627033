// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Receive engine, posting side: FI_MORE batching, unexpected-list search, multi-receive,
// PEEK/CLAIM, cancel and the unexpected-list snapshot of the domain extension.
#include <algorithm>
#include <cstring>

#include "common/hmem.hpp"
#include "common/log.hpp"
#include "cxi/core/pid_engine.hpp"
#include "cxi/obj/domain.hpp"

namespace softnic::cxi {
ssize_t RxEngine::recv(const RecvArgs &a, Cntr *trig_cntr, bool triggered) {
    if (a.flags & FI_CLAIM) [[unlikely]]
        return recv_claimed(a);
    RecvOp *op = recvs_.take_any();
    fill_recv(*op, a, trig_cntr, triggered);
    if (a.flags & FI_MORE) {  // held until an operation without FI_MORE arrives
        held_recvs_.push_back(op);
        return 0;
    }
    // The common case: nothing held before it and nothing unexpected to look through.
    if (!held_recvs_.head && !unexpected_[op->tagged].head && !(op->flags & FI_MULTI_RECV)) {
        posted_[op->tagged].push_back(op);
        return 0;
    }
    held_recvs_.push_back(op);
    post_held_recvs();  // out of line
    return 0;
}

// The message a PEEK|CLAIM reserved for this context. Out of line, as the rest of
// recv's uncommon paths are.
[[gnu::noinline]] ssize_t RxEngine::recv_claimed(const RecvArgs &a) {
    RxMsg *m = unexpected_[a.tagged].head;
    while (m && !(m->claimed && m->claim_ctx == a.context))
        m = m->next;
    if (!m) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "FI_CLAIM: nothing claimed by this context\n");
    RecvOp *op = recvs_.take_any();
    fill_recv(*op, a);
    take_unexpected(m, op);
    return 0;
}

[[gnu::noinline]] void RxEngine::post_held_recvs() {
    while (RecvOp *op = held_recvs_.head) {
        held_recvs_.remove(op);
        if (op->flags & FI_MULTI_RECV) {
            posted_[0].push_back(op);
            RecvArgs probe{op->buf, op->len, op->src, 0, 0, op->context, op->flags, false};
            // The message that fills the buffer may complete it, and completing it
            // releases it: stop before touching it again.
            for (bool full = false; !full;) {
                RxMsg *m = match_unexpected(probe, true);
                if (!m) break;
                full =
                    op->len - op->used - std::min(op->len - op->used, m->msg_len) < min_multi_recv_;
                take_unexpected(m, op);
            }
            continue;
        }
        RecvArgs probe{op->buf,    op->len,     op->src,   op->tag,
                       op->ignore, op->context, op->flags, op->tagged};
        if (RxMsg *m = match_unexpected(probe, true))
            take_unexpected(m, op);
        else
            posted_[op->tagged].push_back(op);
    }
}

ssize_t RxEngine::peek(const RecvArgs &a) {
    engine_.poll_ring();  // the message may still be in the ring
    RxMsg *m = match_unexpected(a, true);
    uint64_t flags = (a.tagged ? FI_TAGGED : FI_MSG) | FI_RECV;
    if (!m) {
        if (!engine_.rx_bind().cq) return 0;
        ErrorCompletion e;
        e.entry = err_entry(a.context, flags, 0, nullptr, 0, a.tag, 0, FI_ENOMSG, 0);
        engine_.rx_bind().cq->push_error(e);
        return 0;
    }
    if (a.flags & FI_DISCARD) {  // its completion stands for the peek's
        RecvOp *op = recvs_.take();
        fill_recv(*op, a);
        take_unexpected(m, op);
        return 0;
    }
    if (a.flags & FI_CLAIM) {
        m->claimed = true;
        m->claim_ctx = a.context;
    }
    if (m->wflags & kWCqData) flags |= FI_REMOTE_CQ_DATA;
    if (engine_.rx_bind().cq)
        engine_.rx_bind().cq->push(
            Completion{a.context, flags, m->msg_len, nullptr, m->data, m->tag, m->src_addr});
    return 0;
}

int RxEngine::cancel(void *context) {
    auto try_list = [&](List<RecvOp> &list) -> RecvOp * {
        for (RecvOp *op = list.head; op; op = op->next)
            if (op->context == context) {
                list.remove(op);
                return op;
            }
        return nullptr;
    };
    RecvOp *op = try_list(held_recvs_);
    if (!op) op = try_list(posted_[0]);
    if (!op) op = try_list(posted_[1]);
    if (!op) return -FI_ENOENT;
    bool multi = op->flags & FI_MULTI_RECV;
    if (multi && op->inflight) {  // messages still landing in it finish normally
        op->unlinked = true;
        return 0;
    }
    if (Cntr *c = op->triggered ? op->trig_cntr : engine_.rx_bind().cntr) c->inc_err();
    ErrorCompletion e;
    uint64_t flags = (op->tagged ? FI_TAGGED : FI_MSG) | FI_RECV | (multi ? FI_MULTI_RECV : 0);
    e.entry = err_entry(context, flags, 0, nullptr, 0, op->tag, 0, FI_ECANCELED, 0);
    if (engine_.rx_bind().cq) engine_.rx_bind().cq->push_error(e);
    delete op->stage;
    recvs_.give(op);
    return 0;
}

size_t RxEngine::unexpected(fi_cq_tagged_entry *entries, size_t count, fi_addr_t *src,
                            size_t *total) {
    engine_.poll_ring();
    size_t n = 0, all = 0;
    for (int t = 0; t < 2; t++) {
        for (RxMsg *m = unexpected_[t].head; m; m = m->next, all++) {
            if (!entries || !src || n >= count) continue;
            uint64_t flags = (m->tagged() ? FI_TAGGED : FI_MSG) | FI_RECV |
                             ((m->wflags & kWCqData) ? FI_REMOTE_CQ_DATA : 0);
            entries[n] = fi_cq_tagged_entry{nullptr, flags, m->msg_len, nullptr, m->data, m->tag};
            src[n++] = m->src_addr;
        }
    }
    *total = all;
    return n;
}

}  // namespace softnic::cxi

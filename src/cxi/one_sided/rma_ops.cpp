// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// fi_rma entry points: argument checks (spec §6.2), then the context's transmit engine.
#include <rdma/fi_cxi_ext.h>
#include <rdma/fi_rma.h>

#include "common/log.hpp"
#include "cxi/obj/domain.hpp"
#include "cxi/obj/endpoint.hpp"
#include "cxi/obj/ep_hmem.hpp"
#include "cxi/prov/env.hpp"

namespace softnic::cxi {
namespace {

constexpr uint64_t kWriteMsgFlags = FI_INJECT | FI_COMPLETION | FI_MORE | FI_FENCE | FI_TRIGGER |
                                    kCompletionLevels | FI_CXI_HRP | FI_CXI_WEAK_FENCE |
                                    FI_REMOTE_CQ_DATA;
constexpr uint64_t kReadMsgFlags =
    FI_COMPLETION | FI_MORE | FI_FENCE | FI_TRIGGER | kCompletionLevels;
constexpr uint64_t kMaxRmaLen = 0xFFFFFFFFULL;

EpView *view(fid_ep *ep) {
    return owner_of<EpView>(ep);
}

struct Rma {
    void *buf;
    size_t len;
    fi_addr_t peer;
    uint64_t addr, key;
    void *context;
    uint64_t flags;
    uint64_t data = 0;     // FI_REMOTE_CQ_DATA
    void *desc = nullptr;  // the local buffer's MR descriptor
};

// Remote CQ data (fi_writedata & co) is offered only where the domain enables it; with
// upstream's key layout (FI_CXI_ENABLE_WRITEDATA=1) only towards standard provider keys.
int check_writedata(EpView *v, uint64_t key) {
    Domain &d = v->ep->domain();
    if (!d.writedata())
        SN_REJECT(-FI_ENOSYS, FI_LOG_EP_DATA,
                  "remote CQ data needs FI_MR_PROV_KEY, a CQ data size and "
                  "FI_CXI_ENABLE_WRITEDATA not 0\n");
    if ((key & kProvKeyOptimized) && env().writedata_layout)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "remote CQ data towards an optimized key\n");
    return 0;
}

ssize_t do_rma(fid_ep *ep, OpKind kind, const Rma &r, bool inject_call = false) {
    EpView *v = view(ep);
    const bool w = kind == OpKind::kWrite;
    if (!(v->side & kTx)) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "not a transmit context\n");
    if (!(v->ep->caps() & FI_RMA))
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "endpoint opened without FI_RMA\n");
    if (r.len && !r.buf) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "NULL buffer\n");
    if (r.len > kMaxRmaLen) SN_REJECT(-FI_EMSGSIZE, FI_LOG_EP_DATA, "RMA of %zu bytes\n", r.len);
    if ((r.flags & FI_INJECT) && r.len > kInjectSize)
        SN_REJECT(-FI_EMSGSIZE, FI_LOG_EP_DATA, "inject of %zu > %zu bytes\n", r.len, kInjectSize);
    if (!v->ep->domain().mrs().prov_keys() && r.key > 0xFFFFFFFFULL)
        SN_REJECT(-FI_EKEYREJECTED, FI_LOG_EP_DATA, "client key 0x%lx exceeds 32 bits\n", r.key);
    if ((r.flags & FI_FENCE) && !(v->ep->caps() & FI_FENCE))
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "FI_FENCE without the FI_FENCE capability\n");
    if (r.flags & FI_REMOTE_CQ_DATA)
        if (int ret = check_writedata(v, r.key)) return ret;
    if (r.flags & FI_TRIGGER) {
        if (!(v->ep->caps() & FI_TRIGGER))
            SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "FI_TRIGGER without the capability\n");
        FlaggedOp op{w ? FI_OP_WRITE : FI_OP_READ,
                     ep,
                     {r.buf, r.len},
                     r.peer,
                     {r.addr, r.len, r.key},
                     0,
                     r.data,
                     r.context,
                     r.flags};
        return v->ep->domain().deferred().queue_flagged(op, &v->ep->domain());
    }
    SendArgs a{r.buf, r.len, r.peer, 0, r.data, r.context, r.flags, false, inject_call};
    a.kind = w ? OpKind::kWrite : OpKind::kRead;
    a.rma.key = r.key;
    a.rma.addr = r.addr;
    // Writes to optimized keys take the restricted path unless the target needs events.
    // (Our packets to one peer stay in order, so WAW ordering does not rule it out.)
    // fi_cxi(7) "Optimized RMA": an optimized MR, no remote completion notification, no
    // write-after-write ordering asked for (and no CQ data, which needs the full format).
    bool optimized = v->ep->domain().optimized_key(r.key);
    bool ordered = v->msg_order & (FI_ORDER_WAW | FI_ORDER_RMA_WAW);
    a.rma.restricted =
        w && optimized && !v->ep->remote_events() && !ordered && !(r.flags & FI_REMOTE_CQ_DATA);
    return post_send(v, a, r.desc);
}

// One local iov (or none), exactly one remote one.
ssize_t rma_msg(fid_ep *ep, OpKind kind, const fi_msg_rma *msg, uint64_t flags) {
    if (!msg) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "NULL msg\n");
    if (msg->iov_count > 1 || (msg->iov_count && !msg->msg_iov))
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "iov_limit is 1\n");
    if (msg->rma_iov_count != 1 || !msg->rma_iov)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "rma_iov_limit is 1\n");
    uint64_t allowed = kind == OpKind::kWrite ? kWriteMsgFlags : kReadMsgFlags;
    if (flags & ~allowed) SN_REJECT(-FI_EBADFLAGS, FI_LOG_EP_DATA, "bad flags 0x%lx\n", flags);
    const iovec *iov = msg->iov_count ? msg->msg_iov : nullptr;
    return do_rma(ep, kind,
                  Rma{iov ? iov->iov_base : nullptr, iov ? iov->iov_len : 0, msg->addr,
                      msg->rma_iov->addr, msg->rma_iov->key, msg->context, flags, msg->data,
                      iov && msg->desc ? msg->desc[0] : nullptr});
}

ssize_t rma_v(fid_ep *ep, OpKind kind, const iovec *iov, void **desc, size_t count, fi_addr_t peer,
              uint64_t addr, uint64_t key, void *ctx) {
    if (count > 1 || (count && !iov)) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "iov_limit is 1\n");
    return do_rma(ep, kind,
                  Rma{count ? iov->iov_base : nullptr, count ? iov->iov_len : 0, peer, addr, key,
                      ctx, view(ep)->tx_flags, 0, count && desc ? desc[0] : nullptr});
}

ssize_t r_read(fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src, uint64_t addr,
               uint64_t key, void *ctx) {
    return do_rma(ep, OpKind::kRead,
                  Rma{buf, len, src, addr, key, ctx, view(ep)->tx_flags, 0, desc});
}
ssize_t r_readv(fid_ep *ep, const iovec *iov, void **desc, size_t count, fi_addr_t src,
                uint64_t addr, uint64_t key, void *ctx) {
    return rma_v(ep, OpKind::kRead, iov, desc, count, src, addr, key, ctx);
}
ssize_t r_readmsg(fid_ep *ep, const fi_msg_rma *msg, uint64_t flags) {
    return rma_msg(ep, OpKind::kRead, msg, flags);
}
ssize_t r_write(fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest, uint64_t addr,
                uint64_t key, void *ctx) {
    return do_rma(
        ep, OpKind::kWrite,
        Rma{const_cast<void *>(buf), len, dest, addr, key, ctx, view(ep)->tx_flags, 0, desc});
}
ssize_t r_writev(fid_ep *ep, const iovec *iov, void **desc, size_t count, fi_addr_t dest,
                 uint64_t addr, uint64_t key, void *ctx) {
    return rma_v(ep, OpKind::kWrite, iov, desc, count, dest, addr, key, ctx);
}
ssize_t r_writemsg(fid_ep *ep, const fi_msg_rma *msg, uint64_t flags) {
    return rma_msg(ep, OpKind::kWrite, msg, flags);
}
ssize_t r_inject(fid_ep *ep, const void *buf, size_t len, fi_addr_t dest, uint64_t addr,
                 uint64_t key) {
    return do_rma(ep, OpKind::kWrite,
                  Rma{const_cast<void *>(buf), len, dest, addr, key, nullptr, FI_INJECT}, true);
}
ssize_t r_writedata(fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t data,
                    fi_addr_t dest, uint64_t addr, uint64_t key, void *ctx) {
    return do_rma(ep, OpKind::kWrite,
                  Rma{const_cast<void *>(buf), len, dest, addr, key, ctx,
                      view(ep)->tx_flags | FI_REMOTE_CQ_DATA, data, desc});
}
ssize_t r_injectdata(fid_ep *ep, const void *buf, size_t len, uint64_t data, fi_addr_t dest,
                     uint64_t addr, uint64_t key) {
    return do_rma(ep, OpKind::kWrite,
                  Rma{const_cast<void *>(buf), len, dest, addr, key, nullptr,
                      FI_INJECT | FI_REMOTE_CQ_DATA, data},
                  true);
}

}  // namespace

fi_ops_rma rma_ops = {sizeof(fi_ops_rma), r_read,     r_readv,  r_readmsg,   r_write,
                      r_writev,           r_writemsg, r_inject, r_writedata, r_injectdata};

}  // namespace softnic::cxi

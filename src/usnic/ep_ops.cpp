// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The fi_msg entry points: argument checks shared by every endpoint type, then the
// endpoint's data path. RMA, tagged and atomic calls are refused (-FI_ENOSYS).
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "common/log.hpp"
#include "common/not_supported.hpp"
#include "usnic/caps.hpp"
#include "usnic/endpoint.hpp"

namespace softnic::usnic {
namespace {

size_t total(const iovec *iov, size_t count) {
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        n += iov[i].iov_len;
    return n;
}

ssize_t too_big(Endpoint *ep) {
    return ep->type() == FI_EP_DGRAM ? -FI_ENOSPC : -FI_EINVAL;
}

ssize_t do_send(fid_ep *f, const iovec *iov, size_t count, fi_addr_t dest, void *context,
                uint64_t flags, bool signal) {
    Endpoint *ep = Endpoint::of(f);
    if (!ep->enabled()) SN_REJECT(-FI_EOPBADSTATE, FI_LOG_EP_DATA, "send before fi_enable\n");
    if (count && !iov) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "NULL iov\n");
    if (count > ep->tx_iov_limit())
        SN_REJECT(too_big(ep), FI_LOG_EP_DATA, "%zu iovs, the limit is %zu\n", count,
                  ep->tx_iov_limit());
    size_t len = total(iov, count);
    if (ep->prefix()) len = len < kPrefixSize ? 0 : len - kPrefixSize;  // limits count payload
    if (len > ep->max_msg())
        SN_REJECT(-FI_EMSGSIZE, FI_LOG_EP_DATA, "%zu bytes, max_msg_size is %zu\n", len,
                  ep->max_msg());
    if ((flags & FI_INJECT) && len > ep->inject_limit())
        SN_REJECT(too_big(ep), FI_LOG_EP_DATA, "inject of %zu bytes, the limit is %zu\n", len,
                  ep->inject_limit());
    return guarded([&] { return ep->send(Op{iov, count, dest, context, flags, signal}); });
}

ssize_t do_recv(fid_ep *f, const iovec *iov, size_t count, fi_addr_t src, void *context,
                uint64_t flags) {
    Endpoint *ep = Endpoint::of(f);
    if (!ep->enabled()) SN_REJECT(-FI_EOPBADSTATE, FI_LOG_EP_DATA, "receive before fi_enable\n");
    if (count && !iov) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "NULL iov\n");
    if (count > 8)  // the hardware's limit; upstream does not check receives further
        SN_REJECT(too_big(ep), FI_LOG_EP_DATA, "%zu iovs, at most 8\n", count);
    return guarded([&] { return ep->recv(Op{iov, count, src, context, flags, true}); });
}

ssize_t op_recv(fid_ep *ep, void *buf, size_t len, void *, fi_addr_t src, void *context) {
    iovec iov{buf, len};
    return do_recv(ep, &iov, 1, src, context, Endpoint::of(ep)->rx_op_flags());
}
ssize_t op_recvv(fid_ep *ep, const iovec *iov, void **, size_t count, fi_addr_t src, void *ctx) {
    return do_recv(ep, iov, count, src, ctx, Endpoint::of(ep)->rx_op_flags());
}
ssize_t op_recvmsg(fid_ep *f, const fi_msg *msg, uint64_t flags) {
    if (!msg) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "NULL msg\n");
    Endpoint *ep = Endpoint::of(f);
    if (ep->type() != FI_EP_DGRAM && (flags & ~uint64_t(FI_COMPLETION | FI_MORE)))
        SN_REJECT(-FI_EOPNOTSUPP, FI_LOG_EP_DATA, "receive flags %#llx not supported\n",
                  (unsigned long long)flags);
    return do_recv(f, msg->msg_iov, msg->iov_count, msg->addr, msg->context, flags);
}
ssize_t op_send(fid_ep *f, const void *buf, size_t len, void *, fi_addr_t dest, void *context) {
    iovec iov{const_cast<void *>(buf), len};
    Endpoint *ep = Endpoint::of(f);
    uint64_t flags = ep->tx_op_flags();
    return do_send(f, &iov, 1, dest, context, flags, ep->wants_completion(flags));
}
ssize_t op_sendv(fid_ep *f, const iovec *iov, void **, size_t count, fi_addr_t dest, void *ctx) {
    Endpoint *ep = Endpoint::of(f);
    uint64_t flags = ep->tx_op_flags();
    return do_send(f, iov, count, dest, ctx, flags, ep->wants_completion(flags));
}
ssize_t op_sendmsg(fid_ep *f, const fi_msg *msg, uint64_t flags) {
    if (!msg) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "NULL msg\n");
    Endpoint *ep = Endpoint::of(f);
    constexpr uint64_t kRudpFlags =
        FI_INJECT | FI_COMPLETION | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_MORE;
    if (ep->type() != FI_EP_DGRAM && (flags & ~kRudpFlags))
        SN_REJECT(-FI_EOPNOTSUPP, FI_LOG_EP_DATA, "send flags %#llx not supported\n",
                  (unsigned long long)(flags & ~kRudpFlags));
    return do_send(f, msg->msg_iov, msg->iov_count, msg->addr, msg->context, flags,
                   ep->wants_completion(flags));
}
ssize_t op_inject(fid_ep *f, const void *buf, size_t len, fi_addr_t dest) {
    iovec iov{const_cast<void *>(buf), len};
    return do_send(f, &iov, 1, dest, nullptr, FI_INJECT, false);
}

ssize_t op_size_left(fid_ep *f, bool tx) {
    if (!f) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "NULL endpoint\n");
    Endpoint *ep = Endpoint::of(f);
    if (!ep->enabled()) SN_REJECT(-FI_EOPBADSTATE, FI_LOG_EP_DATA, "size_left before fi_enable\n");
    return ep->size_left(tx);
}
ssize_t op_rx_size_left(fid_ep *f) {
    return op_size_left(f, false);
}
ssize_t op_tx_size_left(fid_ep *f) {
    return op_size_left(f, true);
}
int op_getopt(fid *f, int level, int name, void *optval, size_t *optlen) {
    Endpoint *ep = owner_of_fid<Endpoint, fid_ep>(f);
    if (ep->type() == FI_EP_DGRAM) SN_REJECT(-FI_ENOSYS, FI_LOG_EP_CTRL, "no options\n");
    bool cm_data =
        ep->type() == FI_EP_MSG && level == FI_OPT_ENDPOINT && name == FI_OPT_CM_DATA_SIZE;
    if (!cm_data)
        SN_REJECT(-FI_ENOPROTOOPT, FI_LOG_EP_CTRL, "option %d/%d not supported\n", level, name);
    if (!optval || !optlen) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "NULL option buffer\n");
    if (*optlen < sizeof(size_t))
        SN_REJECT(-FI_ETOOSMALL, FI_LOG_EP_CTRL, "option buffer too small\n");
    *static_cast<size_t *>(optval) = kCmDataMax;  // what fi_connect/accept/reject carry
    *optlen = sizeof(size_t);
    return 0;
}
int op_setopt(fid *f, int level, int name, const void *, size_t) {
    Endpoint *ep = owner_of_fid<Endpoint, fid_ep>(f);
    if (ep->type() == FI_EP_DGRAM) SN_REJECT(-FI_ENOSYS, FI_LOG_EP_CTRL, "no options\n");
    SN_REJECT(-FI_ENOPROTOOPT, FI_LOG_EP_CTRL, "option %d/%d not supported\n", level, name);
}
ssize_t op_cancel(fid *f, void *) {
    Endpoint *ep = owner_of_fid<Endpoint, fid_ep>(f);
    if (ep->type() == FI_EP_RDM) return 0;  // nothing is cancelled, as upstream
    SN_REJECT(-FI_ENOSYS, FI_LOG_EP_CTRL, "fi_cancel is not supported\n");
}
int op_getname(fid *f, void *addr, size_t *addrlen) {
    return owner_of_fid<Endpoint, fid_ep>(f)->getname(addr, addrlen);
}

fi_ops_msg make_msg_ops() {
    fi_ops_msg o{};
    o.size = sizeof(o);
    o.recv = op_recv;
    o.recvv = op_recvv;
    o.recvmsg = op_recvmsg;
    o.send = op_send;
    o.sendv = op_sendv;
    o.sendmsg = op_sendmsg;
    o.inject = op_inject;
    SN_NOT_SUPPORTED(o, senddata);
    SN_NOT_SUPPORTED(o, injectdata);
    return o;
}
fi_ops_ep make_ep_ops() {
    fi_ops_ep o{};
    o.size = sizeof(o);
    o.cancel = op_cancel;
    o.getopt = op_getopt;
    o.setopt = op_setopt;
    SN_NOT_SUPPORTED(o, tx_ctx);
    SN_NOT_SUPPORTED(o, rx_ctx);
    o.rx_size_left = op_rx_size_left;
    o.tx_size_left = op_tx_size_left;
    return o;
}
fi_ops_cm make_dgram_cm_ops() {
    fi_ops_cm o{};
    o.size = sizeof(o);
    o.getname = op_getname;
    SN_NOT_SUPPORTED(o, setname);
    SN_NOT_SUPPORTED(o, getpeer);
    SN_NOT_SUPPORTED(o, connect);
    SN_NOT_SUPPORTED(o, listen);
    SN_NOT_SUPPORTED(o, accept);
    SN_NOT_SUPPORTED(o, reject);
    SN_NOT_SUPPORTED(o, shutdown);
    SN_NOT_SUPPORTED(o, join);
    return o;
}

}  // namespace

fi_ops_msg ep_msg_ops = make_msg_ops();
fi_ops_rma ep_rma_ops = all_not_supported<fi_ops_rma>();
fi_ops_tagged ep_tagged_ops = all_not_supported<fi_ops_tagged>();
fi_ops_atomic ep_atomic_ops = all_not_supported<fi_ops_atomic>();
fi_ops_ep ep_base_ops = make_ep_ops();
fi_ops_cm ep_cm_ops_dgram = make_dgram_cm_ops();
fi_ops_collective ep_collective_ops = all_not_supported<fi_ops_collective>();  // usnic has none

}  // namespace softnic::usnic

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// fi_msg and fi_tagged entry points: argument checks (spec §5.2, §5.3), then the context.
#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>

#include "common/call_clock.hpp"
#include "common/log.hpp"
#include "common/not_supported.hpp"
#include "cxi/obj/domain.hpp"
#include "cxi/obj/endpoint.hpp"
#include "cxi/obj/ep_hmem.hpp"

namespace softnic::cxi {
namespace {

constexpr uint64_t kRecvMsgFlags = FI_COMPLETION | FI_MULTI_RECV | FI_MORE;
constexpr uint64_t kIgnoredRecvFlags = FI_REMOTE_CQ_DATA | FI_INJECT;

EpView *view(fid_ep *ep) {
    return owner_of<EpView>(ep);
}

// Every check of a send, one by one, each failure with its reason; then the send.
[[gnu::noinline]] ssize_t send_checked(fid_ep *ep, const void *buf, size_t len, void *desc,
                                       fi_addr_t dest, uint64_t tag, uint64_t data, void *context,
                                       uint64_t flags, bool tagged, bool inject_call) {
    EpView *v = view(ep);
    if (!(v->side & kTx)) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "not a transmit context\n");
    if (len && !buf) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "NULL buffer\n");
    if (len > kMaxMsgSize) SN_REJECT(-FI_EMSGSIZE, FI_LOG_EP_DATA, "message too long\n");
    if ((flags & FI_INJECT) && v->ep->rnr())
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "FI_PROTO_CXI_RNR endpoints have no inject\n");
    if ((flags & FI_INJECT) && len > kInjectSize)
        SN_REJECT(-FI_EMSGSIZE, FI_LOG_EP_DATA, "inject of %zu > %zu bytes\n", len, kInjectSize);
    if (tagged && (tag & ~v->ep->tag_mask()))
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "tag 0x%lx uses more than the tag bits\n", tag);
    if ((flags & FI_FENCE) && !(v->ep->caps() & FI_FENCE))
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "FI_FENCE without the FI_FENCE capability\n");
    if (flags & FI_TRIGGER) {
        if (!(v->ep->caps() & FI_TRIGGER))
            SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "FI_TRIGGER without the capability\n");
        FlaggedOp op{tagged ? FI_OP_TSEND : FI_OP_SEND,
                     ep,
                     {const_cast<void *>(buf), len},
                     dest,
                     {},
                     tag,
                     data,
                     context,
                     flags};
        return v->ep->domain().deferred().queue_flagged(op, &v->ep->domain());
    }
    return post_send(v, SendArgs{buf, len, dest, tag, data, context, flags, tagged, inject_call},
                     desc);
}

// Inlined into each entry point, so that its constant arguments fold away. A plain send
// (host memory, no descriptor, none of the flags that need a closer look) passes every
// check in one test and goes straight to the engine; any other is checked out of line,
// so the plain one saves no registers for the rest.
template <bool kSerial>
[[gnu::always_inline]] inline ssize_t do_send(fid_ep *ep, const void *buf, size_t len, void *desc,
                                              fi_addr_t dest, uint64_t tag, uint64_t data,
                                              void *context, uint64_t flags, bool tagged,
                                              bool inject_call = false) {
    EpView *v = view(ep);
    const bool plain = (v->side & kTx) && (buf || !len) && len <= kMaxMsgSize && !desc &&
                       !(v->ep->caps() & FI_HMEM) && !(flags & (FI_FENCE | FI_TRIGGER)) &&
                       (!(flags & FI_INJECT) || (!v->ep->rnr() && len <= kInjectSize)) &&
                       !(tagged && (tag & ~v->ep->tag_mask()));
    if (plain) [[likely]]
        return v->engine->send_as<kSerial>(
            SendArgs{buf, len, dest, tag, data, context, flags, tagged, inject_call});
    return send_checked(ep, buf, len, desc, dest, tag, data, context, flags, tagged, inject_call);
}

// Every check of a receive, one by one, each failure with its reason; then the receive.
[[gnu::noinline]] ssize_t recv_checked(fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src,
                                       uint64_t tag, uint64_t ignore, void *context, uint64_t flags,
                                       bool tagged) {
    EpView *v = view(ep);
    if (!(v->side & kRx)) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "not a receive context\n");
    if (len && !buf) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "NULL buffer\n");
    if (tagged && ((tag | ignore) & ~v->ep->tag_mask()))
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "tag or ignore uses more than the tag bits\n");
    if ((v->ep->caps() & FI_DIRECTED_RECV) && src != FI_ADDR_UNSPEC &&
        (!v->engine->av() || !v->engine->av()->entry(src)))
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "source fi_addr %lu is not in the AV\n", src);
    if (!(v->ep->caps() & FI_DIRECTED_RECV)) src = FI_ADDR_UNSPEC;
    RecvArgs a{buf, len, src, tag, ignore, context, flags & ~kIgnoredRecvFlags, tagged};
    if (flags & FI_PEEK) return v->engine->peek(a);
    return post_recv(v, a, desc);
}

// As do_send: a plain receive (host memory, no descriptor, no FI_PEEK; any source, or one
// in the AV when the endpoint has FI_DIRECTED_RECV, as MPI's receives name theirs) in one
// test, straight to the engine; any other out of line.
template <bool kSerial>
[[gnu::always_inline]] inline ssize_t do_recv(fid_ep *ep, void *buf, size_t len, void *desc,
                                              fi_addr_t src, uint64_t tag, uint64_t ignore,
                                              void *context, uint64_t flags, bool tagged) {
    EpView *v = view(ep);
    const uint64_t caps = v->ep->caps();
    const bool any_source = src == FI_ADDR_UNSPEC || !(caps & FI_DIRECTED_RECV);
    const bool plain = (v->side & kRx) && (buf || !len) && !desc && !(caps & FI_HMEM) &&
                       !(flags & FI_PEEK) && !(tagged && ((tag | ignore) & ~v->ep->tag_mask())) &&
                       (any_source || (v->engine->av() && v->engine->av()->entry(src)));
    if (plain) [[likely]]
        return v->engine->recv_as<kSerial>(RecvArgs{buf, len, any_source ? FI_ADDR_UNSPEC : src,
                                                    tag, ignore, context,
                                                    flags & ~kIgnoredRecvFlags, tagged});
    return recv_checked(ep, buf, len, desc, src, tag, ignore, context, flags, tagged);
}

bool single_iov(const iovec *iov, size_t count) {
    return count <= 1 && (count == 0 || iov);
}

// The descriptor of the one iov, when the application passed descriptors.
void *first_desc(void **desc, size_t count) {
    return count && desc ? desc[0] : nullptr;
}

// fi_msg
template <bool kSerial>
ssize_t m_recv(fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src, void *ctx) {
    return do_recv<kSerial>(ep, buf, len, desc, src, 0, 0, ctx, view(ep)->rx_flags, false);
}
template <bool kSerial>
ssize_t m_recvv(fid_ep *ep, const iovec *iov, void **desc, size_t count, fi_addr_t src, void *ctx) {
    if (!single_iov(iov, count)) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "iov_limit is 1\n");
    return do_recv<kSerial>(ep, count ? iov->iov_base : nullptr, count ? iov->iov_len : 0,
                            first_desc(desc, count), src, 0, 0, ctx, view(ep)->rx_flags, false);
}
template <bool kSerial>
ssize_t m_recvmsg(fid_ep *ep, const fi_msg *msg, uint64_t flags) {
    if (!msg || !single_iov(msg->msg_iov, msg->iov_count))
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "NULL msg or more than one iov\n");
    if (flags & ~(kRecvMsgFlags | kIgnoredRecvFlags))
        SN_REJECT(-FI_EBADFLAGS, FI_LOG_EP_DATA, "bad recvmsg flags 0x%lx\n", flags);
    const iovec *iov = msg->iov_count ? msg->msg_iov : nullptr;
    return do_recv<kSerial>(ep, iov ? iov->iov_base : nullptr, iov ? iov->iov_len : 0,
                            first_desc(msg->desc, msg->iov_count), msg->addr, 0, 0, msg->context,
                            flags, false);
}
template <bool kSerial>
ssize_t m_send(fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest, void *ctx) {
    return do_send<kSerial>(ep, buf, len, desc, dest, 0, 0, ctx, view(ep)->tx_flags, false);
}
template <bool kSerial>
ssize_t m_sendv(fid_ep *ep, const iovec *iov, void **desc, size_t count, fi_addr_t dest,
                void *ctx) {
    if (!single_iov(iov, count)) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "iov_limit is 1\n");
    return do_send<kSerial>(ep, count ? iov->iov_base : nullptr, count ? iov->iov_len : 0,
                            first_desc(desc, count), dest, 0, 0, ctx, view(ep)->tx_flags, false);
}
template <bool kSerial>
ssize_t sendmsg_common(fid_ep *ep, const iovec *iov, void **desc, size_t count, fi_addr_t dest,
                       uint64_t tag, uint64_t data, void *ctx, uint64_t flags, bool tagged) {
    if (!single_iov(iov, count)) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "iov_limit is 1\n");
    if (flags & ~(kTxOpFlags | FI_TRIGGER))
        SN_REJECT(-FI_EBADFLAGS, FI_LOG_EP_DATA, "bad flags 0x%lx\n", flags);
    return do_send<kSerial>(ep, count ? iov->iov_base : nullptr, count ? iov->iov_len : 0,
                            first_desc(desc, count), dest, tag, data, ctx, flags, tagged);
}
template <bool kSerial>
ssize_t m_sendmsg(fid_ep *ep, const fi_msg *msg, uint64_t flags) {
    if (!msg) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "NULL msg\n");
    return sendmsg_common<kSerial>(ep, msg->msg_iov, msg->desc, msg->iov_count, msg->addr, 0,
                                   msg->data, msg->context, flags, false);
}
template <bool kSerial>
ssize_t m_inject(fid_ep *ep, const void *buf, size_t len, fi_addr_t dest) {
    return do_send<kSerial>(ep, buf, len, nullptr, dest, 0, 0, nullptr, FI_INJECT, false, true);
}
template <bool kSerial>
ssize_t m_senddata(fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t data,
                   fi_addr_t dest, void *ctx) {
    return do_send<kSerial>(ep, buf, len, desc, dest, 0, data, ctx,
                            view(ep)->tx_flags | FI_REMOTE_CQ_DATA, false);
}
template <bool kSerial>
ssize_t m_injectdata(fid_ep *ep, const void *buf, size_t len, uint64_t data, fi_addr_t dest) {
    return do_send<kSerial>(ep, buf, len, nullptr, dest, 0, data, nullptr,
                            FI_INJECT | FI_REMOTE_CQ_DATA, false, true);
}

// fi_tagged
// Multi-receive is untagged only: a default FI_MULTI_RECV in the receive flags does not
// make a tagged receive one (upstream strips it too).
uint64_t tagged_rx_flags(fid_ep *ep) {
    return view(ep)->rx_flags & ~FI_MULTI_RECV;
}
template <bool kSerial>
ssize_t t_recv(fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src, uint64_t tag,
               uint64_t ignore, void *ctx) {
    return do_recv<kSerial>(ep, buf, len, desc, src, tag, ignore, ctx, tagged_rx_flags(ep), true);
}
template <bool kSerial>
ssize_t t_recvv(fid_ep *ep, const iovec *iov, void **desc, size_t count, fi_addr_t src,
                uint64_t tag, uint64_t ignore, void *ctx) {
    if (!single_iov(iov, count)) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "iov_limit is 1\n");
    return do_recv<kSerial>(ep, count ? iov->iov_base : nullptr, count ? iov->iov_len : 0,
                            first_desc(desc, count), src, tag, ignore, ctx, tagged_rx_flags(ep),
                            true);
}
template <bool kSerial>
ssize_t t_recvmsg(fid_ep *ep, const fi_msg_tagged *msg, uint64_t flags) {
    // A peek reads no buffer: upstream ignores its iov.
    if (!msg || (!(flags & FI_PEEK) && !single_iov(msg->msg_iov, msg->iov_count)))
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "NULL msg or more than one iov\n");
    if (flags & ~(kRecvMsgFlags | kIgnoredRecvFlags | FI_PEEK | FI_CLAIM | FI_DISCARD))
        SN_REJECT(-FI_EBADFLAGS, FI_LOG_EP_DATA, "bad trecvmsg flags 0x%lx\n", flags);
    if ((flags & FI_DISCARD) && !(flags & (FI_PEEK | FI_CLAIM)))
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "FI_DISCARD needs FI_PEEK or FI_CLAIM\n");
    if ((flags & FI_CLAIM) && !msg->context)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "FI_CLAIM needs a context\n");
    flags &= ~FI_MULTI_RECV;  // multi-receive is untagged only
    const iovec *iov =
        msg->iov_count && msg->msg_iov && !(flags & FI_PEEK) ? msg->msg_iov : nullptr;
    return do_recv<kSerial>(ep, iov ? iov->iov_base : nullptr, iov ? iov->iov_len : 0,
                            iov ? first_desc(msg->desc, msg->iov_count) : nullptr, msg->addr,
                            msg->tag, msg->ignore, msg->context, flags, true);
}
template <bool kSerial>
ssize_t t_send(fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest, uint64_t tag,
               void *ctx) {
    return do_send<kSerial>(ep, buf, len, desc, dest, tag, 0, ctx, view(ep)->tx_flags, true);
}
template <bool kSerial>
ssize_t t_sendv(fid_ep *ep, const iovec *iov, void **desc, size_t count, fi_addr_t dest,
                uint64_t tag, void *ctx) {
    if (!single_iov(iov, count)) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "iov_limit is 1\n");
    return do_send<kSerial>(ep, count ? iov->iov_base : nullptr, count ? iov->iov_len : 0,
                            first_desc(desc, count), dest, tag, 0, ctx, view(ep)->tx_flags, true);
}
template <bool kSerial>
ssize_t t_sendmsg(fid_ep *ep, const fi_msg_tagged *msg, uint64_t flags) {
    if (!msg) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "NULL msg\n");
    return sendmsg_common<kSerial>(ep, msg->msg_iov, msg->desc, msg->iov_count, msg->addr, msg->tag,
                                   msg->data, msg->context, flags, true);
}
template <bool kSerial>
ssize_t t_inject(fid_ep *ep, const void *buf, size_t len, fi_addr_t dest, uint64_t tag) {
    return do_send<kSerial>(ep, buf, len, nullptr, dest, tag, 0, nullptr, FI_INJECT, true, true);
}
template <bool kSerial>
ssize_t t_senddata(fid_ep *ep, const void *buf, size_t len, void *desc, uint64_t data,
                   fi_addr_t dest, uint64_t tag, void *ctx) {
    return do_send<kSerial>(ep, buf, len, desc, dest, tag, data, ctx,
                            view(ep)->tx_flags | FI_REMOTE_CQ_DATA, true);
}
template <bool kSerial>
ssize_t t_injectdata(fid_ep *ep, const void *buf, size_t len, uint64_t data, fi_addr_t dest,
                     uint64_t tag) {
    return do_send<kSerial>(ep, buf, len, nullptr, dest, tag, data, nullptr,
                            FI_INJECT | FI_REMOTE_CQ_DATA, true, true);
}

// One table of each per kind of domain (common/serial.hpp): the engine's lock is a
// spinlock in one, the serialised domain's flag in the other.
// In a measuring build each entry times itself (common/call_clock.hpp).
using call_clock::Call;
using call_clock::clocked;
template <bool kSerial>
constexpr fi_ops_msg make_msg_ops() {
    return {sizeof(fi_ops_msg),
            clocked<Call::kRecv, m_recv<kSerial>>(),
            clocked<Call::kRecv, m_recvv<kSerial>>(),
            clocked<Call::kRecv, m_recvmsg<kSerial>>(),
            clocked<Call::kSend, m_send<kSerial>>(),
            clocked<Call::kSend, m_sendv<kSerial>>(),
            clocked<Call::kSend, m_sendmsg<kSerial>>(),
            clocked<Call::kInject, m_inject<kSerial>>(),
            clocked<Call::kSend, m_senddata<kSerial>>(),
            clocked<Call::kInject, m_injectdata<kSerial>>()};
}
template <bool kSerial>
constexpr fi_ops_tagged make_tagged_ops() {
    return {sizeof(fi_ops_tagged),
            clocked<Call::kRecv, t_recv<kSerial>>(),
            clocked<Call::kRecv, t_recvv<kSerial>>(),
            clocked<Call::kRecv, t_recvmsg<kSerial>>(),
            clocked<Call::kSend, t_send<kSerial>>(),
            clocked<Call::kSend, t_sendv<kSerial>>(),
            clocked<Call::kSend, t_sendmsg<kSerial>>(),
            clocked<Call::kInject, t_inject<kSerial>>(),
            clocked<Call::kSend, t_senddata<kSerial>>(),
            clocked<Call::kInject, t_injectdata<kSerial>>()};
}

}  // namespace

fi_ops_msg msg_ops = make_msg_ops<false>(), msg_serial_ops = make_msg_ops<true>();
fi_ops_tagged tagged_ops = make_tagged_ops<false>(), tagged_serial_ops = make_tagged_ops<true>();

// Before fi_enable, every data call is -FI_ENOSYS.
fi_ops_msg msg_disabled_ops = all_not_supported<fi_ops_msg>();
fi_ops_tagged tagged_disabled_ops = all_not_supported<fi_ops_tagged>();
fi_ops_rma rma_disabled_ops = all_not_supported<fi_ops_rma>();
fi_ops_atomic atomic_disabled_ops = all_not_supported<fi_ops_atomic>();

}  // namespace softnic::cxi

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "usnic/endpoint.hpp"

#include <arpa/inet.h>

#include <algorithm>

#include "common/eq.hpp"
#include "common/log.hpp"
#include "usnic/addr.hpp"
#include "usnic/av.hpp"
#include "usnic/caps.hpp"
#include "usnic/cq.hpp"
#include "usnic/dgram_ep.hpp"
#include "usnic/domain.hpp"
#include "usnic/rudp_ep.hpp"

namespace softnic::usnic {
namespace {

int ep_close(fid *f) {
    Endpoint *ep = owner_of_fid<Endpoint, fid_ep>(f);
    ep->shutdown_io();
    delete ep;
    return 0;
}
int ep_bind(fid *f, fid *bfid, uint64_t flags) {
    return guarded([&] { return owner_of_fid<Endpoint, fid_ep>(f)->bind(bfid, flags); });
}
int ep_control(fid *f, int command, void *arg) {
    return guarded([&] { return owner_of_fid<Endpoint, fid_ep>(f)->control(command, arg); });
}
int ep_ops_open(fid *, const char *, uint64_t, void **, void *) {
    SN_REJECT(-FI_ENOSYS, FI_LOG_EP_CTRL, "endpoints have no extension ops\n");
}

}  // namespace

fi_ops ep_fid_ops = make_fid_ops(ep_close, ep_bind, ep_control, ep_ops_open);

Endpoint::Endpoint(Domain *domain, const fi_info &info, void *context)
    : domain_(domain),
      type_(info.ep_attr->type),
      tx_op_flags_(info.tx_attr ? info.tx_attr->op_flags : 0),
      rx_op_flags_(info.rx_attr ? info.rx_attr->op_flags : 0),
      prefix_(info.mode & FI_MSG_PREFIX),
      max_msg_(info.ep_attr->max_msg_size) {
    handle_.owner = this;
    handle_.fid.fid.fclass = FI_CLASS_EP;
    handle_.fid.fid.context = context;
    handle_.fid.fid.ops = &ep_fid_ops;
    handle_.fid.ops = &ep_base_ops;
    handle_.fid.msg = &ep_msg_ops;
    handle_.fid.rma = &ep_rma_ops;
    handle_.fid.tagged = &ep_tagged_ops;
    handle_.fid.atomic = &ep_atomic_ops;
    handle_.fid.cm = &ep_cm_ops_dgram;
    handle_.fid.collective = &ep_collective_ops;
    bool dgram = type_ == FI_EP_DGRAM;
    size_t dflt = dgram ? kDgramQueue : type_ == FI_EP_MSG ? kMsgQueue : kRdmQueue;
    size_t dflt_iov = dgram ? (prefix_ ? 4 : 3) : kMaxIov;
    tx_size_ = info.tx_attr && info.tx_attr->size ? info.tx_attr->size : dflt;
    rx_size_ = info.rx_attr && info.rx_attr->size ? info.rx_attr->size : dflt;
    tx_iov_limit_ = info.tx_attr && info.tx_attr->iov_limit ? info.tx_attr->iov_limit : dflt_iov;
    rx_iov_limit_ = info.rx_attr && info.rx_attr->iov_limit ? info.rx_attr->iov_limit : dflt_iov;
    inject_size_ = dgram ? kDgramInject : kRudpInject;
    if (!max_msg_ || max_msg_ > (dgram ? dgram_max_msg(domain->device().mtu) : kRudpMaxMsg))
        max_msg_ = dgram ? dgram_max_msg(domain->device().mtu) : kRudpMaxMsg;
    domain_->refs().get();
}

bool Endpoint::payload_iov(const Op &op, iovec *out) const {
    std::copy(op.iov, op.iov + op.count, out);
    if (!prefix_) return true;
    if (!op.count || op.iov[0].iov_len < kPrefixSize) {
        SN_WARN(FI_LOG_EP_DATA, "the first buffer must hold the %zu-byte prefix\n", kPrefixSize);
        return false;
    }
    out[0].iov_base = static_cast<uint8_t *>(op.iov[0].iov_base) + kPrefixSize;
    out[0].iov_len -= kPrefixSize;
    return true;
}

Endpoint::~Endpoint() {
    for (UCq *cq : {tx_cq_, rx_cq_}) {
        if (!cq) continue;
        cq->core().progress().remove(this);
        cq->core().refs().put();
    }
    if (tx_cq_ && attached_fd_ >= 0) tx_cq_->detach(attached_fd_);
    if (rx_cq_ && rx_cq_ != tx_cq_ && attached_fd_ >= 0) rx_cq_->detach(attached_fd_);
    if (UAv *bound = av()) bound->refs().put();
    if (eq_) eq_->refs().put();
    domain_->refs().put();
}

int Endpoint::bind(::fid *f, uint64_t flags) {
    if (!f) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "NULL fid\n");
    std::lock_guard<std::mutex> g(ctrl_lock_);
    if (enabled_ && f->fclass != FI_CLASS_AV)
        SN_REJECT(-FI_EOPBADSTATE, FI_LOG_EP_CTRL, "bind before fi_enable\n");
    switch (f->fclass) {
        case FI_CLASS_CQ: {
            if (flags & ~uint64_t(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION))
                SN_REJECT(-FI_EBADFLAGS, FI_LOG_EP_CTRL, "bad CQ bind flags\n");
            if ((flags & FI_RECV) && (flags & FI_SELECTIVE_COMPLETION))
                SN_REJECT(-FI_EOPNOTSUPP, FI_LOG_EP_CTRL, "receives always complete\n");
            if (((flags & FI_TRANSMIT) && tx_cq_) || ((flags & FI_RECV) && rx_cq_))
                SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "a CQ is already bound there\n");
            UCq *cq = UCq::of(reinterpret_cast<fid_cq *>(f));
            if (flags & FI_TRANSMIT) {
                tx_cq_ = cq;
                tx_selective_ = flags & FI_SELECTIVE_COMPLETION;
                cq->core().refs().get();
                // DGRAM sends complete when posted: reading their CQ need not poll the socket.
                if (type_ != FI_EP_DGRAM) cq->core().progress().add(this);
            }
            if (flags & FI_RECV) {
                rx_cq_ = cq;
                cq->core().refs().get();
                cq->core().progress().add(this);
            }
            return 0;
        }
        case FI_CLASS_AV:
            if (type_ == FI_EP_MSG)
                SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "MSG endpoints take no AV\n");
            if (!FI_VERSION_GE(domain_->api_version(), FI_VERSION(1, 5)))
                flags &= ~uint64_t(FI_RECV);
            if (flags) SN_REJECT(-FI_EBADFLAGS, FI_LOG_EP_CTRL, "AV bind flags must be 0\n");
            if (av()) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "an AV is already bound\n");
            {
                UAv *bound = UAv::of(reinterpret_cast<fid_av *>(f));
                bound->refs().get();
                av_.store(bound, std::memory_order_release);
            }
            return 0;
        case FI_CLASS_EQ:
            if (eq_) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "an EQ is already bound\n");
            eq_ = Eq::of(reinterpret_cast<fid_eq *>(f));
            eq_->refs().get();
            return 0;
        default:
            SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "usnic endpoints bind CQs, an AV and an EQ\n");
    }
}

int Endpoint::control(int command, void *arg) {
    (void)arg;
    if (command == FI_ENABLE) return enable_once();
    SN_REJECT(-FI_ENOSYS, FI_LOG_EP_CTRL, "unsupported endpoint control %d\n", command);
}

int Endpoint::enable_once() {
    std::lock_guard<std::mutex> g(ctrl_lock_);
    return enabled_ ? 0 : enable();
}

int Endpoint::check_enable_cqs(int missing_code) {
    if (!tx_cq_ || !rx_cq_)
        SN_REJECT(missing_code, FI_LOG_EP_CTRL,
                  "bind a send CQ and a receive CQ before fi_enable\n");
    return 0;
}

void Endpoint::attach_cqs(int sock_fd) {
    attached_fd_ = sock_fd;
    tx_cq_->attach(sock_fd);
    if (rx_cq_ != tx_cq_) rx_cq_->attach(sock_fd);
}

int Endpoint::getname(void *addr, size_t *addrlen) {
    if (!addrlen) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "NULL addrlen\n");
    return to_user(domain_->addr_format(), local_name(), addr, addrlen);
}

void Endpoint::push_tx(void *context, size_t len) {
    Completion c;
    c.op_context = context;
    c.flags = FI_MSG | FI_SEND;
    c.len = len;
    tx_cq_->core().push(c);
}

void Endpoint::push_rx(void *context, size_t len, fi_addr_t src) {
    Completion c;
    c.op_context = context;
    c.flags = FI_MSG | FI_RECV;
    c.len = len;
    c.src = src;
    rx_cq_->core().push(c);
}

void Endpoint::push_rx_error(void *context, int err, size_t len, size_t olen) {
    ErrorCompletion e;
    e.entry.op_context = context;
    e.entry.flags = FI_MSG | FI_RECV;
    e.entry.len = len;
    e.entry.olen = olen;
    e.entry.err = err;
    e.entry.prov_errno = err;
    rx_cq_->core().push_error(e);
}

void Endpoint::push_tx_error(void *context, int err) {
    ErrorCompletion e;
    e.entry.op_context = context;
    e.entry.flags = FI_MSG | FI_SEND;
    e.entry.err = err;
    e.entry.prov_errno = err;
    tx_cq_->core().push_error(e);
}

int endpoint_open(Domain *domain, fi_info *info, fid_ep **ep, void *context) {
    if (!info || !ep || !info->ep_attr) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "NULL info or ep\n");
    fi_ep_type t = info->ep_attr->type;
    if (t != FI_EP_DGRAM && t != FI_EP_MSG && t != FI_EP_RDM)
        SN_REJECT(-FI_ENODEV, FI_LOG_EP_CTRL, "endpoint type %d is not offered\n", t);
    if (info->caps & ~kCaps)
        SN_REJECT(t == FI_EP_DGRAM ? -FI_EBADF : -FI_EBADFLAGS, FI_LOG_EP_CTRL,
                  "caps %#llx are not offered\n", (unsigned long long)(info->caps & ~kCaps));
    Endpoint *e = nullptr;
    int ret = 0;
    if (t == FI_EP_DGRAM)
        ret = DgramEp::create(domain, *info, context, e);
    else
        ret = RudpEp::create(domain, *info, context, e);
    if (ret) return ret;
    *ep = e->fid();
    return 0;
}

}  // namespace softnic::usnic

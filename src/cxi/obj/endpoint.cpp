// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "cxi/obj/endpoint.hpp"

#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_cxi_ext.h>

#include <cstring>

#include "common/log.hpp"
#include "common/not_supported.hpp"
#include "cxi/obj/domain.hpp"
#include "cxi/prov/auth.hpp"
#include "cxi/prov/env.hpp"

namespace softnic::cxi {
namespace {

// What each context of an endpoint holds of its service.
constexpr cxi_rsrc_type kEndpointRsrcs[] = {CXI_RSRC_TYPE_PTE, CXI_RSRC_TYPE_TXQ,
                                            CXI_RSRC_TYPE_TGQ};

EpView *view_of(fid *f) {
    return owner_of_fid<EpView, fid_ep>(f);
}
EpView *view_of(fid_ep *f) {
    return owner_of<EpView>(f);
}

int ep_close(fid *f) {
    EpView *v = view_of(f);
    return v->ep->close_view(*v);
}
int ep_bind(fid *f, fid *bfid, uint64_t flags) {
    EpView *v = view_of(f);
    return guarded([&] { return v->ep->bind(*v, bfid, flags); });
}
int ep_control(fid *f, int command, void *arg) {
    EpView *v = view_of(f);
    return guarded([&] { return v->ep->control(*v, command, arg); });
}
ssize_t ep_cancel(fid_t f, void *context) {
    EpView *v = view_of(f);
    if (!v->ep->enabled() || !v->engine || !v->engine->is_open())
        SN_REJECT(-FI_EOPBADSTATE, FI_LOG_EP_CTRL, "endpoint is not enabled\n");
    if (!context) return -FI_ENOENT;
    return v->engine->cancel(context);
}
int ep_getopt(fid_t f, int level, int name, void *val, size_t *len) {
    EpView *v = view_of(f);
    return v->ep->getopt(*v, level, name, val, len);
}
int ep_setopt(fid_t f, int level, int name, const void *val, size_t len) {
    EpView *v = view_of(f);
    return v->ep->setopt(*v, level, name, val, len);
}
int ep_tx_ctx(fid_ep *sep, int index, fi_tx_attr *, fid_ep **tx, void *context) {
    EpView *v = view_of(sep);
    return guarded([&] { return v->ep->open_context(kTx, index, tx, context); });
}
int ep_rx_ctx(fid_ep *sep, int index, fi_rx_attr *, fid_ep **rx, void *context) {
    EpView *v = view_of(sep);
    return guarded([&] { return v->ep->open_context(kRx, index, rx, context); });
}
int cm_getname(fid_t f, void *addr, size_t *len) {
    EpView *v = view_of(f);
    return v->ep->getname(*v, addr, len);
}
int cm_setname(fid_t, void *, size_t) {
    SN_REJECT(-FI_ENOSYS, FI_LOG_EP_CTRL, "use FI_SOURCE with a service to choose the PID\n");
}

fi_ops ep_fid_ops = make_fid_ops(ep_close, ep_bind, ep_control, fid_no_ops_open);
fi_ops_ep ep_ops = {sizeof(fi_ops_ep), ep_cancel, ep_getopt,     ep_setopt,
                    ep_tx_ctx,         ep_rx_ctx, not_supported, not_supported};
// Connections are for FI_EP_MSG, which cxi does not offer.
// The one join is a collective group's (coll_ops.cpp).
fi_ops_cm cm_ops = {sizeof(fi_ops_cm), cm_setname,    cm_getname,    not_supported, not_supported,
                    not_supported,     not_supported, not_supported, not_supported, coll_join};

// Default flags of the calls that take none: a completion level plus FI_COMPLETION.
uint64_t default_tx_flags(uint64_t f) {
    return f & (FI_COMPLETION | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE |
                FI_MATCH_COMPLETE);
}
// FI_MULTI_RECV in rx_attr->op_flags makes fi_recv a multi-receive, as upstream does;
// but an info carrying the whole supported mask (fi_getinfo without hints) lists what
// is possible, not what the application wants by default.
uint64_t default_rx_flags(uint64_t f) {
    if ((f & kRxOpFlags) == kRxOpFlags) return f & FI_COMPLETION;
    return f & (FI_COMPLETION | FI_MULTI_RECV);
}

void install_data_ops(EpView &v, bool enabled) {
    // Serialised: the domain (FI_THREAD_DOMAIN) or the engine alone (FI_THREAD_COMPLETION).
    const bool serial =
        enabled && (v.engine ? v.engine->serial() : v.ep->domain().serial() != nullptr);
    v.h.fid.msg = !enabled ? &msg_disabled_ops : serial ? &msg_serial_ops : &msg_ops;
    v.h.fid.tagged = !enabled ? &tagged_disabled_ops : serial ? &tagged_serial_ops : &tagged_ops;
    v.h.fid.rma = enabled ? &rma_ops : &rma_disabled_ops;
    v.h.fid.atomic = enabled ? &atomic_ops : &atomic_disabled_ops;
}

void init_view(EpView &v, Endpoint *ep, PidEngine *engine, unsigned side, void *context,
               size_t fclass) {
    v.h.owner = &v;
    v.ep = ep;
    v.engine = engine;
    v.side = side;
    v.h.fid.fid.fclass = fclass;
    v.h.fid.fid.context = context;
    v.h.fid.fid.ops = &ep_fid_ops;
    v.h.fid.ops = &ep_ops;
    v.h.fid.cm = &cm_ops;
    v.h.fid.collective = &coll_ops;
    install_data_ops(v, false);
}

}  // namespace

size_t Endpoint::contexts_for(const fi_info &info, bool scalable) {
    if (!scalable || !info.ep_attr) return 1;
    return std::max<size_t>({1, info.ep_attr->tx_ctx_cnt, info.ep_attr->rx_ctx_cnt});
}

Endpoint::Endpoint(Domain &domain, const fi_info &info, void *context, bool scalable, uint16_t vni)
    : domain_(domain),
      caps_(info.caps ? info.caps : kCaps),
      scalable_(scalable),
      rnr_(info.ep_attr && info.ep_attr->protocol == FI_PROTO_CXI_RNR),
      requested_pid_(info.src_addr ? read_addr(info.src_addr, info.src_addrlen).pid : kPidAny),
      pid_preferred_(info.src_addr && read_addr(info.src_addr, info.src_addrlen).pid_preferred),
      tx_size_(info.tx_attr && info.tx_attr->size ? info.tx_attr->size : env().default_tx_size),
      tx_ctx_cnt_(scalable && info.ep_attr ? std::max<size_t>(1, info.ep_attr->tx_ctx_cnt) : 1),
      rx_ctx_cnt_(scalable && info.ep_attr ? std::max<size_t>(1, info.ep_attr->rx_ctx_cnt) : 1) {
    init_view(view_, this, nullptr, kBoth, context, scalable ? FI_CLASS_SEP : FI_CLASS_EP);
    uint64_t txf = default_tx_flags(info.tx_attr ? info.tx_attr->op_flags : 0);
    uint64_t rxf = default_rx_flags(info.rx_attr ? info.rx_attr->op_flags : FI_COMPLETION);
    view_.tx_flags = txf;
    view_.rx_flags = rxf;
    if (info.tx_attr && info.tx_attr->tclass != FI_TC_UNSPEC) view_.tclass = info.tx_attr->tclass;
    if (rnr_) view_.msg_order = kRnrMsgOrder;
    if (info.tx_attr) view_.msg_order = info.tx_attr->msg_order;  // 0: none asked for
    size_t n = std::max(tx_ctx_cnt_, rx_ctx_cnt_);
    for (size_t i = 0; i < n; i++) {
        engines_.push_back(std::make_unique<PidEngine>(domain, caps_, tx_size_, vni));
        if (rnr_) engines_.back()->set_rnr(uint64_t(env().rnr_max_timeout_us));
    }
    if (!scalable) view_.engine = engines_[0].get();
    domain_.refs().get();
}

Endpoint::~Endpoint() {
    for (cxi_rsrc_type t : kEndpointRsrcs)
        domain_.service()->give(t, unsigned(engines_.size()));
    engines_.clear();  // unregisters from CQs and counters, releases the PIDs
    release_av_auth_keys();
    if (av_) av_->refs().put();
    domain_.refs().put();
}

EpView *Endpoint::make_view(PidEngine *engine, unsigned side, void *context, size_t fclass) {
    auto v = std::make_unique<EpView>();
    init_view(*v, this, engine, side, context, fclass);
    v->parent = &view_;
    EpView *raw = v.get();
    views_.push_back(std::move(v));
    refs_.get();
    return raw;
}

int Endpoint::open_context(unsigned side, int index, fid_ep **out, void *context) {
    if (!scalable_) SN_REJECT(-FI_ENOSYS, FI_LOG_EP_CTRL, "not a scalable endpoint\n");
    size_t limit = side == kTx ? tx_ctx_cnt_ : rx_ctx_cnt_;
    if (!out || index < 0 || size_t(index) >= limit)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "context index %d out of range\n", index);
    EpView *v = make_view(engines_[index].get(), side, context,
                          side == kTx ? FI_CLASS_TX_CTX : FI_CLASS_RX_CTX);
    v->tx_flags = view_.tx_flags;
    v->rx_flags = view_.rx_flags;
    *out = &v->h.fid;
    return 0;
}

int Endpoint::close_view(EpView &v) {
    if (&v != &view_) {  // a context or an alias
        for (auto it = views_.begin(); it != views_.end(); ++it)
            if (it->get() == &v) {
                views_.erase(it);
                refs_.put();
                return 0;
            }
        return -FI_EINVAL;
    }
    if (refs_.busy()) SN_REJECT(-FI_EBUSY, FI_LOG_EP_CTRL, "close aliases and contexts first\n");
    delete this;
    return 0;
}

namespace {

// The VNI an endpoint uses: its own auth key's, which must name the domain's service
// and a VNI that service allows, else the domain's. Its traffic class must be one the
// service allows too.
int endpoint_vni(Domain &d, const fi_info &info, uint16_t &vni) {
    vni = d.vni();
    const fi_ep_attr *a = info.ep_attr;
    AuthKey key;
    int given = a ? read_auth_key(a->auth_key, a->auth_key_size, key) : 0;
    if (given < 0)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "ep auth_key must be a struct cxi_auth_key\n");
    const cxil::Service &svc = d.service()->service();
    if (given && d.av_auth_keys())
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL,
                  "FI_AV_AUTH_KEY: keys come from the AV, not ep_attr\n");
    if (d.av_auth_keys() > 1 && (info.caps & FI_DIRECTED_RECV) &&
        !(info.ep_attr && info.ep_attr->protocol == FI_PROTO_CXI_RNR))
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL,
                  "FI_DIRECTED_RECV is not offered with more than one auth key per endpoint\n");
    if (given) {
        if (key.svc_id != d.svc_id())
            SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "auth key service %u is not the domain's (%u)\n",
                      key.svc_id, d.svc_id());
        if (!cxil::vni_allowed(svc, key.vni))
            SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "CXI service %u does not allow VNI %u\n",
                      key.svc_id, key.vni);
        vni = key.vni;
    }
    uint32_t tc = info.tx_attr ? info.tx_attr->tclass : uint32_t(FI_TC_UNSPEC);
    if (!tclass_permitted(svc, tc))
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "CXI service %u does not allow tclass 0x%x\n",
                  svc.id(), tc);
    return 0;
}

// Each context of an endpoint holds a portal entry, a transmit and a target queue.
int open_endpoint(Domain &d, const fi_info &info, void *context, bool scalable, fid_ep *&out) {
    uint16_t vni = 0;
    if (int ret = endpoint_vni(d, info, vni)) return ret;
    ServiceHold &hold = *d.service();
    size_t n = Endpoint::contexts_for(info, scalable);
    for (size_t i = 0; i < std::size(kEndpointRsrcs); i++) {
        if (int ret = hold.take(kEndpointRsrcs[i], unsigned(n))) {
            while (i--)
                hold.give(kEndpointRsrcs[i], unsigned(n));
            return ret;
        }
    }
    int ret = guarded([&] {
        out = (new Endpoint(d, info, context, scalable, vni))->fid();
        return 0;
    });
    if (ret)
        for (cxi_rsrc_type t : kEndpointRsrcs)
            hold.give(t, unsigned(n));
    return ret;
}

}  // namespace

int endpoint_open(fid_domain *domain, fi_info *info, fid_ep **ep, void *context) {
    if (!domain || !info || !ep) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "NULL info or ep\n");
    Domain *d = owner_of<Domain>(domain);
    if (info->ep_attr && raw_enum(info->ep_attr->type) != FI_EP_RDM &&
        raw_enum(info->ep_attr->type) != FI_EP_UNSPEC)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "cxi endpoints are FI_EP_RDM only\n");
    if (info->tx_attr && info->tx_attr->size > kTxSizeMax)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "tx size %zu > %zu\n", info->tx_attr->size,
                  kTxSizeMax);
    if (info->rx_attr && info->rx_attr->size > kRxSizeMax)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "rx size %zu > %zu\n", info->rx_attr->size,
                  kRxSizeMax);
    if (info->tx_attr && !tclass_valid(info->tx_attr->tclass))
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "bad tclass 0x%x\n", info->tx_attr->tclass);
    if (info->src_addr) {
        if (info->src_addrlen < addr_len(d->api_version()))
            SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "src_addr is not an FI_ADDR_CXI\n");
        if (read_addr(info->src_addr, info->src_addrlen).nic != d->nic().addr)
            SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "src_addr NIC is not this domain's NIC\n");
    }
    return open_endpoint(*d, *info, context, false, *ep);
}

int scalable_ep_open(fid_domain *domain, fi_info *info, fid_ep **sep, void *context) {
    if (!domain || !info || !sep) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "NULL info or sep\n");
    if (info->ep_attr &&
        (info->ep_attr->tx_ctx_cnt > kMaxContexts || info->ep_attr->rx_ctx_cnt > kMaxContexts))
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "at most %zu contexts\n", kMaxContexts);
    if (info->ep_attr && raw_enum(info->ep_attr->type) != FI_EP_RDM &&
        raw_enum(info->ep_attr->type) != FI_EP_UNSPEC)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "cxi endpoints are FI_EP_RDM only\n");
    return open_endpoint(*owner_of<Domain>(domain), *info, context, true, *sep);
}

PidEngine *engine_of(fid_ep *ep) {
    if (!ep || (ep->fid.fclass != FI_CLASS_EP && ep->fid.fclass != FI_CLASS_RX_CTX)) return nullptr;
    return view_of(ep)->engine;
}

bool Endpoint::remote_events() const {
    return (caps_ & FI_RMA_EVENT) || domain_.options().mr_match_events;
}

bool Endpoint::target_events(uint64_t key) const {
    if (domain_.mrs().prov_keys() && (key & kProvKey)) return key & kProvKeyEvents;
    return caps_ & FI_RMA_EVENT;
}

}  // namespace softnic::cxi

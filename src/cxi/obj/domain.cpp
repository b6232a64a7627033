// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "cxi/obj/domain.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "common/av.hpp"
#include "common/cntr.hpp"
#include "common/cq.hpp"
#include "common/poll_set.hpp"
#include "cxi/obj/addr.hpp"
#include "cxi/obj/cntr.hpp"
#include "cxi/obj/dom_ext.hpp"
#include "cxi/obj/endpoint.hpp"
#include "cxi/obj/fabric.hpp"
#include "cxi/one_sided/atomic.hpp"
#include "cxi/prov/env.hpp"
#include "transport/shm/shm_transport.hpp"

namespace softnic::cxi {
namespace {

Domain *dom_of(fid_domain *f) {
    return owner_of<Domain>(f);
}

uint64_t av_key(const void *a) {
    return addr_key(*static_cast<const CxiAddr *>(a)) & ~(0xffffULL << 32);
}
bool av_valid(const void *) {
    return true;
}  // any 20-bit NIC / 9-bit PID pair is insertable
int av_from_service(const char *node, const char *service, void *out) {
    uint32_t nic = 0, pid = 0;
    if (!parse_node(node, nic)) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "bad node \"%s\"\n", node);
    if (!parse_service(service, pid))
        SN_REJECT(-FI_EINVAL, FI_LOG_AV, "bad service \"%s\"\n", service);
    *static_cast<CxiAddr *>(out) = make_addr(nic, pid);
    return 0;
}
std::string av_to_string(const void *a) {
    return addr_to_string(*static_cast<const CxiAddr *>(a));
}

uint64_t av_key_with_vni(const void *a) {
    return addr_key(*static_cast<const CxiAddr *>(a));
}

// FI_AV_AUTH_KEY: a key names the domain's service (or none: svc_id 0) and a VNI the
// service allows; an address inserted under it is reached on that VNI.
AvAuthKeys av_auth_keys(Domain &dom, size_t max) {
    AvAuthKeys k;
    k.max_keys = max;
    k.key_size = sizeof(cxi_auth_key);
    k.check = [&dom](uint8_t *raw) {
        cxi_auth_key key;
        std::memcpy(&key, raw, sizeof(key));
        if (key.svc_id && key.svc_id != dom.svc_id())
            SN_REJECT(-FI_EINVAL, FI_LOG_AV, "auth key service %u is not the domain's (%u)\n",
                      key.svc_id, dom.svc_id());
        if (!cxil::vni_allowed(dom.service()->service(), key.vni))
            SN_REJECT(-FI_EINVAL, FI_LOG_AV, "CXI service %u does not allow VNI %u\n", dom.svc_id(),
                      key.vni);
        cxi_auth_key canon{};  // the VNI alone identifies the key (no padding bytes)
        canon.vni = key.vni;
        std::memcpy(raw, &canon, sizeof(canon));
        return 0;
    };
    k.apply = [](void *addr, const void *raw) {
        cxi_auth_key key;
        std::memcpy(&key, raw, sizeof(key));
        static_cast<CxiAddr *>(addr)->vni = key.vni;
    };
    return k;
}

const AvAddressing kCxiAddressing = {sizeof(CxiAddr), av_key, av_valid, av_from_service,
                                     av_to_string};

int av_open(fid_domain *d, fi_av_attr *attr, fid_av **av, void *context) {
    if (!attr || !av) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "NULL attr or av\n");
    int ret = Av::check_attr(*attr);
    if (ret) return ret;
    if ((attr->flags & FI_AV_USER_ID) && !(dom_of(d)->info().caps & FI_AV_USER_ID) &&
        !(dom_of(d)->info().domain_attr->caps & FI_AV_USER_ID))
        SN_REJECT(-FI_EINVAL, FI_LOG_AV, "FI_AV_USER_ID needs the domain capability\n");
    return guarded([&] {
        Domain &dom = *dom_of(d);
        AvAddressing addressing = kCxiAddressing;
        addressing.addrlen = addr_len(dom.api_version());
        if (dom.av_auth_keys()) addressing.key = av_key_with_vni;  // (NIC, PID) per VNI
        Av *a = new Av(*attr, addressing, context);
        a->fid()->fid.ops = &av_fid_ops;
        a->allow_sets();  // collectives join over AV sets
        if (size_t max = dom.av_auth_keys()) a->use_auth_keys(av_auth_keys(dom, max));
        int r = a->init(*attr);
        if (r) {
            delete a;
            return r;
        }
        if (void *m = a->map_addr()) attr->map_addr = m;
        a->hold_parent(dom_of(d)->refs());
        *av = a->fid();
        return 0;
    });
}

int cq_open(fid_domain *d, fi_cq_attr *attr, fid_cq **cq, void *context) {
    if (!cq) SN_REJECT(-FI_EINVAL, FI_LOG_CQ, "NULL cq\n");
    fi_cq_attr dflt{};
    if (!attr) attr = &dflt;
    int ret = Cq::check_attr(*attr);
    if (ret) return ret;
    std::shared_ptr<ServiceHold> hold = dom_of(d)->service();
    if (int ret = hold->take(CXI_RSRC_TYPE_EQ)) return ret;
    return guarded([&] {
        Cq *c =
            new Cq(dom_of(d)->api_version(), *attr, env().default_cq_size, context, prov_strerror);
        c->on_close([hold] { hold->give(CXI_RSRC_TYPE_EQ); });
        c->hold_parent(dom_of(d)->refs());
        c->serialise_by(dom_of(d)->serial());
        *cq = c->fid();
        return 0;
    });
}

int poll_open(fid_domain *d, fi_poll_attr *attr, fid_poll **ps) {
    return poll_set_open(dom_of(d)->refs(), attr, ps, true);
}
int stx_ctx(fid_domain *, fi_tx_attr *, fid_stx **, void *) {
    SN_REJECT(-FI_ENOSYS, FI_LOG_DOMAIN, "shared TX contexts are not supported\n");
}
int srx_ctx(fid_domain *, fi_rx_attr *, fid_ep **, void *) {
    SN_REJECT(-FI_ENOSYS, FI_LOG_DOMAIN, "shared RX contexts are not supported\n");
}
int query_atomic(fid_domain *, fi_datatype dt, fi_op op, fi_atomic_attr *attr, uint64_t flags) {
    return amo_query(dt, op, attr, flags);
}
int endpoint2(fid_domain *d, fi_info *info, fid_ep **ep, uint64_t flags, void *context) {
    if (flags) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "fi_endpoint2 flags must be 0\n");
    return endpoint_open(d, info, ep, context);
}

fi_ops_domain domain_ops = {sizeof(fi_ops_domain),
                            av_open,
                            cq_open,
                            endpoint_open,
                            scalable_ep_open,
                            counter_open,
                            poll_open,
                            stx_ctx,
                            srx_ctx,
                            query_atomic,
                            coll_query,
                            endpoint2};

// The memory an MR covers: attr.iface exists for applications of API 1.10 and later
// (older ones pass a shorter attr). Host memory, or CUDA device memory where a driver is.
int mr_memory(const Domain &d, const fi_mr_attr &attr, hmem::Where &where) {
    if (FI_VERSION_LT(d.api_version(), FI_VERSION(1, 10)) || attr.iface == FI_HMEM_SYSTEM) return 0;
    if (attr.iface != FI_HMEM_CUDA)
        SN_REJECT(-FI_ENOSYS, FI_LOG_MR, "memory interface %d is not supported\n", attr.iface);
    if (!hmem::cuda_available())
        SN_REJECT(-FI_ENOSYS, FI_LOG_MR, "FI_HMEM_CUDA registration: %s\n",
                  hmem::cuda_unavailable_reason());
    where = hmem::Where{FI_HMEM_CUDA, attr.device.cuda};
    if (attr.iov_count == 1 && attr.mr_iov && attr.mr_iov[0].iov_len)
        hmem::sync_memops(attr.mr_iov[0].iov_base, where.device);
    return 0;
}

int mr_regattr(fid *f, const fi_mr_attr *attr, uint64_t flags, fid_mr **mr) {
    if (!attr || !mr) SN_REJECT(-FI_EINVAL, FI_LOG_MR, "NULL attr or mr\n");
    if (f->fclass != FI_CLASS_DOMAIN) SN_REJECT(-FI_EINVAL, FI_LOG_MR, "not a domain\n");
    Domain *d = owner_of_fid<Domain, fid_domain>(f);
    hmem::Where where;
    if (int ret = mr_memory(*d, *attr, where)) return ret;
    return guarded([&] {
        Mr *m = nullptr;
        int ret = Mr::create(d->mrs(), d->fid(), *attr, flags, &m, where);
        if (ret) return ret;
        m->hold_parent(d->refs());
        *mr = m->fid();
        return ret;
    });
}
int mr_regv(fid *f, const iovec *iov, size_t count, uint64_t access, uint64_t offset, uint64_t key,
            uint64_t flags, fid_mr **mr, void *context) {
    fi_mr_attr attr{};
    attr.mr_iov = iov;
    attr.iov_count = count;
    attr.access = access;
    attr.offset = offset;
    attr.requested_key = key;
    attr.context = context;
    return mr_regattr(f, &attr, flags, mr);
}
int mr_reg(fid *f, const void *buf, size_t len, uint64_t access, uint64_t offset, uint64_t key,
           uint64_t flags, fid_mr **mr, void *context) {
    iovec iov{const_cast<void *>(buf), len};
    return mr_regv(f, &iov, 1, access, offset, key, flags, mr, context);
}
fi_ops_mr mr_ops = {sizeof(fi_ops_mr), mr_reg, mr_regv, mr_regattr};

int domain_close(fid *f) {
    Domain *d = owner_of_fid<Domain, fid_domain>(f);
    if (d->refs().busy()) SN_REJECT(-FI_EBUSY, FI_LOG_DOMAIN, "domain has open objects\n");
    delete d;
    return 0;
}

int domain_bind(fid *f, fid *bfid, uint64_t flags) {
    (void)flags;
    if (!bfid || bfid->fclass != FI_CLASS_EQ)
        SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "only an EQ can be bound to a domain\n");
    return owner_of_fid<Domain, fid_domain>(f)->bind_eq(bfid);
}

fi_ops domain_fid_ops = make_fid_ops(domain_close, domain_bind, domain_control, domain_ops_open);

}  // namespace

Domain::Domain(Fabric &fabric, const fi_info &info, const SoftNic &nic, void *context, AuthKey key,
               std::shared_ptr<ServiceHold> hold)
    : fabric_(fabric),
      nic_(nic),
      vni_(key.vni),
      svc_id_(key.svc_id),
      hold_(std::move(hold)),
      info_(fi_dupinfo(&info)),
      mrs_(info.domain_attr->mr_mode & FI_MR_PROV_KEY, info.domain_attr->mr_mode & FI_MR_ENDPOINT) {
    handle_.owner = this;
    handle_.fid.fid.fclass = FI_CLASS_DOMAIN;
    handle_.fid.fid.context = context;
    handle_.fid.fid.ops = &domain_fid_ops;
    handle_.fid.ops = &domain_ops;
    handle_.fid.mr = &mr_ops;
    mrs_.bind_endpoint = [this](struct fid *ep, uint64_t mr_flags, RefCount **refs) {
        if (ep->fclass != FI_CLASS_EP)
            SN_REJECT(-FI_EINVAL, FI_LOG_MR, "MRs bind to plain endpoints\n");
        Endpoint &e = *owner_of_fid<EpView, fid_ep>(ep)->ep;
        if (&e.domain() != this) SN_REJECT(-FI_EINVAL, FI_LOG_MR, "endpoint of another domain\n");
        if (!e.enabled()) SN_REJECT(-FI_EINVAL, FI_LOG_MR, "endpoint is not enabled\n");
        if ((mr_flags & FI_RMA_EVENT) && !(e.caps() & FI_RMA_EVENT))
            SN_REJECT(-FI_EINVAL, FI_LOG_MR, "FI_RMA_EVENT MR on an endpoint without the cap\n");
        e.refs().get();
        *refs = &e.refs();
        return 0;
    };
    const Env &e = env();
    if (info.domain_attr->threading == FI_THREAD_DOMAIN && e.serial_domain &&
        DomainSerial::available()) {
        serial_ = std::make_unique<DomainSerial>();
        SN_INFO(FI_LOG_DOMAIN, "%s: FI_THREAD_DOMAIN, the data path takes no lock\n",
                nic.name.c_str());
    } else if (info.domain_attr->threading == FI_THREAD_COMPLETION && e.serial_domain &&
               DomainSerial::available()) {
        completion_serial_ = true;
        SN_INFO(FI_LOG_DOMAIN, "%s: FI_THREAD_COMPLETION, each endpoint takes no lock\n",
                nic.name.c_str());
    }
    size_t mtu = e.udp_mtu ? e.udp_mtu : nic.mtu;
    udp_cfg_.max_datagram = std::min<size_t>(mtu > 576 ? mtu - 28 : 548, 65507);
    udp_cfg_.window = uint32_t(e.udp_window);
    udp_cfg_.retry_limit = unsigned(e.udp_retry_limit);
    udp_cfg_.dead_after_ms = uint32_t(e.udp_dead_timeout);
    udp_cfg_.offload = e.udp_gso;
    udp_cfg_.faults = e.fault_config;
    open_window();
    mrs_.make_prov_key = [this](const Mr &mr, uint64_t seq) { return prov_key(mr, seq); };
    mrs_.on_withdraw = [this](uint64_t key) { mr_withdrawn(key); };
    if (e.enable_trig_op_limit) {  // one budget per user and NIC, as per service
        char name[64];
        std::snprintf(name, sizeof(name), "/softnic-trig-%u-%05x", unsigned(getuid()), nic.addr);
        deferred_.limit(name, kTrigOpDepth);
    }
    fabric_.refs().get();
}

Domain::~Domain() {
    hold_->give(CXI_RSRC_TYPE_AC);
    fi_freeinfo(info_);
    fabric_.refs().put();
}

int Domain::bind_eq(struct fid *eq) {
    if (eq_) SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "an EQ is already bound\n");
    eq_ = eq;
    return 0;
}

// Provider keys (spec §6.1): bit 63, the flags optimized (61), events (60) and remote
// CQ data (59), a 16-bit MR id and a 43-bit sequence that never repeats. MRs with
// one of the first 92 ids are optimized when the domain allows it and the MR needs
// neither events nor CQ data. Runs under the MR table's lock, as mr_withdrawn does.
uint64_t Domain::prov_key(const Mr &mr, uint64_t seq) {
    uint32_t id =
        std::min<uint32_t>(mr_id_free_, uint32_t(mr_ids_.size() - 1));  // none lower is free
    while (id + 1 < mr_ids_.size() && mr_ids_[id])
        id++;
    mr_ids_[id] = true;  // (the last id is shared once all others are taken)
    mr_id_free_ = id + 1;
    bool events = (mr.flags() & FI_RMA_EVENT) || options_.mr_match_events;
    bool cq_data = writedata() && env().writedata_layout;
    bool opt = options_.optimized_mrs && !events && !cq_data && id < kOptimizedProvIds;
    return kProvKey | (opt ? kProvKeyOptimized : 0) | (events ? kProvKeyEvents : 0) |
           (cq_data ? kProvKeyCqData : 0) | (uint64_t(id) << 43) | (seq & ((1ULL << 43) - 1));
}

void Domain::mr_withdrawn(uint64_t key) {
    if (window_) window_->withdraw(key);
    if (!mrs_.prov_keys()) return;
    uint32_t id = (key >> 43) & 0xffff;
    mr_ids_[id] = false;
    mr_id_free_ = std::min(mr_id_free_, id);
}

uint32_t Domain::api_version() const {
    return fabric_.fid()->api_version;
}

bool Domain::optimized_key(uint64_t key) const {
    if (mrs_.prov_keys()) return key & kProvKeyOptimized;
    return options_.optimized_mrs && key < kOptimizedKeys;
}

bool Domain::writedata() const {
    return env().enable_writedata && mrs_.prov_keys() && info_->domain_attr->cq_data_size > 0;
}

int domain_open(fid_fabric *fabric, fi_info *info, fid_domain **domain, void *context) {
    if (!fabric || !info || !domain || !info->domain_attr)
        SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "NULL fabric, info or domain\n");
    const char *name = info->domain_attr->name;
    const SoftNic *nic = name ? find_nic(name) : nullptr;
    if (!nic)
        SN_REJECT(-FI_ENODATA, FI_LOG_DOMAIN, "no soft NIC named %s\n", name ? name : "(null)");
    AuthKey key;
    // FI_AV_AUTH_KEY: the endpoints take their keys from the AV; the domain uses the
    // default service (whose VNIs those keys must name).
    const bool av_keys = SOFTNIC_HAS_AV_AUTH_KEY && info->domain_attr->auth_key_size == kAvAuthKey;
    if (av_keys && info->domain_attr->auth_key)
        SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "FI_AV_AUTH_KEY takes no domain auth_key\n");
    int given =
        av_keys ? 0
                : read_auth_key(info->domain_attr->auth_key, info->domain_attr->auth_key_size, key);
    if (given < 0)
        SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "auth_key must be a struct cxi_auth_key (%zu bytes)\n",
                  sizeof(cxi_auth_key));
    if (!given && !default_auth_key(*nic, key))
        SN_REJECT(-FI_ENOSYS, FI_LOG_DOMAIN, "%s: no CXI service is available to this process\n",
                  nic->name.c_str());
    cxil::Service svc;
    if (int ret = check_auth_key(*nic, key, &svc)) return ret;
    Fabric *fab = owner_of<Fabric>(fabric);
    return guarded([&] {
        auto hold = std::make_shared<ServiceHold>(*nic, svc);
        if (int ret = hold->take(CXI_RSRC_TYPE_AC)) return ret;
        *domain = (new Domain(*fab, *info, *nic, context, key, hold))->fid();
        return 0;
    });
}

}  // namespace softnic::cxi

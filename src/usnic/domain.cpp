// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "usnic/domain.hpp"

#include <rdma/fi_endpoint.h>

#include <cstring>

#include "common/eq.hpp"
#include "common/fi_api.hpp"
#include "common/log.hpp"
#include "common/not_supported.hpp"
#include "common/poll_set.hpp"
#include "usnic/addr.hpp"
#include "usnic/av.hpp"
#include "usnic/cq.hpp"
#include "usnic/endpoint.hpp"
#include "usnic/info_check.hpp"

namespace softnic::usnic {
namespace {

// Registration is bookkeeping only: sockets need no pinned memory. Key 0, no desc.
// libfabric's utility providers (ofi_rxd) pass their internal "do not cache" flag
// (bit 60), which means nothing here.
constexpr uint64_t kMrNoCache = 1ULL << 60;
struct Mr {
    Handle<fid_mr, Mr> handle;
    Domain *domain;
};

int mr_close(fid *f) {
    Mr *mr = owner_of_fid<Mr, fid_mr>(f);
    mr->domain->refs().put();
    delete mr;
    return 0;
}
fi_ops mr_fid_ops = make_fid_ops(mr_close, fid_no_bind, fid_no_control, fid_no_ops_open);

int make_mr(fid *f, size_t count, uint64_t flags, fid_mr **out, void *context) {
    if (!f || f->fclass != FI_CLASS_DOMAIN || !out)
        SN_REJECT(-FI_EINVAL, FI_LOG_MR, "registrations are made on a domain\n");
    if (flags & ~kMrNoCache)
        SN_REJECT(-FI_EBADFLAGS, FI_LOG_MR, "no registration flags are supported\n");
    if (count > 1) SN_REJECT(-FI_EINVAL, FI_LOG_MR, "one iov per registration at most\n");
    return guarded([&] {
        auto *mr = new Mr{};
        mr->domain = owner_of_fid<Domain, fid_domain>(f);
        mr->handle.owner = mr;
        mr->handle.fid.fid.fclass = FI_CLASS_MR;
        mr->handle.fid.fid.context = context;
        mr->handle.fid.fid.ops = &mr_fid_ops;
        mr->handle.fid.key = 0;
        mr->handle.fid.mem_desc = nullptr;
        mr->domain->refs().get();
        *out = &mr->handle.fid;
        return 0;
    });
}
int mr_reg(fid *f, const void *, size_t, uint64_t, uint64_t, uint64_t, uint64_t flags, fid_mr **mr,
           void *context) {
    return make_mr(f, 1, flags, mr, context);
}
int mr_regv(fid *f, const iovec *, size_t count, uint64_t, uint64_t, uint64_t, uint64_t flags,
            fid_mr **mr, void *context) {
    return make_mr(f, count, flags, mr, context);
}
int mr_regattr(fid *f, const fi_mr_attr *attr, uint64_t flags, fid_mr **mr) {
    if (!attr) SN_REJECT(-FI_EINVAL, FI_LOG_MR, "NULL attr\n");
    return make_mr(f, attr->iov_count, flags, mr, attr->context);
}
fi_ops_mr mr_ops = {sizeof(fi_ops_mr), mr_reg, mr_regv, mr_regattr};

int domain_close(fid *f) {
    Domain *d = owner_of_fid<Domain, fid_domain>(f);
    if (d->refs().busy()) SN_REJECT(-FI_EBUSY, FI_LOG_DOMAIN, "domain still has objects\n");
    delete d;
    return 0;
}
int domain_bind(fid *f, fid *bfid, uint64_t flags) {
    return owner_of_fid<Domain, fid_domain>(f)->bind(bfid, flags);
}

int dom_av_open(fid_domain *d, fi_av_attr *attr, fid_av **av, void *context) {
    return guarded([&] { return av_open(Domain::of(d), attr, av, context); });
}
int dom_cq_open(fid_domain *d, fi_cq_attr *attr, fid_cq **cq, void *context) {
    return guarded([&] { return cq_open(Domain::of(d), attr, cq, context); });
}
int dom_endpoint(fid_domain *d, fi_info *info, fid_ep **ep, void *context) {
    return guarded([&] { return endpoint_open(Domain::of(d), info, ep, context); });
}
int dom_scalable_ep(fid_domain *, fi_info *, fid_ep **, void *) {
    SN_REJECT(-FI_ENOSYS, FI_LOG_DOMAIN, "usnic has no scalable endpoints\n");
}
int dom_cntr_open(fid_domain *, fi_cntr_attr *, fid_cntr **, void *) {
    SN_REJECT(-FI_ENOSYS, FI_LOG_DOMAIN, "usnic has no counters\n");
}
int dom_poll_open(fid_domain *d, fi_poll_attr *attr, fid_poll **ps) {
    return poll_set_open(Domain::of(d)->refs(), attr, ps, false);  // usnic has no counters
}
int dom_stx_ctx(fid_domain *, fi_tx_attr *, fid_stx **, void *) {
    SN_REJECT(-FI_ENOSYS, FI_LOG_DOMAIN, "usnic has no shared transmit contexts\n");
}
int dom_srx_ctx(fid_domain *, fi_rx_attr *, fid_ep **, void *) {
    SN_REJECT(-FI_ENOSYS, FI_LOG_DOMAIN, "usnic has no shared receive contexts\n");
}
int dom_query_atomic(fid_domain *, fi_datatype, fi_op, fi_atomic_attr *, uint64_t) {
    SN_REJECT(-FI_EOPNOTSUPP, FI_LOG_DOMAIN, "usnic has no atomics\n");
}
int dom_query_collective(fid_domain *, fi_collective_op, fi_collective_attr *, uint64_t) {
    SN_REJECT(-FI_ENOSYS, FI_LOG_DOMAIN, "usnic has no collectives\n");
}

fi_ops domain_fid_ops = make_fid_ops(domain_close, domain_bind, fid_no_control, fid_no_ops_open);
fi_ops_domain make_domain_ops() {
    fi_ops_domain o{};
    o.size = sizeof(o);
    o.av_open = dom_av_open;
    o.cq_open = dom_cq_open;
    o.endpoint = dom_endpoint;
    o.scalable_ep = dom_scalable_ep;
    o.cntr_open = dom_cntr_open;
    o.poll_open = dom_poll_open;
    o.stx_ctx = dom_stx_ctx;
    o.srx_ctx = dom_srx_ctx;
    o.query_atomic = dom_query_atomic;
    o.query_collective = dom_query_collective;
    SN_NOT_SUPPORTED(o, endpoint2);
    return o;
}
fi_ops_domain domain_ops = make_domain_ops();

}  // namespace

Domain::Domain(Fabric *fabric, const fi_info &info, void *context)
    : fabric_(fabric), addr_format_(info.addr_format), api_version_(fabric->fid()->api_version) {
    handle_.owner = this;
    handle_.fid.fid.fclass = FI_CLASS_DOMAIN;
    handle_.fid.fid.context = context;
    handle_.fid.fid.ops = &domain_fid_ops;
    handle_.fid.ops = &domain_ops;
    handle_.fid.mr = &mr_ops;
    fabric_->refs().get();
}

Domain::~Domain() {
    if (eq_) eq_->refs().put();
    fabric_->refs().put();
}

int Domain::bind(::fid *f, uint64_t flags) {
    if (!f || f->fclass != FI_CLASS_EQ)
        SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "domains bind EQs only\n");
    if (flags & kRegMrFlag)
        SN_REJECT(-FI_EOPNOTSUPP, FI_LOG_DOMAIN, "asynchronous registration is not supported\n");
    if (eq_) SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "the domain already has an EQ\n");
    eq_ = Eq::of(reinterpret_cast<fid_eq *>(f));
    eq_->refs().get();
    return 0;
}

int domain_open(Fabric *fabric, fi_info *info, fid_domain **dom, void *context) {
    if (!info || !dom) SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "NULL info or domain\n");
    const Device &dev = fabric->device();
    if (info->domain_attr && info->domain_attr->name && dev.name != info->domain_attr->name)
        SN_REJECT(-FI_ENODATA, FI_LOG_DOMAIN, "domain %s is not on fabric %s\n",
                  info->domain_attr->name, dev.name.c_str());
    if (check_mr_mode(*info, fabric->fid()->api_version))
        SN_REJECT(-FI_ENODATA, FI_LOG_DOMAIN, "memory registration mode not supported\n");
    uint32_t fmt = info->addr_format;
    if (!is_sockaddr_format(fmt) && fmt != FI_ADDR_STR)
        SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "address format %u not supported\n", fmt);
    sockaddr_in src{};
    if (!info->src_addr || !from_user(fmt, info->src_addr, src))
        SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "the info needs the device's source address\n");
    if (fmt != FI_ADDR_STR && info->src_addrlen != sizeof(sockaddr_in) &&
        info->src_addrlen != sizeof(sockaddr))
        SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "bad source address length %zu\n", info->src_addrlen);
    if (src.sin_addr.s_addr != dev.ip_be)
        SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "source address is not %s's\n", dev.name.c_str());
    auto *d = new Domain(fabric, *info, context);
    *dom = d->fid();
    return 0;
}

}  // namespace softnic::usnic

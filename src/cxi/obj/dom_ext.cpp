// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "cxi/obj/dom_ext.hpp"

#include <rdma/fi_cxi_ext.h>
#include <strings.h>

#include <cstring>

#include "common/log.hpp"
#include "cxi/obj/domain.hpp"
#include "cxi/obj/endpoint.hpp"
#include "cxi/prov/env.hpp"

namespace softnic::cxi {
namespace {

Domain *domain_of(fid *f) {
    return f && f->fclass == FI_CLASS_DOMAIN ? owner_of_fid<Domain, fid_domain>(f) : nullptr;
}

int cntr_read(fid *f, unsigned int id, uint64_t *value, timespec *ts) {
    Domain *d = domain_of(f);
    if (!d || !value) SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "not a domain, or NULL value\n");
    if (id >= C1_CNTR_SIZE) SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "no counter %u\n", id);
    *value = d->hw_counter(id);
    if (ts) clock_gettime(CLOCK_REALTIME, ts);  // a fresh snapshot on every read
    return 0;
}

int topology(fid *f, unsigned int *group, unsigned int *sw, unsigned int *port) {
    Domain *d = domain_of(f);
    if (!d) SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "not a domain\n");
    uint32_t a = d->nic().addr;
    if (group) *group = (a >> 11) & 0x1ff;
    if (sw) *sw = (a >> 6) & 0x1f;
    if (port) *port = a & 0x3f;
    return 0;
}

int enable_hybrid_mr_desc(fid *f, bool enable) {
    Domain *d = domain_of(f);
    if (!d) SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "not a domain\n");
    d->options().hybrid_mr_desc = enable;
    return 0;
}

size_t ep_get_unexp_msgs(fid_ep *ep, fi_cq_tagged_entry *entries, size_t count, fi_addr_t *src,
                         size_t *ux_count) {
    if (!ux_count) return size_t(-FI_EINVAL);
    PidEngine *c = engine_of(ep);
    if (!c || !c->is_open()) return size_t(-FI_EOPBADSTATE);
    if (!(c->caps() & FI_RECV) && (c->caps() & (FI_SEND | FI_RECV))) return size_t(-FI_EINVAL);
    return c->unexpected(count ? entries : nullptr, count, src, ux_count);
}

int get_dwq_depth(fid *f, size_t *depth) {
    if (!domain_of(f) || !depth) SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "bad arguments\n");
    *depth = kTrigOpDepth;
    return 0;
}

int enable_mr_match_events(fid *f, bool enable) {
    Domain *d = domain_of(f);
    if (!d) SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "not a domain\n");
    d->options().mr_match_events = enable;
    return 0;
}

int enable_optimized_mrs(fid *f, bool enable) {
    Domain *d = domain_of(f);
    if (!d || !d->mrs().prov_keys())
        SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "needs a domain with FI_MR_PROV_KEY\n");
    d->options().optimized_mrs = enable;
    return 0;
}

fi_cxi_dom_ops dom_ops = {cntr_read,           topology,      enable_hybrid_mr_desc,
                          ep_get_unexp_msgs,   get_dwq_depth, enable_mr_match_events,
                          enable_optimized_mrs};

int bool_option(Domain &d, int command, bool *v) {
    auto &o = d.options();
    switch (command) {
        case FI_OPT_CXI_SET_OPTIMIZED_MRS:
            return enable_optimized_mrs(d.fid() ? &d.fid()->fid : nullptr, *v);
        case FI_OPT_CXI_GET_OPTIMIZED_MRS:
            *v = o.optimized_mrs;
            return 0;
        case FI_OPT_CXI_SET_MR_MATCH_EVENTS:
            o.mr_match_events = *v;
            return 0;
        case FI_OPT_CXI_GET_MR_MATCH_EVENTS:
            *v = o.mr_match_events;
            return 0;
        case FI_OPT_CXI_SET_PROV_KEY_CACHE:
            if (!d.mrs().prov_keys())
                SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "needs a domain with FI_MR_PROV_KEY\n");
            o.prov_key_cache = *v;
            return 0;
        case FI_OPT_CXI_GET_PROV_KEY_CACHE:
            *v = o.prov_key_cache;
            return 0;
    }
    return 1;
}

}  // namespace

int domain_ops_open(fid *f, const char *name, uint64_t, void **ops, void *) {
    if (!name || !ops) SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "NULL name or ops\n");
    for (const char *n : {FI_CXI_DOM_OPS_1, FI_CXI_DOM_OPS_2, FI_CXI_DOM_OPS_3, FI_CXI_DOM_OPS_4,
                          FI_CXI_DOM_OPS_5, FI_CXI_DOM_OPS_6}) {
        if (!std::strcmp(name, n)) {
            *ops = &dom_ops;
            return 0;
        }
    }
    (void)f;
    SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "unknown domain ops \"%s\"\n", name);
}

int domain_control(fid *f, int command, void *arg) {
    Domain *d = domain_of(f);
    if (!d) return -FI_EINVAL;
    switch (command) {
        case FI_QUEUE_WORK:
            return d->deferred().queue(static_cast<fi_deferred_work *>(arg), d);
        case FI_CANCEL_WORK:
            return d->deferred().cancel(static_cast<fi_deferred_work *>(arg));
        case FI_FLUSH_WORK:
            return d->deferred().flush();
    }
    if (!arg) SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "NULL argument\n");
    int r = bool_option(*d, command, static_cast<bool *>(arg));
    if (r <= 0) return r;
    auto &o = d->options();
    switch (command) {
        case FI_OPT_CXI_SET_RX_MATCH_MODE_OVERRIDE: {
            const char *m = static_cast<const char *>(arg);
            for (const char *ok : {"hardware", "software", "hybrid"})
                if (!strcasecmp(m, ok)) {
                    o.rx_match_mode = ok;
                    return 0;
                }
            SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "unknown match mode \"%s\"\n", m);
        }
        case FI_OPT_CXI_GET_RX_MATCH_MODE_OVERRIDE:
            std::strcpy(static_cast<char *>(arg), o.rx_match_mode.c_str());
            return 0;
        case FI_OPT_CXI_SET_REQ_BUF_SIZE_OVERRIDE: {
            size_t v = *static_cast<size_t *>(arg);
            if (!v) SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "request buffer size 0\n");
            o.req_buf_size = std::max(v, 63 + env().rdzv_threshold + env().rdzv_get_min);
            return 0;
        }
        case FI_OPT_CXI_GET_REQ_BUF_SIZE_OVERRIDE:
            *static_cast<size_t *>(arg) = o.req_buf_size ? o.req_buf_size : env().req_buf_size;
            return 0;
    }
    SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "unsupported domain control %d\n", command);
}

}  // namespace softnic::cxi

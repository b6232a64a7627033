// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "cxi/prov/getinfo.hpp"

#include <cstdlib>
#include <cstring>

#include "common/fi_api.hpp"
#include "common/fid.hpp"
#include "common/hmem.hpp"
#include "common/info.hpp"
#include "common/log.hpp"
#include "cxi/obj/addr.hpp"
#include "cxi/prov/auth.hpp"
#include "cxi/prov/caps.hpp"
#include "cxi/prov/env.hpp"
#include "cxi/prov/nic.hpp"
#include "cxi/prov/nic_info.hpp"

namespace softnic::cxi {
namespace {

struct Request {
    bool restrict_nic = false;
    uint32_t nic = 0;  // with restrict_nic: only this NIC
    uint32_t src_pid = kPidAny;
    bool src_pid_preferred = false;  // from a port-like service: any PID if it is held
    bool has_dest = false;
    CxiAddr dest{};
};

// The info one soft NIC offers with provider keys (prov_key) or client keys, for
// FI_PROTO_CXI or the receiver-not-ready protocol (rnr).
// `dflt`: the key this process gets without asking (rgroup 0 and no VNI for none).
fi_info *offer(const SoftNic &nic, bool prov_key, bool rnr, const AuthKey &dflt, uint64_t hmem) {
    fi_info *i = fi_allocinfo();
    if (!i) return nullptr;
    i->caps = kCaps | hmem;
    i->mode = 0;
    i->addr_format = FI_ADDR_CXI;
    auto *src = static_cast<CxiAddr *>(std::calloc(1, sizeof(CxiAddr)));
    *src = make_addr(nic.addr, kPidAny);
    i->src_addr = src;
    i->src_addrlen = sizeof(CxiAddr);
    *i->tx_attr = fi_tx_attr{kTxCaps | hmem, 0,          kTxOpFlags, kMsgOrder, 0,
                             kInjectSize,    kTxSizeMax, 1,          1,         FI_TC_UNSPEC};
    i->rx_attr->caps = kRxCaps | hmem;
    i->rx_attr->op_flags = kRxOpFlags;
    i->rx_attr->msg_order = kMsgOrder;
    i->rx_attr->size = kRxSizeMax;
    i->rx_attr->iov_limit = 1;
    if (rnr) {
        i->tx_attr->msg_order = i->rx_attr->msg_order = kRnrMsgOrder;
        i->tx_attr->inject_size = 0;
    }
    fi_ep_attr &ep = *i->ep_attr;
    ep.type = FI_EP_RDM;
    ep.protocol = rnr ? FI_PROTO_CXI_RNR : FI_PROTO_CXI;
    ep.protocol_version = 1;
    ep.max_msg_size = kMaxMsgSize;
    // fi_cxi(7): writes, non-fetching and fetching AMOs of any size stay in order.
    ep.max_order_raw_size = ep.max_order_war_size = ep.max_order_waw_size = SIZE_MAX;
    ep.mem_tag_format = rnr ? kRnrMemTagFormat : kMemTagFormat;
    ep.tx_ctx_cnt = ep.rx_ctx_cnt = 1;
    fi_domain_attr &d = *i->domain_attr;
    d.name = strdup(nic.name.c_str());
    d.threading = FI_THREAD_SAFE;
    d.control_progress = d.data_progress = FI_PROGRESS_MANUAL;
    d.resource_mgmt = FI_RM_ENABLED;
    d.av_type = FI_AV_UNSPEC;
    d.mr_mode = prov_key ? kMrModeProvKey : kMrModeClientKey;
    d.mr_key_size = prov_key ? 8 : 4;
    d.cq_data_size = 8;
    d.cq_cnt = 32;
    d.ep_cnt = 128;
    d.tx_ctx_cnt = d.rx_ctx_cnt = kMaxContexts;
    d.max_ep_tx_ctx = d.max_ep_rx_ctx = kMaxContexts;
    d.cntr_cnt = 16;
    d.mr_iov_limit = 1;
    d.mr_cnt = 100;
    d.caps = kDomainCaps;
#if FI_MAJOR_VERSION >= 2
    d.max_ep_auth_key = 1;  // multi-key offers: multi_key()
    d.max_cntr_value = (1ULL << 48) - 1;
    d.max_err_cntr_value = 127;
#endif
    i->fabric_attr->name = strdup("cxi");
    i->fabric_attr->prov_version = kProviderVersion;
    i->nic = make_nic_info(nic, dflt.svc_id, dflt.vni);
    return i;
}

int parse_request(uint32_t version, const char *node, const char *service, uint64_t flags,
                  const fi_info *hints, Request &r) {
    if (flags & FI_SOURCE) {
        if (!node && !service)
            SN_REJECT(-FI_EINVAL, FI_LOG_CORE, "FI_SOURCE needs a node or a service\n");
        if (node && !parse_node(node, r.nic))
            SN_REJECT(-FI_EINVAL, FI_LOG_CORE, "cannot parse node \"%s\"\n", node);
        r.restrict_nic = node != nullptr;
        if (service && !parse_service(service, r.src_pid, &r.src_pid_preferred))
            SN_REJECT(-FI_EINVAL, FI_LOG_CORE, "service \"%s\" is not a PID or port\n", service);
    } else if (node) {
        uint32_t nic = 0, pid = 0;
        if (!parse_node(node, nic))
            SN_REJECT(-FI_EINVAL, FI_LOG_CORE, "cannot parse node \"%s\"\n", node);
        if (service && !parse_service(service, pid))
            SN_REJECT(-FI_EINVAL, FI_LOG_CORE, "service \"%s\" is not a PID or port\n", service);
        r.has_dest = true;
        r.dest = make_addr(nic, pid);
    } else if (service && !parse_service(service, r.src_pid, &r.src_pid_preferred)) {
        SN_REJECT(-FI_EINVAL, FI_LOG_CORE, "service \"%s\" is not a PID or port\n", service);
    }
    if (hints && hints->src_addr) {
        if (hints->addr_format != FI_ADDR_CXI || hints->src_addrlen < addr_len(version))
            SN_REJECT(-FI_ENODATA, FI_LOG_CORE, "hints src_addr is not an FI_ADDR_CXI\n");
        CxiAddr a = read_addr(hints->src_addr, hints->src_addrlen);
        r.restrict_nic = true;
        r.nic = a.nic;
        r.src_pid = a.pid;
        r.src_pid_preferred = a.pid_preferred;
    }
    if (hints && hints->dest_addr) {
        if (hints->addr_format != FI_ADDR_CXI || hints->dest_addrlen < addr_len(version))
            SN_REJECT(-FI_ENODATA, FI_LOG_CORE, "hints dest_addr is not an FI_ADDR_CXI\n");
        r.has_dest = true;
        r.dest = read_addr(hints->dest_addr, hints->dest_addrlen);
    }
    return 0;
}

uint64_t with_directions(uint64_t caps) {
    if (!(caps & (FI_SEND | FI_RECV))) caps |= FI_SEND | FI_RECV;
    return caps;
}

// The capability trimming upstream applies (spec §1.1).
void trim_caps(fi_info &i, const fi_info *hints) {
    const uint64_t hmem = i.caps & FI_HMEM;  // offered where a GPU is
    uint64_t keep;
    if (!hints || !hints->caps) {
        keep = (kCaps | hmem) & ~(FI_SOURCE | FI_SOURCE_ERR);
    } else {
        uint64_t primary = hints->caps & (kPrimaryCaps | hmem);
        if (!primary) primary = kPrimaryCaps;
        if (primary & FI_COLLECTIVE) primary |= FI_MSG;  // collectives travel as messages
        uint64_t secondary =
            kSecondaryCaps & ~(FI_SOURCE | FI_SOURCE_ERR | FI_FENCE | FI_RMA_EVENT);
        keep = primary | secondary | (hints->caps & kSecondaryCaps);
    }
    uint64_t dirs = with_directions(keep);
    i.caps = dirs;  // directions implied by the hints are stated, as tx/rx caps list them
    i.tx_attr->caps &= dirs;
    i.rx_attr->caps &= dirs;
    if (!(dirs & FI_SEND)) i.tx_attr->caps &= ~(FI_MSG | FI_TAGGED);
    if (!(dirs & FI_RECV)) i.rx_attr->caps &= ~(FI_MSG | FI_TAGGED);
}

// The MR mode bits an offer cannot work without: a soft NIC needs neither FI_MR_ENDPOINT
// nor FI_MR_ALLOCATED, so only provider keys are required (of the provider-key flavour).
int required_mr_mode(bool prov_key) {
    return prov_key ? FI_MR_PROV_KEY : 0;
}

// Of the bits upstream's offer lists, those the application accepted (all, without hints).
int reported_mr_mode(bool prov_key, const fi_info *hints, uint32_t version) {
    int preferred = prov_key ? kMrModeProvKey : kMrModeClientKey;
    if (!hints || !hints->domain_attr) return preferred;
    int want = hints->domain_attr->mr_mode;
    if (FI_VERSION_LT(version, FI_VERSION(1, 5)) || (want & (kMrBasic | kMrScalable)))
        return kMrScalable;
    return preferred & want;
}

void finish(fi_info &i, const fi_info *hints, const Request &r, uint32_t version) {
    trim_caps(i, hints);
    // Without one-sided caps no MR is ever the target of a remote access, and local
    // buffers need no registration: no mode bit applies (as libfabric's util layer trims).
    if (hints && !(i.caps & (FI_RMA | FI_ATOMIC)) && i.domain_attr->mr_mode != kMrScalable)
        i.domain_attr->mr_mode = 0;
    if (!(i.domain_attr->mr_mode & FI_MR_PROV_KEY)) i.domain_attr->mr_key_size = 4;  // client keys
    const Env &e = env();
    if (!hints || !hints->tx_attr || !hints->tx_attr->size) i.tx_attr->size = e.default_tx_size;
    if (!hints || !hints->rx_attr || !hints->rx_attr->size) i.rx_attr->size = e.default_rx_size;
    if (!hints) {
        i.tx_attr->op_flags = kTxOpFlags;
        i.rx_attr->op_flags = kRxOpFlags;
    }
    // As upstream: with hints, the endpoint orders what they ask for and no more (0: no
    // ordering, which lets optimized writes take the restricted path).
    if (hints && hints->tx_attr) i.tx_attr->msg_order = hints->tx_attr->msg_order;
    static_cast<CxiAddr *>(i.src_addr)->pid = r.src_pid;
    static_cast<CxiAddr *>(i.src_addr)->pid_preferred = r.src_pid_preferred;
    if (r.has_dest) {
        auto *d = static_cast<CxiAddr *>(std::calloc(1, sizeof(CxiAddr)));
        *d = r.dest;
        i.dest_addr = d;
        i.dest_addrlen = addr_len(version);
    }
    i.src_addrlen = addr_len(version);  // the buffers hold a whole CxiAddr either way
}

// FI_HMEM where a CUDA driver and device answer. The driver is loaded only for callers
// that may want it (no hints, no caps, or FI_HMEM asked): cuInit costs an MPI rank that
// asked for host memory only time and threads it never uses.
uint64_t hmem_caps(const fi_info *hints) {
    bool may_want = !hints || !hints->caps || (hints->caps & FI_HMEM);
    if (!may_want) return 0;
    if (hmem::cuda_available()) return FI_HMEM;
    if (hints && (hints->caps & FI_HMEM))
        SN_INFO(FI_LOG_CORE, "FI_HMEM asked for: %s\n", hmem::cuda_unavailable_reason());
    return 0;
}

// Apply the adjustments upstream makes to the hints before matching.
fi_info *normalized_hints(const fi_info *hints) {
    if (!hints) return nullptr;
    fi_info *h = fi_dupinfo(hints);
    for (auto *a : {h && h->domain_attr ? &h->domain_attr->auth_key : nullptr,
                    h && h->ep_attr ? &h->ep_attr->auth_key : nullptr})
        if (a) {  // checked apart (hint_keys), never matched as attributes
            free(*a);
            *a = nullptr;
        }
    if (h && h->domain_attr) h->domain_attr->auth_key_size = 0;
    if (h && h->ep_attr) h->ep_attr->auth_key_size = 0;
    if (h && h->fabric_attr && h->fabric_attr->prov_name) {  // "cxi;ofi_rxm" style names
        free(h->fabric_attr->prov_name);
        h->fabric_attr->prov_name = nullptr;
    }
    return h;
}

bool hints_acceptable(const fi_info *hints) {
    if (!hints) return true;
    if ((hints->caps & FI_SOURCE_ERR) && !(hints->caps & FI_SOURCE)) {
        SN_INFO(FI_LOG_CORE, "FI_SOURCE_ERR requires FI_SOURCE\n");
        return false;
    }
    if (hints->ep_attr && raw_enum(hints->ep_attr->type) != FI_EP_UNSPEC &&
        raw_enum(hints->ep_attr->type) != FI_EP_RDM)
        return false;
    return true;
}

// The authorization keys of the hints (spec §3.3): a key given for the endpoint alone
// also serves the domain. -FI_ENODATA when malformed.
struct HintKeys {
    bool domain = false, ep = false;
    bool av = false;  // FI_AV_AUTH_KEY: the endpoints' keys come from the AV
    AuthKey key, ep_key;
};
int hint_keys(const fi_info *hints, HintKeys &k) {
    if (!hints) return 0;
    if (SOFTNIC_HAS_AV_AUTH_KEY && hints->domain_attr &&
        hints->domain_attr->auth_key_size == kAvAuthKey) {
        const fi_ep_attr *e = hints->ep_attr;
        if (hints->domain_attr->auth_key || (e && (e->auth_key || e->auth_key_size)))
            SN_REJECT(-FI_ENODATA, FI_LOG_CORE, "FI_AV_AUTH_KEY takes no domain or ep auth_key\n");
        k.av = true;
        return 0;
    }
    int d = hints->domain_attr ? read_auth_key(hints->domain_attr->auth_key,
                                               hints->domain_attr->auth_key_size, k.key)
                               : 0;
    int e = hints->ep_attr
                ? read_auth_key(hints->ep_attr->auth_key, hints->ep_attr->auth_key_size, k.ep_key)
                : 0;
    if (d < 0 || e < 0)
        SN_REJECT(-FI_ENODATA, FI_LOG_CORE, "auth_key must be a struct cxi_auth_key (%zu bytes)\n",
                  sizeof(cxi_auth_key));
    k.domain = d > 0 || e > 0;
    k.ep = e > 0;
    if (!d && e) k.key = k.ep_key;
    if (k.ep && k.ep_key.svc_id != k.key.svc_id)
        SN_REJECT(-FI_ENODATA, FI_LOG_CORE, "endpoint and domain auth keys name other services\n");
    return 0;
}

bool keys_usable(const SoftNic &nic, const HintKeys &k) {
    if (!k.domain) return true;
    if (check_auth_key(nic, k.key) != 0) return false;
    return !k.ep || check_auth_key(nic, k.ep_key) == 0;
}

// Offers for more than one key per endpoint (FI_AV_AUTH_KEY) when the hints ask for
// them: up to kMaxEpAuthKeys, without FI_DIRECTED_RECV except under the RNR protocol.
void multi_key(fi_info &o, bool rnr) {
#if SOFTNIC_HAS_AV_AUTH_KEY
    o.domain_attr->max_ep_auth_key = kMaxEpAuthKeys;
    if (rnr) return;
    o.caps &= ~FI_DIRECTED_RECV;
    o.rx_attr->caps &= ~FI_DIRECTED_RECV;
#else
    (void)o, (void)rnr;
#endif
}

bool wants_multi_key(const fi_info *hints) {
#if SOFTNIC_HAS_AV_AUTH_KEY
    return hints && hints->domain_attr && hints->domain_attr->max_ep_auth_key > 1;
#else
    (void)hints;
    return false;
#endif
}

void put_key(uint8_t *&dst, size_t &size, const AuthKey &k) {
    cxi_auth_key raw{k.svc_id, k.vni};
    free(dst);
    dst = static_cast<uint8_t *>(std::calloc(1, sizeof(raw)));
    if (!dst) return;
    std::memcpy(dst, &raw, sizeof(raw));
    size = sizeof(raw);
}

}  // namespace

int getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
            const fi_info *hints, fi_info **info) {
    if (!info) return -FI_EINVAL;
    *info = nullptr;
    Request req;
    int ret = parse_request(version, node, service, flags, hints, req);
    if (ret) return ret;
    if (!hints_acceptable(hints)) return -FI_ENODATA;
    HintKeys keys;
    if (int r = hint_keys(hints, keys)) return r;
    fi_info *h = normalized_hints(hints);
    fi_info *head = nullptr, **tail = &head;
    const uint64_t hmem = hmem_caps(hints);  // the same for every soft NIC
    for (const SoftNic &nic : soft_nics()) {
        if (req.restrict_nic && nic.addr != req.nic) continue;
        if (!keys_usable(nic, keys)) continue;
        AuthKey dflt;  // looked up once per NIC: it reads the service registry
        if (!default_auth_key(nic, dflt)) dflt = AuthKey{};
        // Without hints every offer, FI_PROTO_CXI first; with hints the first match per
        // domain, and the RNR protocol only when asked for by name.
        bool rnr_asked = !h || (h->ep_attr && h->ep_attr->protocol == FI_PROTO_CXI_RNR);
        bool matched = false;
        for (int n = 0; n < 4 && !(hints && matched); n++) {
            bool rnr = n >= 2, prov_key = n % 2 == 0;
            if (rnr && !rnr_asked) break;
            fi_info *o = offer(nic, prov_key, rnr, dflt, hmem);
            if (!o) break;
            if (wants_multi_key(hints)) multi_key(*o, rnr);
            o->domain_attr->mr_mode = required_mr_mode(prov_key);
            fi_info *out = info::matches(*o, h, version) ? info::narrow(*o, h) : nullptr;
            fi_freeinfo(o);
            if (!out) continue;
            out->domain_attr->mr_mode = reported_mr_mode(prov_key, h, version);
            finish(*out, hints, req, version);
            if (keys.domain)
                put_key(out->domain_attr->auth_key, out->domain_attr->auth_key_size, keys.key);
            if (keys.ep) put_key(out->ep_attr->auth_key, out->ep_attr->auth_key_size, keys.ep_key);
            if (keys.av) out->domain_attr->auth_key_size = kAvAuthKey;
            *tail = out;
            tail = &out->next;
            matched = true;
        }
    }
    fi_freeinfo(h);
    *info = head;
    return head ? 0 : -FI_ENODATA;
}

}  // namespace softnic::cxi

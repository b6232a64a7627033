// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "usnic/info_check.hpp"

#include "common/fi_api.hpp"
#include "common/log.hpp"
#include "usnic/addr.hpp"
#include "usnic/caps.hpp"

namespace softnic::usnic {
namespace {

// A mismatch is no error: log at INFO (users debug hints with FI_LOG_LEVEL=info).
#define NO_MATCH(...)                      \
    do {                                   \
        SN_INFO(FI_LOG_CORE, __VA_ARGS__); \
        return -FI_ENODATA;                \
    } while (0)

int check_domain(fi_info &o, const fi_domain_attr &h, uint32_t version) {
    fi_domain_attr &d = *o.domain_attr;
    switch (h.threading) {
        case FI_THREAD_UNSPEC:
            break;
        case FI_THREAD_ENDPOINT:
        case FI_THREAD_FID:
        case FI_THREAD_COMPLETION:
        case FI_THREAD_DOMAIN:
            d.threading = h.threading;
            break;
        case FI_THREAD_SAFE:
            // DGRAM follows upstream (no FI_THREAD_SAFE); MSG/RDM lock every call.
            if (o.ep_attr->type == FI_EP_DGRAM) NO_MATCH("DGRAM is not FI_THREAD_SAFE\n");
            d.threading = h.threading;
            break;
        default:
            NO_MATCH("threading model %d not offered\n", h.threading);
    }
    if (h.control_progress == FI_PROGRESS_MANUAL && o.ep_attr->type == FI_EP_DGRAM)
        d.control_progress = FI_PROGRESS_MANUAL;
    else if (h.control_progress == FI_PROGRESS_MANUAL)
        NO_MATCH("MSG/RDM connection management progresses automatically\n");
    if (h.data_progress == FI_PROGRESS_AUTO) NO_MATCH("data progress is manual\n");
    if (h.resource_mgmt == FI_RM_ENABLED) NO_MATCH("resource management is not offered\n");
    if (h.caps & ~kDomainCaps)
        NO_MATCH("domain caps %#llx not offered\n", (unsigned long long)h.caps);
    if ((h.caps & FI_REMOTE_COMM) && !FI_VERSION_GE(version, FI_VERSION(1, 5)))
        SN_REJECT(-FI_EBADFLAGS, FI_LOG_CORE, "FI_REMOTE_COMM needs API 1.5\n");
    if (h.av_type != FI_AV_UNSPEC && h.av_type != FI_AV_MAP) NO_MATCH("only FI_AV_MAP\n");
    if (h.mr_cnt > kMrCount) NO_MATCH("mr_cnt above %zu\n", kMrCount);
    if (h.cq_data_size) NO_MATCH("no remote CQ data (fi_senddata)\n");
    if (h.mr_cnt) d.mr_cnt = h.mr_cnt;
    if (h.caps) d.caps = h.caps;
    return 0;
}

// Queue depth and scatter/gather limits share 4095 credits on a DGRAM queue.
int fit_queue(size_t &size, size_t &iov, size_t hint_size, size_t hint_iov, bool dgram, bool prefix,
              size_t max_size) {
    if (hint_iov > kMaxIov) NO_MATCH("iov_limit above %zu\n", kMaxIov);
    if (!dgram) {
        if (hint_size > max_size) NO_MATCH("queue size above %zu\n", max_size);
        if (hint_size) size = hint_size;
        if (hint_iov) iov = hint_iov;
        return 0;
    }
    size_t hdr = prefix ? 0 : 1;  // without a prefix the header takes a descriptor
    if (hint_size && hint_iov) {
        size = hint_size;
        iov = hint_iov;
    } else if (hint_size) {
        size = hint_size;
        iov = std::min(kMaxIov, kCredits / hint_size);
        if (iov <= hdr) NO_MATCH("queue size %zu leaves no room for data\n", hint_size);
        iov -= hdr;
    } else if (hint_iov) {
        iov = hint_iov;
        size = kCredits / (hint_iov + hdr);
    }
    if (size * (iov + hdr) > kCredits) NO_MATCH("size x iov_limit above %u credits\n", kCredits);
    return 0;
}

int check_tx(fi_info &o, const fi_tx_attr &h, uint32_t version) {
    fi_tx_attr &t = *o.tx_attr;
    if (h.caps & ~kCaps) NO_MATCH("tx caps not offered\n");
    if ((h.msg_order & ~t.msg_order) || h.comp_order)
        NO_MATCH("ordering %#llx not offered\n", (unsigned long long)h.msg_order);
    if (h.inject_size > t.inject_size) NO_MATCH("inject_size above %zu\n", t.inject_size);
    if (h.rma_iov_limit) NO_MATCH("no RMA\n");
    if (!FI_VERSION_GE(version, FI_VERSION(1, 5)) && h.mode && !(h.mode & kLocalMrMode))
        NO_MATCH("tx mode lacks FI_LOCAL_MR\n");
    bool dgram = o.ep_attr->type == FI_EP_DGRAM;
    int ret =
        fit_queue(t.size, t.iov_limit, h.size, h.iov_limit, dgram, o.mode & FI_MSG_PREFIX, t.size);
    if (ret) return ret;
    t.op_flags = h.op_flags;
    return 0;
}

int check_rx(fi_info &o, const fi_rx_attr &h, uint32_t version) {
    fi_rx_attr &r = *o.rx_attr;
    if (h.caps & ~kCaps) NO_MATCH("rx caps not offered\n");
    if ((h.msg_order & ~r.msg_order) || h.comp_order)
        NO_MATCH("ordering %#llx not offered\n", (unsigned long long)h.msg_order);
    if (h.total_buffered_recv) NO_MATCH("no buffered receive\n");
    if (!FI_VERSION_GE(version, FI_VERSION(1, 5)) && h.mode && !(h.mode & kLocalMrMode))
        NO_MATCH("rx mode lacks FI_LOCAL_MR\n");
    bool dgram = o.ep_attr->type == FI_EP_DGRAM;
    int ret =
        fit_queue(r.size, r.iov_limit, h.size, h.iov_limit, dgram, o.mode & FI_MSG_PREFIX, r.size);
    if (ret) return ret;
    r.op_flags = h.op_flags;
    return 0;
}

int check_ep(fi_info &o, const fi_ep_attr &h) {
    fi_ep_attr &e = *o.ep_attr;
    if (h.protocol != FI_PROTO_UNSPEC && h.protocol != e.protocol)
        NO_MATCH("protocol %u not offered here\n", h.protocol);
    if (h.max_msg_size > e.max_msg_size) NO_MATCH("max_msg_size above %zu\n", e.max_msg_size);
    if (h.tx_ctx_cnt > 1 || h.rx_ctx_cnt > 1) NO_MATCH("one context per endpoint\n");
    if (h.max_order_raw_size || h.max_order_war_size || h.max_order_waw_size)
        NO_MATCH("no ordering is offered\n");
    return 0;
}

}  // namespace

int check_mr_mode(const fi_info &h, uint32_t version) {
    uint64_t mr = h.domain_attr ? h.domain_attr->mr_mode : 0;
    if (FI_VERSION_GE(version, FI_VERSION(1, 5))) {
        if (mr == kMrBasic || mr == kMrScalable) mr = FI_MR_LOCAL | FI_MR_ALLOCATED;
        if (mr & (kMrBasic | kMrScalable)) NO_MATCH("FI_MR_BASIC/SCALABLE mixed\n");
        if (mr && (mr & (FI_MR_LOCAL | FI_MR_ALLOCATED)) != (FI_MR_LOCAL | FI_MR_ALLOCATED))
            NO_MATCH("mr_mode must include FI_MR_LOCAL and FI_MR_ALLOCATED\n");
        // A domain_attr with mr_mode 0 says the application handles no MR mode (as
        // libfabric's own check); without a domain_attr (utility providers asking for
        // their core, ofi_rxd), FI_LOCAL_MR in mode is enough.
        if (!mr && (h.domain_attr || !(h.mode & kLocalMrMode)))
            NO_MATCH("local registration is required: mr_mode FI_MR_LOCAL | FI_MR_ALLOCATED\n");
    } else {
        if (mr != kMrUnspec && mr != kMrBasic) NO_MATCH("mr_mode must be basic\n");
        if (!(h.mode & kLocalMrMode)) NO_MATCH("mode must contain FI_LOCAL_MR\n");
    }
    return 0;
}

int check_global_hints(const fi_info &h, uint32_t version) {
    (void)version;
    switch (h.addr_format) {
        case FI_FORMAT_UNSPEC:
        case FI_SOCKADDR_IN:
        case FI_SOCKADDR:
            if ((h.src_addr && h.src_addrlen < sizeof(sockaddr_in)) ||
                (h.dest_addr && h.dest_addrlen < sizeof(sockaddr_in)))
                NO_MATCH("address hints shorter than a sockaddr_in\n");
            break;
        case FI_ADDR_STR:
            if ((h.src_addr && h.src_addrlen > kAddrStrMax) ||
                (h.dest_addr && h.dest_addrlen > kAddrStrMax))
                NO_MATCH("address strings longer than %zu\n", kAddrStrMax);
            break;
        default:
            NO_MATCH("address format %u not offered\n", h.addr_format);
    }
    if (h.ep_attr) {
        uint32_t p = h.ep_attr->protocol;
        if (p != FI_PROTO_UNSPEC && p != FI_PROTO_UDP && p != FI_PROTO_RUDP)
            NO_MATCH("protocol %u not offered\n", p);
        if (h.ep_attr->auth_key || h.ep_attr->auth_key_size) NO_MATCH("no auth keys\n");
        fi_ep_type t = h.ep_attr->type;
        if (t != FI_EP_UNSPEC && t != FI_EP_DGRAM && t != FI_EP_MSG && t != FI_EP_RDM)
            NO_MATCH("endpoint type %d not offered\n", t);
    }
    if (h.domain_attr && (h.domain_attr->auth_key || h.domain_attr->auth_key_size))
        NO_MATCH("no auth keys\n");
    if (h.fabric_attr && h.fabric_attr->prov_version &&
        h.fabric_attr->prov_version != kProviderVersion)
        NO_MATCH("provider version %#x not offered\n", h.fabric_attr->prov_version);
    return 0;
}

int fit_to_hints(fi_info &o, const fi_info &h, uint32_t version) {
    if (h.caps & ~kCaps)
        NO_MATCH("caps %#llx not offered\n", (unsigned long long)(h.caps & ~kCaps));
    int ret = check_mr_mode(h, version);
    if (ret) return ret;
    if (h.ep_attr && (ret = check_ep(o, *h.ep_attr))) return ret;
    if (h.domain_attr && (ret = check_domain(o, *h.domain_attr, version))) return ret;
    if (h.tx_attr && (ret = check_tx(o, *h.tx_attr, version))) return ret;
    if (h.rx_attr && (ret = check_rx(o, *h.rx_attr, version))) return ret;
    if (h.handle) o.handle = h.handle;  // caps stay the full set, as upstream
    return 0;
}

}  // namespace softnic::usnic

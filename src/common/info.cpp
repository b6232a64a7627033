// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "common/info.hpp"

#include <cerrno>
#include <cstdlib>
#include <string_view>

#include "common/fi_api.hpp"
#include "common/log.hpp"

namespace softnic::info {
namespace {

#define MISMATCH(...)                      \
    do {                                   \
        SN_INFO(FI_LOG_CORE, __VA_ARGS__); \
        return false;                      \
    } while (0)

bool subset(uint64_t want, uint64_t have) {
    return (want & have) == want;
}

// libfabric's util rules (prov/util's attribute checks, which upstream providers use):
// a transmit context ignores receive-only capabilities in its hints and vice versa.
constexpr uint64_t kRxOnlyCaps = FI_REMOTE_READ | FI_REMOTE_WRITE | FI_RECV | FI_DIRECTED_RECV |
                                 FI_MULTI_RECV | FI_SOURCE | FI_RMA_EVENT | FI_SOURCE_ERR;
constexpr uint64_t kTxOnlyCaps =
    FI_READ | FI_WRITE | FI_SEND | FI_FENCE | FI_MULTICAST | FI_NAMED_RX_CTX;

// The tag width a mem_tag_format asks for: its highest set bit, as libfabric compares
// tag formats (a format is a width, not a bit pattern).
int tag_width(uint64_t format) {
    return format ? 64 - __builtin_clzll(format) : 0;
}

bool tx_matches(const fi_tx_attr &o, const fi_tx_attr *h) {
    if (!h) return true;
    const uint64_t caps = h->caps & ~kRxOnlyCaps;
    if (!subset(caps, o.caps)) MISMATCH("tx caps 0x%lx not supported\n", caps & ~o.caps);
    if (!subset(h->op_flags, o.op_flags)) MISMATCH("tx op_flags not supported\n");
    if (!subset(h->msg_order, o.msg_order)) MISMATCH("tx msg_order not supported\n");
    if (h->inject_size > o.inject_size) MISMATCH("tx inject_size too large\n");
    if (h->size > o.size) MISMATCH("tx size %zu > %zu\n", h->size, o.size);
    if (h->iov_limit > o.iov_limit) MISMATCH("tx iov_limit too large\n");
    if (h->rma_iov_limit > o.rma_iov_limit) MISMATCH("tx rma_iov_limit too large\n");
    return true;
}

bool rx_matches(const fi_rx_attr &o, const fi_rx_attr *h) {
    if (!h) return true;
    const uint64_t caps = h->caps & ~kTxOnlyCaps;
    if (!subset(caps, o.caps)) MISMATCH("rx caps 0x%lx not supported\n", caps & ~o.caps);
    if (!subset(h->op_flags, o.op_flags)) MISMATCH("rx op_flags not supported\n");
    if (!subset(h->msg_order, o.msg_order)) MISMATCH("rx msg_order not supported\n");
    if (h->size > o.size) MISMATCH("rx size %zu > %zu\n", h->size, o.size);
    if (h->iov_limit > o.iov_limit) MISMATCH("rx iov_limit too large\n");
    if (h->total_buffered_recv > o.total_buffered_recv && o.total_buffered_recv)
        MISMATCH("rx total_buffered_recv too large\n");
    return true;
}

bool ep_matches(const fi_info &offer, const fi_info &hints) {
    const fi_ep_attr &o = *offer.ep_attr, *h = hints.ep_attr;
    if (!h) return true;
    if (h->type != FI_EP_UNSPEC && h->type != o.type) MISMATCH("endpoint type mismatch\n");
    if (h->protocol != FI_PROTO_UNSPEC && h->protocol != o.protocol) MISMATCH("protocol\n");
    if (h->max_msg_size > o.max_msg_size) MISMATCH("max_msg_size too large\n");
    // Shared contexts (fi_stx_context / fi_srx_context) are not built: -FI_ENOSYS.
    if (h->tx_ctx_cnt == FI_SHARED_CONTEXT || h->rx_ctx_cnt == FI_SHARED_CONTEXT)
        MISMATCH("shared contexts are not offered\n");
    // Context counts are bounded by the domain's maxima (scalable endpoints), not by the
    // offer's default of one.
    if (h->tx_ctx_cnt > offer.domain_attr->max_ep_tx_ctx) MISMATCH("tx_ctx_cnt too large\n");
    if (h->rx_ctx_cnt > offer.domain_attr->max_ep_rx_ctx) MISMATCH("rx_ctx_cnt too large\n");
    // Ordering sizes matter only to an application that asks for one-sided operations.
    if (hints.caps & (FI_RMA | FI_ATOMIC)) {
        if (h->max_order_waw_size > o.max_order_waw_size) MISMATCH("max_order_waw_size\n");
        if (h->max_order_raw_size > o.max_order_raw_size) MISMATCH("max_order_raw_size\n");
        if (h->max_order_war_size > o.max_order_war_size) MISMATCH("max_order_war_size\n");
    }
    // Any tag layout of no more bits than ours is accepted (MPICH asks 0x00001800000FFFFF).
    if ((hints.caps & FI_TAGGED) && tag_width(h->mem_tag_format) > tag_width(o.mem_tag_format))
        MISMATCH("mem_tag_format wider than supported\n");
    return true;
}

// `o.domain_attr->mr_mode` lists the mode bits the offer *requires*; the caller's
// finish step reports which of its preferred bits the application accepted.
bool mr_mode_matches(const fi_info &o, const fi_info &h, uint32_t version) {
    if (!h.domain_attr) return true;
    int want = h.domain_attr->mr_mode;
    int need = o.domain_attr->mr_mode;
    if (FI_VERSION_LT(version, FI_VERSION(1, 5)) || (want & (kMrBasic | kMrScalable))) {
        // The enum era: FI_MR_SCALABLE (offsets, client keys) is all a soft NIC offers.
        if (want & kMrBasic) MISMATCH("FI_MR_BASIC (virtual addresses) is not offered\n");
        if (need) MISMATCH("FI_MR_SCALABLE cannot express mode 0x%x\n", need);
        return true;
    }
    if ((want & need) != need) MISMATCH("mr_mode 0x%x lacks 0x%x\n", want, need & ~want);
    return true;
}

bool domain_matches(const fi_info &o, const fi_info &h, uint32_t version) {
    const fi_domain_attr *d = h.domain_attr;
    if (!d) return true;
    const fi_domain_attr &od = *o.domain_attr;
    if (d->name && std::string_view(d->name) != od.name) MISMATCH("domain name mismatch\n");
    auto prog_ok = [](fi_progress want, fi_progress have) {
        return want == FI_PROGRESS_UNSPEC || want == have;
    };
    if (!prog_ok(d->control_progress, od.control_progress)) MISMATCH("control progress\n");
    if (!prog_ok(d->data_progress, od.data_progress)) MISMATCH("data progress\n");
    if (d->av_type != FI_AV_UNSPEC && od.av_type != FI_AV_UNSPEC && d->av_type != od.av_type)
        MISMATCH("av_type\n");
    if (d->cq_data_size > od.cq_data_size) MISMATCH("cq_data_size\n");
#if FI_MAJOR_VERSION >= 2
    if (d->max_ep_auth_key > od.max_ep_auth_key) MISMATCH("max_ep_auth_key\n");
#endif
    if (d->mr_key_size > od.mr_key_size) MISMATCH("mr_key_size\n");
    if (d->max_ep_tx_ctx > od.max_ep_tx_ctx) MISMATCH("max_ep_tx_ctx\n");
    if (d->max_ep_rx_ctx > od.max_ep_rx_ctx) MISMATCH("max_ep_rx_ctx\n");
    if (d->caps && !subset(d->caps, od.caps)) MISMATCH("domain caps\n");
    return mr_mode_matches(o, h, version);
}

}  // namespace

bool matches(const fi_info &o, const fi_info *h, uint32_t version) {
    if (!h) return true;
    if (!subset(h->caps, o.caps)) MISMATCH("caps 0x%lx not supported\n", h->caps & ~o.caps);
    if ((o.mode & h->mode) != o.mode) MISMATCH("required mode bits not offered by hints\n");
    if (h->addr_format != FI_FORMAT_UNSPEC && h->addr_format != o.addr_format)
        MISMATCH("address format mismatch\n");
    if (h->fabric_attr) {
        const fi_fabric_attr &f = *h->fabric_attr;
        if (f.name && std::string_view(f.name) != o.fabric_attr->name) MISMATCH("fabric name\n");
        if (f.prov_name && std::string_view(f.prov_name) != o.fabric_attr->prov_name)
            MISMATCH("provider name\n");
    }
    return ep_matches(o, *h) && domain_matches(o, *h, version) &&
           tx_matches(*o.tx_attr, h->tx_attr) && rx_matches(*o.rx_attr, h->rx_attr);
}

fi_info *narrow(const fi_info &offer, const fi_info *h) {
    fi_info *info = fi_dupinfo(&offer);
    if (!info || !h) return info;
    if (h->tx_attr) {
        if (h->tx_attr->size) info->tx_attr->size = h->tx_attr->size;
        info->tx_attr->op_flags = h->tx_attr->op_flags;
        if (h->tx_attr->msg_order) info->tx_attr->msg_order = h->tx_attr->msg_order;
    }
    if (h->rx_attr) {
        if (h->rx_attr->size) info->rx_attr->size = h->rx_attr->size;
        info->rx_attr->op_flags = h->rx_attr->op_flags;
        if (h->rx_attr->msg_order) info->rx_attr->msg_order = h->rx_attr->msg_order;
    }
    if (h->domain_attr) {
        auto *d = info->domain_attr;
        if (h->domain_attr->threading != FI_THREAD_UNSPEC) d->threading = h->domain_attr->threading;
        if (h->domain_attr->av_type != FI_AV_UNSPEC) d->av_type = h->domain_attr->av_type;
        if (h->domain_attr->resource_mgmt != FI_RM_UNSPEC)
            d->resource_mgmt = h->domain_attr->resource_mgmt;
    }
    if (h->ep_attr) {
        if (h->ep_attr->tx_ctx_cnt) info->ep_attr->tx_ctx_cnt = h->ep_attr->tx_ctx_cnt;
        if (h->ep_attr->rx_ctx_cnt) info->ep_attr->rx_ctx_cnt = h->ep_attr->rx_ctx_cnt;
    }
    return info;
}

bool parse_uint(const char *s, unsigned long &out) {
    if (!s || !*s) return false;
    char *end = nullptr;
    errno = 0;
    unsigned long v = std::strtoul(s, &end, 0);
    if (errno || *end || s[0] == '-') return false;
    out = v;
    return true;
}

}  // namespace softnic::info

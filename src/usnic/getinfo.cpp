// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "usnic/getinfo.hpp"

#include <arpa/inet.h>

#include <cstdlib>
#include <cstring>

#include "common/fi_api.hpp"
#include "common/fid.hpp"
#include "common/log.hpp"
#include "usnic/addr.hpp"
#include "usnic/caps.hpp"
#include "usnic/devices.hpp"
#include "usnic/info_check.hpp"
#include "usnic/ports.hpp"
#include "usnic/route.hpp"

namespace softnic::usnic {
namespace {

struct Request {
    uint32_t version = 0;
    uint32_t format = FI_SOCKADDR_IN;
    bool has_src = false, has_dest = false;
    sockaddr_in src{}, dest{};
};

void *copy_addr(uint32_t format, const sockaddr_in &a, size_t &len) {
    if (format == FI_ADDR_STR) {
        std::string s = to_string(a);
        len = s.size() + 1;
        return strdup(s.c_str());
    }
    len = sizeof(sockaddr_in);
    void *p = std::malloc(len);
    if (p) std::memcpy(p, &a, len);
    return p;
}

void fill_common(fi_info &i, const Device &d, const Request &r) {
    i.caps = kCaps;
    i.addr_format = r.format;
    sockaddr_in src{};
    src.sin_family = AF_INET;
    src.sin_addr.s_addr = d.ip_be;
    if (r.has_src) src.sin_port = r.src.sin_port;
    i.src_addr = copy_addr(r.format, src, i.src_addrlen);
    if (r.has_dest) i.dest_addr = copy_addr(r.format, r.dest, i.dest_addrlen);
    i.fabric_attr->name =
        strdup(FI_VERSION_GE(r.version, FI_VERSION(1, 4)) ? d.cidr().c_str() : d.name.c_str());
    i.fabric_attr->prov_version = kProviderVersion;
    fi_domain_attr &dom = *i.domain_attr;
    if (FI_VERSION_GE(r.version, FI_VERSION(1, 4))) dom.name = strdup(d.name.c_str());
    dom.caps = FI_VERSION_GE(r.version, FI_VERSION(1, 5)) ? kDomainCaps : 0;
    dom.control_progress = FI_PROGRESS_AUTO;
    dom.data_progress = FI_PROGRESS_MANUAL;
    dom.resource_mgmt = FI_RM_DISABLED;
    dom.av_type = FI_AV_MAP;
    dom.mr_mode =
        FI_VERSION_GE(r.version, FI_VERSION(1, 5)) ? (FI_MR_LOCAL | FI_MR_ALLOCATED) : kMrBasic;
    dom.mr_iov_limit = 1;
    dom.mr_cnt = kMrCount;
    dom.cq_cnt = dom.ep_cnt = 1024;
    dom.tx_ctx_cnt = dom.rx_ctx_cnt = 1024;
    dom.max_ep_tx_ctx = dom.max_ep_rx_ctx = 1;
    i.ep_attr->tx_ctx_cnt = i.ep_attr->rx_ctx_cnt = 1;
    i.tx_attr->caps = kTxCaps;
    i.rx_attr->caps = kRxCaps;
    i.tx_attr->msg_order = i.rx_attr->msg_order = kOrderNone;
    i.tx_attr->comp_order = i.rx_attr->comp_order = kOrderNone;
}

fi_info *offer_dgram(const Device &d, const Request &r, const fi_info *hints) {
    fi_info *i = fi_allocinfo();
    if (!i) return nullptr;
    fill_common(*i, d, r);
    uint64_t mode = hints ? (hints->mode & kModeBits) : kModeBits;
    if (!FI_VERSION_GE(r.version, FI_VERSION(1, 1))) mode &= ~FI_MSG_PREFIX;
    bool prefix = mode & FI_MSG_PREFIX;
    i->mode = i->tx_attr->mode = i->rx_attr->mode = mode;
    i->domain_attr->threading = FI_THREAD_ENDPOINT;
    fi_ep_attr &ep = *i->ep_attr;
    ep.type = FI_EP_DGRAM;
    ep.protocol = FI_PROTO_UDP;
    ep.protocol_version = 0;
    ep.msg_prefix_size = prefix ? kPrefixSize : 0;
    ep.max_msg_size =
        FI_VERSION_GE(r.version, FI_VERSION(1, 3)) ? dgram_max_msg(d.mtu) : d.mtu - kFrameHdr;
    i->tx_attr->inject_size = kDgramInject;
    i->tx_attr->size = i->rx_attr->size = kDgramQueue;
    i->tx_attr->iov_limit = i->rx_attr->iov_limit = prefix ? 4 : 3;
    return i;
}

// MSG and RDM endpoints take FI_MSG_PREFIX too (beyond the seed, which has it on DGRAM
// only), when the application asks: the space is left alone.
fi_info *offer_rudp(const Device &d, const Request &r, fi_ep_type type, const fi_info *hints) {
    fi_info *i = fi_allocinfo();
    if (!i) return nullptr;
    fill_common(*i, d, r);
    bool prefix =
        hints && (hints->mode & FI_MSG_PREFIX) && FI_VERSION_GE(r.version, FI_VERSION(1, 1));
    i->mode = i->tx_attr->mode = i->rx_attr->mode = kLocalMrMode | (prefix ? FI_MSG_PREFIX : 0);
    // Every MSG/RDM call takes the endpoint's lock: any thread may call anything.
    i->domain_attr->threading = FI_THREAD_SAFE;
    fi_ep_attr &ep = *i->ep_attr;
    ep.type = type;
    ep.protocol = FI_PROTO_RUDP;
    ep.protocol_version = 0;
    ep.msg_prefix_size = prefix ? kPrefixSize : 0;
    ep.max_msg_size = kRudpMaxMsg;
    i->tx_attr->inject_size = kRudpInject;
    i->tx_attr->size = i->rx_attr->size = type == FI_EP_MSG ? kMsgQueue : kRdmQueue;
    i->tx_attr->iov_limit = i->rx_attr->iov_limit = kMaxIov;
    // Each peer's messages arrive whole and in order, and receives match in posting order.
    i->tx_attr->msg_order = i->rx_attr->msg_order = FI_ORDER_SAS;
    return i;
}

// Steps 1-5 of the hint checks: what applies to every device.
int parse_request(uint32_t version, const char *node, const char *service, uint64_t flags,
                  const fi_info *h, Request &r) {
    r.version = version;
    if (h) {
        int ret = check_global_hints(*h, version);
        if (ret) return ret;
        if (h->addr_format != FI_FORMAT_UNSPEC) r.format = h->addr_format;
        if (h->src_addr && from_user(r.format, h->src_addr, r.src)) r.has_src = true;
        if (h->dest_addr && from_user(r.format, h->dest_addr, r.dest)) r.has_dest = true;
    }
    if (!node && !service) return 0;
    sockaddr_in a{};
    if (r.format == FI_ADDR_STR) {
        if (service) SN_REJECT(-FI_EINVAL, FI_LOG_CORE, "FI_ADDR_STR takes no service\n");
        if (!from_string(node, a)) SN_REJECT(-FI_EINVAL, FI_LOG_CORE, "bad address %s\n", node);
    } else if (resolve(node, service, a)) {
        SN_REJECT(-FI_ENODATA, FI_LOG_CORE, "cannot resolve %s:%s\n", node ? node : "",
                  service ? service : "");
    }
    if (flags & FI_SOURCE) {
        r.src = a;
        r.has_src = true;
        if (service) note_service_port(a.sin_port);
    } else {
        r.dest = a;
        r.has_dest = true;
    }
    return 0;
}

bool device_fits(const Device &d, const Request &r, const fi_info *h) {
    if (r.has_src && r.src.sin_addr.s_addr != INADDR_ANY && r.src.sin_addr.s_addr != d.ip_be)
        return false;
    if (r.has_dest && r.dest.sin_addr.s_addr != INADDR_ANY &&
        route_distance(d, r.dest.sin_addr.s_addr) < 0) {
        SN_INFO(FI_LOG_CORE, "%s cannot reach the destination\n", d.name.c_str());
        return false;
    }
    if (h && h->fabric_attr && h->fabric_attr->name) {
        bool v14 = FI_VERSION_GE(r.version, FI_VERSION(1, 4));
        if ((v14 ? d.cidr() : d.name) != h->fabric_attr->name) return false;
    }
    if (h && h->domain_attr && h->domain_attr->name && d.name != h->domain_attr->name) return false;
    return true;
}

}  // namespace

int getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
            const fi_info *hints, fi_info **info) {
    *info = nullptr;
    const auto &devs = devices();
    if (devs.empty()) SN_REJECT(-FI_ENODATA, FI_LOG_CORE, "no usnic devices\n");
    Request r;
    int ret = parse_request(version, node, service, flags, hints, r);
    if (ret) return ret;
    fi_info *head = nullptr, **tail = &head;
    fi_ep_type want = hints && hints->ep_attr ? hints->ep_attr->type : FI_EP_UNSPEC;
    for (const auto &d : devs) {
        if (!device_fits(d, r, hints)) continue;
        for (fi_ep_type t : {FI_EP_DGRAM, FI_EP_MSG, FI_EP_RDM}) {
            if (want != FI_EP_UNSPEC && want != t) continue;
            fi_info *o = t == FI_EP_DGRAM ? offer_dgram(d, r, hints) : offer_rudp(d, r, t, hints);
            if (!o) {
                fi_freeinfo(head);
                return -FI_ENOMEM;
            }
            ret = hints ? fit_to_hints(*o, *hints, version) : 0;
            if (ret == -FI_ENODATA) {
                fi_freeinfo(o);
                continue;
            }
            if (ret) {
                fi_freeinfo(o);
                fi_freeinfo(head);
                return ret;
            }
            *tail = o;
            tail = &o->next;
        }
    }
    if (!head) return -FI_ENODATA;
    *info = head;
    return 0;
}

}  // namespace softnic::usnic

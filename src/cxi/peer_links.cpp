#include "cxi/peer_links.hpp"

#include <rdma/fi_cxi_ext.h>

#include <algorithm>
#include <cstring>

#include "common/log.hpp"
#include "cxi/context.hpp"
#include "cxi/domain.hpp"
#include "cxi/env.hpp"
#include "transport/shm/shm_transport.hpp"

namespace softnic::cxi {

PeerLinks::PeerLinks(Context &ctx, uint16_t vni)
    : ctx_(ctx), domain_(ctx.domain()), vni_(vni), offload_(env().offload) {}

void PeerLinks::listen_on(const std::vector<uint16_t> &vnis) {
    if (vnis.empty()) return;
    vni_ = vnis[0];
    extra_.clear();
    for (size_t i = 1; i < vnis.size(); i++)
        extra_.push_back(VniPort{vnis[i], nullptr, nullptr, 0});
}

bool PeerLinks::listens_on_extra(uint16_t vni) const {
    return std::any_of(extra_.begin(), extra_.end(),
                       [&](const VniPort &v) { return v.vni == vni; });
}

std::unique_ptr<transport::RxQueue> PeerLinks::open_ring(uint16_t vni, uint32_t pid, int &err) {
    const Env &e = env();
    transport::shm::RingGeometry g{uint32_t(e.shm_cell_size), uint32_t(e.shm_ring_cells)};
    return transport::shm::ShmRxQueue::create(
        ring_name(domain_.nic().addr, vni, pid), g, err,
        domain_.window_attachment(ctx_.caps() & FI_RMA_EVENT));
}

int PeerLinks::open(uint32_t pid) {
    int err = 0;
    auto q = open_ring(vni_, pid, err);
    if (!q) return err;
    udp_ = open_udp(vni_, pid, err);
    if (err == 0 && open_extra_vnis(pid) == 0) {
        rxq_ = std::move(q);
        return 0;
    }
    udp_.reset();
    return -EADDRINUSE;  // the ring was free but a UDP port or VNI is not
}

void PeerLinks::close() {
    if (udp_) udp_->linger();
    udp_.reset();
    rxq_.reset();
    for (VniPort &v : extra_) {
        if (v.udp) v.udp->linger();
        v.udp.reset();
        v.rxq.reset();
    }
}

// The UDP port of (vni, pid); err = -FI_ENOSPC when another endpoint has it. Without a
// socket the endpoint still works within the NIC.
std::unique_ptr<transport::udp::UdpEndpoint> PeerLinks::open_udp(uint16_t vni, uint32_t pid,
                                                                 int &err) {
    err = 0;
    const SoftNic &nic = domain_.nic();
    transport::udp::UdpConfig cfg = domain_.udp_config();
    cfg.realm = vni;  // peers on other VNIs are refused by the transport
    auto udp = transport::udp::UdpEndpoint::open(nic.ipv4, udp_port(vni, pid), cfg, err);
    if (udp) return udp;
    if (err == -EADDRINUSE) {
        err = -FI_ENOSPC;
        return nullptr;
    }
    SN_WARN(FI_LOG_EP_CTRL, "%s: no UDP socket for PID %u (%s): other hosts cannot reach it\n",
            nic.name.c_str(), pid, strerror(-err));
    err = 0;
    return nullptr;
}

// FI_AV_AUTH_KEY: the same PID on each other VNI (a ring and a UDP port on each).
int PeerLinks::open_extra_vnis(uint32_t pid) {
    for (VniPort &v : extra_) {
        int err = 0;
        v.rxq = open_ring(v.vni, pid, err);
        if (v.rxq) v.udp = open_udp(v.vni, pid, err);
        if (!v.rxq || err) {
            for (VniPort &u : extra_) {
                u.udp.reset();
                u.rxq.reset();
            }
            return -FI_ENOSPC;
        }
    }
    return 0;
}

void PeerLinks::poll_ring(transport::PacketSink &sink) {
    if (rxq_) rxq_->poll(sink, 64);
}

void PeerLinks::poll_extra(transport::PacketSink &sink, unsigned tick) {
    for (VniPort &v : extra_) {  // FI_AV_AUTH_KEY's other VNIs: not watched by the helper
        if (v.rxq) v.rxq->poll(sink, 64);
        if (v.udp && (v.udp->wants_poll() || (tick & 63) == 0))
            poll_udp(*v.udp, sink, v.foreign_seen);
    }
}

void PeerLinks::poll_udp(transport::udp::UdpEndpoint &udp, transport::PacketSink &sink,
                         uint64_t &foreign_seen) {
    udp.poll(sink, 64);
    uint64_t foreign = udp.stats().foreign;  // datagrams of other VNIs the transport refused
    if (foreign != foreign_seen) {
        domain_.count(SOFTNIC_CNTR_VNI_DROPPED, foreign - foreign_seen);
        foreign_seen = foreign;
    }
    udp.take_failed(failed_links_);
    if (!failed_links_.empty()) report_failed();
}

// Links the transport gave up on: say why, and fail what was addressed to the peer and
// what it was still sending.
void PeerLinks::report_failed() {
    for (transport::Link *l : failed_links_) {
        transport::LinkFailure f = l->failure();
        uint64_t key = l->peer_key();
        if (!(key & kKnownPeer)) continue;  // never used: nothing to fail
        uint32_t nic = uint32_t(key >> 9) & kNicAddrMask, pid = uint32_t(key) & 511;
        bool foreign = f.reason == transport::LinkFailure::kForeign;
        // Refused before the peer ever answered: nobody listens at that PID.
        bool never_there = f.reason == transport::LinkFailure::kRefused && !f.peer_answered;
        SN_WARN(FI_LOG_EP_DATA, "peer 0x%05x:%u %s\n", nic, pid,
                foreign       ? "is on another VNI: operations fail"
                : never_there ? "has no endpoint"
                              : "stopped answering: operations fail");
        SN_WARN(FI_LOG_EP_DATA, "link state: %s\n", l->describe().c_str());
        if (foreign)  // that PID is on another VNI
            ctx_.peer_failed(l, nic, pid, FI_ENOTCONN, C_RC_VNI_NOT_FOUND);
        else if (never_there)
            ctx_.peer_failed(l, nic, pid, FI_EIO, C_RC_PTLTE_NOT_FOUND);
        else
            ctx_.peer_failed(l, nic, pid, FI_EHOSTUNREACH, C_RC_UNDELIVERABLE);
    }
    failed_links_.clear();
}

transport::Link *PeerLinks::link_for(uint32_t nic, uint32_t pid, uint16_t vni, int &err) {
    transport::udp::UdpEndpoint *udp = udp_.get();
    if (vni != vni_) {  // FI_AV_AUTH_KEY: one of the other VNIs we listen on
        auto it = std::find_if(extra_.begin(), extra_.end(),
                               [&](const VniPort &v) { return v.vni == vni; });
        if (it == extra_.end()) {
            SN_WARN(FI_LOG_EP_DATA, "VNI %u is not one this endpoint was enabled with\n", vni);
            err = -FI_EINVAL;
            return nullptr;
        }
        udp = it->udp.get();
    }
    transport::Link *link = nullptr;
    if (nic == domain_.nic().addr)
        link = domain_.link_to(nic, vni, pid, err);
    else if (udp)
        link = udp->link_to(peer_ipv4(domain_.nic(), nic), udp_port(vni, pid));
    else
        err = -FI_EHOSTUNREACH;
    if (link) link->set_peer_key(peer_key(nic, pid, vni));
    return link;
}

transport::Link *PeerLinks::route(fi_addr_t dest, int &err) {
    Av *av = ctx_.av();
    Av::Entry *e = av ? av->entry(dest) : nullptr;
    if (!e) {
        err = -FI_EINVAL;
        return nullptr;
    }
    bool cacheable = av->rx_ctx_bits() == 0;
    auto *link = static_cast<transport::Link *>(e->peer_cache.load(std::memory_order_acquire));
    if (link && cacheable && link->alive()) return link;
    CxiAddr a;
    std::memcpy(&a, e->addr.data(), sizeof(a));
    uint32_t pid = a.pid + av->rx_index(dest);
    link = link_for(a.nic, pid, peer_vni(a.vni), err);
    // Shared-memory links belong to the domain and may be cached in the (shared) AV;
    // UDP channels belong to this context.
    if (link && cacheable && !link->completes_on_ack())
        e->peer_cache.store(link, std::memory_order_release);
    return link;
}

}  // namespace softnic::cxi

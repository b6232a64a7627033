// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "cxi/core/peer_links.hpp"

#include <rdma/fi_cxi_ext.h>

#include <algorithm>
#include <cstring>

#include "common/log.hpp"
#include "cxi/core/pid_engine.hpp"
#include "cxi/obj/domain.hpp"
#include "cxi/prov/env.hpp"

namespace softnic::cxi {

PeerLinks::PeerLinks(PidEngine &engine, uint16_t vni)
    : engine_(engine),
      domain_(engine.domain()),
      naming_(domain_.nic()),
      vni_(vni),
      offload_(env().offload) {}

void PeerLinks::listen_on(const std::vector<uint16_t> &vnis) {
    if (vnis.empty()) return;
    vni_ = vnis[0];
    extra_.clear();
    for (size_t i = 1; i < vnis.size(); i++)
        extra_.push_back(VniPorts{vnis[i], {}});
}

bool PeerLinks::listens_on_extra(uint16_t vni) const {
    return std::any_of(extra_.begin(), extra_.end(),
                       [&](const VniPorts &v) { return v.vni == vni; });
}

// Ports for (our NIC, vni, pid) on every transport: 0, -EADDRINUSE when that address
// is taken on one of them, or another -errno.
int PeerLinks::open_ports(transport::PortSet &set, uint16_t vni, uint32_t pid) {
    const Env &e = env();
    transport::PortOptions o;
    o.naming = &naming_;
    o.ring = {uint32_t(e.shm_cell_size), uint32_t(e.shm_ring_cells)};
    o.attachment = domain_.window_attachment(engine_.caps() & FI_RMA_EVENT);
    o.udp = domain_.udp_config();
    return set.open(transport::Address{domain_.nic().addr, vni, pid}, o, domain_.peers());
}

int PeerLinks::open(uint32_t pid) {
    int err = open_ports(ports_, vni_, pid);
    if (err) return err;
    for (VniPorts &v : extra_)  // FI_AV_AUTH_KEY: the same PID on each other VNI
        if (open_ports(v.ports, v.vni, pid)) {
            close();
            return -EADDRINUSE;
        }
    return 0;
}

void PeerLinks::close() {
    last_route_ = {};  // its link belongs to the ports
    ports_.close();
    for (VniPorts &v : extra_)
        v.ports.close();
}

void PeerLinks::poll_extra(transport::PacketSink &sink, unsigned tick) {
    for (VniPorts &v : extra_) {  // FI_AV_AUTH_KEY's other VNIs: not watched by the helper
        if (v.ports.poll(sink, (tick & 63) == 0)) report_news(v.ports);
    }
}

// What the ports saw besides packets: datagrams of other VNIs the transport refused,
// and links it gave up on.
void PeerLinks::report_news(transport::PortSet &set) {
    if (uint64_t foreign = set.take_foreign()) domain_.count(SOFTNIC_CNTR_VNI_DROPPED, foreign);
    if (!set.failed().empty()) report_failed(set.failed());
}

// Links the transport gave up on: say why, and fail what was addressed to the peer and
// what it was still sending.
void PeerLinks::report_failed(std::vector<transport::Link *> &failed) {
    for (transport::Link *l : failed) {
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
            engine_.peer_failed(l, nic, pid, FI_ENOTCONN, C_RC_VNI_NOT_FOUND);
        else if (never_there)
            engine_.peer_failed(l, nic, pid, FI_EIO, C_RC_PTLTE_NOT_FOUND);
        else
            engine_.peer_failed(l, nic, pid, FI_EHOSTUNREACH, C_RC_UNDELIVERABLE);
    }
    failed.clear();
}

transport::Link *PeerLinks::link_for(uint32_t nic, uint32_t pid, uint16_t vni, int &err,
                                     bool &shared) {
    transport::PortSet *set = &ports_;
    if (vni != vni_) {  // FI_AV_AUTH_KEY: one of the other VNIs we listen on
        auto it = std::find_if(extra_.begin(), extra_.end(),
                               [&](const VniPorts &v) { return v.vni == vni; });
        if (it == extra_.end()) {
            SN_WARN(FI_LOG_EP_DATA, "VNI %u is not one this endpoint was enabled with\n", vni);
            err = -FI_EINVAL;
            return nullptr;
        }
        set = &it->ports;
    }
    transport::Link *link = set->link_to(transport::Address{nic, vni, pid}, err, shared);
    if (link) link->set_peer_key(peer_key(nic, pid, vni));
    return link;
}

transport::Link *PeerLinks::route(fi_addr_t dest, int &err) {
    Av *av = engine_.av();
    if (!av) {
        err = -FI_EINVAL;
        return nullptr;
    }
    const uint64_t gen = av->generation();
    if (dest == last_route_.dest && gen == last_route_.gen && last_route_.link->alive())
        return last_route_.link;
    transport::Link *link = resolve_route(av, dest, err);
    if (link) last_route_ = LastRoute{dest, gen, link};
    return link;
}

// Through the AV entry and the link it caches.
transport::Link *PeerLinks::resolve_route(Av *av, fi_addr_t dest, int &err) {
    Av::Entry *e = av->entry(dest);
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
    bool shared = false;
    link = link_for(a.nic, pid, peer_vni(a.vni), err, shared);
    // Links of the domain's peer table may be cached in the (shared) AV; links that
    // belong to one of this context's ports (UDP channels) may not.
    if (link && cacheable && shared) e->peer_cache.store(link, std::memory_order_release);
    return link;
}

}  // namespace softnic::cxi

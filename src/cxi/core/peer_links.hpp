// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A context's ports and its paths to peers: a transport::PortSet on its VNI (and on
// each other VNI of an FI_AV_AUTH_KEY endpoint), named by NicNaming. Which transport
// reaches which peer is the port set's choice (transport/ports.hpp); the protocols
// above see only transport::Link.
#pragma once

#include <rdma/fabric.h>

#include <memory>
#include <vector>

#include "cxi/core/wire.hpp"
#include "cxi/obj/addr.hpp"
#include "cxi/prov/nic.hpp"
#include "transport/ports.hpp"

namespace softnic {
class Av;
}

namespace softnic::cxi {

class PidEngine;
class Domain;

// The names a soft NIC's endpoints go by: rings after (NIC, VNI, PID), UDP ports after
// (VNI, PID) at the NIC's IP address.
class NicNaming final : public transport::Naming {
  public:
    explicit NicNaming(const SoftNic &nic) : nic_(nic) {}
    std::string local_name(const transport::Address &a) const override {
        return ring_name(a.node, a.realm, a.id);
    }
    uint32_t ipv4(uint32_t node) const override {
        return node == nic_.addr ? nic_.ipv4 : peer_ipv4(nic_, node);
    }
    uint16_t ip_port(const transport::Address &a) const override { return udp_port(a.realm, a.id); }

  private:
    const SoftNic &nic_;
};

class PeerLinks {
  public:
    PeerLinks(PidEngine &engine, uint16_t vni);
    PeerLinks(const PeerLinks &) = delete;
    PeerLinks &operator=(const PeerLinks &) = delete;

    // FI_AV_AUTH_KEY: listen on each of `vnis` (the AV's keys) rather than the
    // endpoint's own VNI, with one PID on all of them. Before open().
    void listen_on(const std::vector<uint16_t> &vnis);
    // Ports on every VNI for `pid`: 0, -EADDRINUSE when one is taken, or another -errno.
    int open(uint32_t pid);
    void close();
    bool is_open() const { return ports_.is_open(); }
    uint16_t vni() const { return vni_; }
    bool listens_on(uint16_t vni) const {
        return vni == vni_ || (!extra_.empty() && listens_on_extra(vni));
    }

    // Reads the rings (and the sockets when due); `tick` counts progress calls. Inline:
    // the loop of an application waiting for a message runs this.
    [[gnu::always_inline]] void poll(transport::PacketSink &sink, unsigned tick) {
        // Without the offload helper nobody watches a quiet socket: look now and then.
        if (ports_.poll(sink, (tick & 63) == 0 && !offload_)) report_news(ports_);
        if (!extra_.empty()) poll_extra(sink, tick);
    }
    void poll_ring(transport::PacketSink &sink) { ports_.poll_local(sink); }  // own VNI only

    // The link to (nic, pid) on `vni`; null with err set when there is none.
    transport::Link *link_for(uint32_t nic, uint32_t pid, uint16_t vni, int &err) {
        bool shared;
        return link_for(nic, pid, vni, err, shared);
    }
    // As above; `shared`: the domain's link, which the AV may cache for every context.
    transport::Link *link_for(uint32_t nic, uint32_t pid, uint16_t vni, int &err, bool &shared);
    transport::Link *route(fi_addr_t dest, int &err);  // through the AV and its cache
    // The VNI a packet on `link` travels on, that of a peer's address, of a source key.
    uint16_t vni_of(const transport::Link *link) const {
        uint64_t key = extra_.empty() ? 0 : link->peer_key();
        return key ? uint16_t(key >> 32) : vni_;
    }
    // What a link records of its peer (Link::peer_key): the address key, marked known.
    static constexpr uint64_t kKnownPeer = 1ULL << 63;
    static uint64_t peer_key(uint32_t nic, uint32_t pid, uint16_t vni) {
        return kKnownPeer | addr_key(nic, pid, vni);
    }
    uint16_t peer_vni(uint16_t addr_vni) const { return extra_.empty() ? vni_ : addr_vni; }
    uint64_t source_key(const WirePrefix &h) const {
        return addr_key(h.src_nic, h.src_pid, extra_.empty() ? 0 : h.vni);
    }
    uint16_t key_vni(uint64_t key) const { return extra_.empty() ? vni_ : uint16_t(key >> 32); }

    // The offload helper's view of the own VNI's ports; work they have pending.
    transport::PortSet &ports() { return ports_; }
    bool ports_busy() const { return ports_.busy(); }

  private:
    int open_ports(transport::PortSet &set, uint16_t vni, uint32_t pid);
    bool listens_on_extra(uint16_t vni) const;
    void poll_extra(transport::PacketSink &sink, unsigned tick);
    void report_news(transport::PortSet &set);
    transport::Link *resolve_route(Av *av, fi_addr_t dest, int &err);
    void report_failed(std::vector<transport::Link *> &failed);

    PidEngine &engine_;
    Domain &domain_;
    NicNaming naming_;
    uint16_t vni_;
    bool offload_;  // the offload helper watches our socket
    transport::PortSet ports_;
    // FI_AV_AUTH_KEY: the VNIs beyond vni_ this context listens on.
    struct VniPorts {
        uint16_t vni;
        transport::PortSet ports;
    };
    std::vector<VniPorts> extra_;
    // The last route taken: a run of sends to one peer skips the AV. Links live as long
    // as the ports (close() forgets this one); a dead one is no longer alive(), and an
    // insert or remove changes the AV's generation.
    struct LastRoute {
        fi_addr_t dest = FI_ADDR_NOTAVAIL;
        uint64_t gen = 0;  // never an AV's (they start at 1): an empty route never hits
        transport::Link *link = nullptr;
    } last_route_;
};

}  // namespace softnic::cxi

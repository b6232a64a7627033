// A context's ports and its paths to peers. Its ports: a shared-memory receive ring and
// a UDP socket on its VNI (and on each other VNI of an FI_AV_AUTH_KEY endpoint). Its
// paths: an endpoint on our own NIC is reached through its ring (a link the domain
// keeps), any other NIC through our socket and a reliable channel. The protocols above
// see only transport::Link.
#pragma once

#include <rdma/fabric.h>

#include <memory>
#include <vector>

#include "cxi/addr.hpp"
#include "cxi/wire.hpp"
#include "transport/transport.hpp"
#include "transport/udp/udp_endpoint.hpp"

namespace softnic::cxi {

class Context;
class Domain;

class PeerLinks {
  public:
    PeerLinks(Context &ctx, uint16_t vni);
    PeerLinks(const PeerLinks &) = delete;
    PeerLinks &operator=(const PeerLinks &) = delete;

    // FI_AV_AUTH_KEY: listen on each of `vnis` (the AV's keys) rather than the
    // endpoint's own VNI, with one PID on all of them. Before open().
    void listen_on(const std::vector<uint16_t> &vnis);
    // Ports on every VNI for `pid`: 0, -EADDRINUSE when one is taken, or another -errno.
    int open(uint32_t pid);
    void close();
    bool is_open() const { return rxq_ != nullptr; }
    uint16_t vni() const { return vni_; }
    bool listens_on(uint16_t vni) const {
        return vni == vni_ || (!extra_.empty() && listens_on_extra(vni));
    }

    // Reads the rings (and the sockets when due); `tick` counts progress calls. Inline:
    // the loop of an application waiting for a message runs this.
    void poll(transport::PacketSink &sink, unsigned tick) {
        rxq_->poll(sink, 64);
        // Without the offload helper nobody watches a quiet socket: look now and then.
        if (udp_ && (udp_->wants_poll() || ((tick & 63) == 0 && !offload_)))
            poll_udp(*udp_, sink, foreign_seen_);
        if (!extra_.empty()) poll_extra(sink, tick);
    }
    void poll_ring(transport::PacketSink &sink);  // the own VNI's ring only

    // The link to (nic, pid) on `vni`; null with err set when there is none.
    transport::Link *link_for(uint32_t nic, uint32_t pid, uint16_t vni, int &err);
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
    uint64_t source_key(const WireHdr &h) const {
        return addr_key(h.src_nic, h.src_pid, extra_.empty() ? 0 : h.vni);
    }
    uint16_t key_vni(uint64_t key) const { return extra_.empty() ? vni_ : uint16_t(key >> 32); }

    // The offload helper's view of the main socket.
    transport::udp::UdpEndpoint *udp() { return udp_.get(); }
    bool udp_busy() const { return udp_ && udp_->busy(); }

  private:
    std::unique_ptr<transport::udp::UdpEndpoint> open_udp(uint16_t vni, uint32_t pid, int &err);
    std::unique_ptr<transport::RxQueue> open_ring(uint16_t vni, uint32_t pid, int &err);
    int open_extra_vnis(uint32_t pid);
    bool listens_on_extra(uint16_t vni) const;
    void poll_extra(transport::PacketSink &sink, unsigned tick);
    void poll_udp(transport::udp::UdpEndpoint &udp, transport::PacketSink &sink,
                  uint64_t &foreign_seen);
    void report_failed();

    Context &ctx_;
    Domain &domain_;
    uint16_t vni_;
    bool offload_;  // the offload helper watches our socket
    std::unique_ptr<transport::RxQueue> rxq_;
    std::unique_ptr<transport::udp::UdpEndpoint> udp_;
    uint64_t foreign_seen_ = 0;  // the UDP transport's count of other-VNI datagrams, seen
    std::vector<transport::Link *> failed_links_;
    // FI_AV_AUTH_KEY: the VNIs beyond vni_ this context listens on.
    struct VniPort {
        uint16_t vni;
        std::unique_ptr<transport::RxQueue> rxq;
        std::unique_ptr<transport::udp::UdpEndpoint> udp;
        uint64_t foreign_seen = 0;
    };
    std::vector<VniPort> extra_;
};

}  // namespace softnic::cxi

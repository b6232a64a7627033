// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The UDP transport as a Port: the endpoint's socket, at the port its address names,
// and one reliable channel per peer over it (channels are the socket's state, so they
// live in the port, not in the domain's table).
#include "transport/ports.hpp"

namespace softnic::transport {
namespace {

class UdpPort final : public Port {
  public:
    UdpPort(std::unique_ptr<udp::UdpEndpoint> ep, const Naming &n)
        : ep_(std::move(ep)), naming_(n) {}

    RxQueue &queue() override { return *ep_; }
    bool reaches(const Address &peer) const override { return naming_.ipv4(peer.node) != 0; }
    bool shares_links() const override { return false; }
    Link *link_to(const Address &peer, int &err) override {
        Link *l = ep_->link_to(naming_.ipv4(peer.node), naming_.ip_port(peer));
        if (!l) err = -EHOSTUNREACH;
        return l;
    }
    bool polled_always() const override { return false; }
    bool wants_poll() const override { return ep_->wants_poll(); }
    bool busy() const override { return ep_->busy(); }
    Signals signals() const override { return {&ep_->active_flag(), &ep_->busy_flag()}; }
    int wake_fd() const override { return ep_->fd(); }
    void mark_active() override { ep_->mark_active(); }
    void linger() override { ep_->linger(); }
    uint64_t foreign() const override { return ep_->stats().foreign; }

  private:
    std::unique_ptr<udp::UdpEndpoint> ep_;
    const Naming &naming_;
};

class UdpTransport final : public Transport {
  public:
    const char *name() const override { return "UDP"; }
    // Without a socket an endpoint still serves its own node.
    bool required() const override { return false; }
    std::unique_ptr<Port> open(const Address &self, const PortOptions &o, PeerTable &,
                               int &err) const override {
        udp::UdpConfig cfg = o.udp;
        cfg.realm = self.realm;  // peers of other realms are refused
        auto ep =
            udp::UdpEndpoint::open(o.naming->ipv4(self.node), o.naming->ip_port(self), cfg, err);
        if (!ep) return nullptr;
        return std::make_unique<UdpPort>(std::move(ep), *o.naming);
    }
};

}  // namespace

const Transport &udp_transport() {
    static const UdpTransport t;
    return t;
}

}  // namespace softnic::transport

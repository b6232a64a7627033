// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The shared-memory transport as a Port: the endpoint's ring, and links to the rings of
// peers on the same node, shared by every port of the domain (any local process may
// write a ring).
#include "transport/ports.hpp"

namespace softnic::transport {
namespace {

class ShmPort final : public Port {
  public:
    ShmPort(std::unique_ptr<shm::ShmRxQueue> q, const Address &self, const Naming &n,
            PeerTable &peers, const Transport &t)
        : rxq_(std::move(q)), self_(self), naming_(n), peers_(peers), transport_(t) {}

    RxQueue &queue() override { return *rxq_; }
    bool reaches(const Address &peer) const override { return peer.node == self_.node; }
    bool shares_links() const override { return true; }
    Link *link_to(const Address &peer, int &err) override {
        return peers_.shared(transport_, peer, naming_, open_link, err);
    }

  private:
    static std::unique_ptr<Link> open_link(const Address &peer, const Naming &n, int &err) {
        std::unique_ptr<Link> l = shm::ShmLink::open(n.local_name(peer), err);
        if (!l) err = -ENOENT;  // no ring: no endpoint at that address
        return l;
    }

    std::unique_ptr<shm::ShmRxQueue> rxq_;
    Address self_;
    const Naming &naming_;
    PeerTable &peers_;
    const Transport &transport_;
};

class ShmTransport final : public Transport {
  public:
    const char *name() const override { return "shared memory"; }
    // The ring is how an address is claimed on a node (created exclusively).
    bool required() const override { return true; }
    std::unique_ptr<Port> open(const Address &self, const PortOptions &o, PeerTable &peers,
                               int &err) const override {
        auto q = shm::ShmRxQueue::create(o.naming->local_name(self), o.ring, err, o.attachment);
        if (!q) return nullptr;
        return std::make_unique<ShmPort>(std::move(q), self, *o.naming, peers, *this);
    }
};

}  // namespace

const Transport &shm_transport() {
    static const ShmTransport t;
    return t;
}

}  // namespace softnic::transport

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Ports and the per-peer table: how a protocol reaches its peers without choosing a
// transport. A local endpoint opens a PortSet, one receive port on every transport
// that transports() lists, in order of preference. A peer is reached through the first
// port whose transport reaches it: shared memory on the same node, UDP elsewhere.
// Links that the endpoints of a domain can share (any local process may write a
// peer's ring) live in the domain's PeerTable; links tied to one port (a UDP channel's
// sequence state belongs to its socket) live in that port. Adding a transport touches
// this folder only.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "transport/naming.hpp"
#include "transport/shm/shm_transport.hpp"
#include "transport/transport.hpp"
#include "transport/udp/udp_endpoint.hpp"

namespace softnic::transport {

// What opening a port may need, by transport (each takes its part; defaults are sane).
struct PortOptions {
    const Naming *naming = nullptr;
    shm::RingGeometry ring;
    uint64_t attachment = 0;  // the word a shared-memory ring publishes for the protocol
    udp::UdpConfig udp;       // its realm is the address's
};

class PeerTable;

// One transport's receive port for a local endpoint, and its links to peers.
class Port {
  public:
    virtual ~Port() = default;
    // The transport's receive queue, which the port set polls directly.
    virtual RxQueue &queue() = 0;
    // Whether this port's transport can carry packets to `peer`.
    virtual bool reaches(const Address &peer) const = 0;
    // The link to `peer`, opened on first use; null with err set (-ENOENT: nobody there).
    virtual Link *link_to(const Address &peer, int &err) = 0;
    // Whether its links are the domain's (PeerTable), shared by every port, or its own.
    virtual bool shares_links() const = 0;
    // Cheap enough to poll on every progress call; otherwise polled when wants_poll()
    // says so or now and then, with wake_fd() readable when packets arrive.
    virtual bool polled_always() const { return true; }
    virtual bool wants_poll() const { return false; }
    virtual bool busy() const { return false; }  // timers or acknowledgements pending
    virtual int wake_fd() const { return -1; }
    virtual void mark_active() {}                   // packets arrived while nobody polled
    virtual void linger() {}                        // about to close: keep answering peers a little
    virtual uint64_t foreign() const { return 0; }  // packets of other realms refused
};

class Transport {
  public:
    virtual ~Transport() = default;
    virtual const char *name() const = 0;
    // Whether an endpoint cannot work without this port (its address is claimed there).
    virtual bool required() const = 0;
    // self's port: null with err set, -EADDRINUSE when another endpoint has the address.
    virtual std::unique_ptr<Port> open(const Address &self, const PortOptions &o, PeerTable &peers,
                                       int &err) const = 0;
};

// Every transport, in order of preference.
const std::vector<const Transport *> &transports();

// The domain's table of peers: the links that its ports share, one per peer and
// transport. Links stay allocated as long as the table (callers may cache pointers);
// a link whose peer went away is forgotten and the next lookup opens a new one.
class PeerTable {
  public:
    using Opener = std::unique_ptr<Link> (*)(const Address &peer, const Naming &n, int &err);
    Link *shared(const Transport &t, const Address &peer, const Naming &n, Opener open, int &err);
    void forget(const Link *link);

  private:
    std::mutex lock_;
    std::map<std::pair<const Transport *, uint64_t>, Link *> by_peer_;
    std::vector<std::unique_ptr<Link>> all_;  // retired ones too
};

// A local endpoint's ports, one per transport.
class PortSet {
  public:
    // 0, -EADDRINUSE when a required port's address is taken, or another -errno. A
    // transport that is not required and fails is left out (logged).
    int open(const Address &self, const PortOptions &o, PeerTable &peers);
    void close();
    bool is_open() const { return !ports_.empty(); }

    // Host-local queues on every call; the others when they ask or when `periodic`.
    void poll(PacketSink &sink, bool periodic) {
        for (Entry &e : ports_)
            if (e.always)
                e.queue->poll(sink, 64);
            else if (periodic || e.port->wants_poll())
                poll_quiet(e, sink);
    }
    void poll_local(PacketSink &sink);  // the host-local queues only
    // Links whose peer died and packets refused from other realms, since the last call.
    bool has_news() const { return !failed_.empty() || foreign_new_; }
    uint64_t take_foreign() { return std::exchange(foreign_new_, 0); }
    std::vector<Link *> &failed() { return failed_; }

    // The link to `peer` through the first port that reaches it; `shared` says whether
    // it is the domain's (any endpoint of the domain may use and cache it).
    Link *link_to(const Address &peer, int &err, bool &shared) {
        // A run of sends to one peer over a link of our own (a shared link is the peer
        // table's to replace when its peer dies, and the AV caches those).
        if (last_ && peer.key() == last_key_ && last_->alive()) {
            shared = false;
            return last_;
        }
        return resolve(peer, err, shared);
    }

    // For an offload helper: the descriptor to watch (the first port that has one) and
    // whether to watch it now; work pending without the application; packets arrived.
    int wake_fd() const;
    bool watch() const;
    bool busy() const {  // on every progress call: host-local queues never are
        for (const Entry &e : ports_)
            if (!e.always && e.port->busy()) return true;
        return false;
    }
    void mark_active();

  private:
    struct Entry {
        std::unique_ptr<Port> port;
        RxQueue *queue;  // port->queue()
        bool always;
        uint64_t foreign_seen = 0;
    };
    void poll_quiet(Entry &e, PacketSink &sink);
    Link *resolve(const Address &peer, int &err, bool &shared);

    std::vector<Entry> ports_;
    std::vector<Link *> failed_;
    uint64_t foreign_new_ = 0;
    Link *last_ = nullptr;  // the last peer's link, when it is one of our ports'
    uint64_t last_key_ = 0;
};

}  // namespace softnic::transport

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
#include "transport/port.hpp"
#include "transport/shm/shm_transport.hpp"
#include "transport/transport.hpp"

namespace softnic::transport {

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
    // True when there is news (has_news()): only the others bring any.
    [[gnu::always_inline]] bool poll(PacketSink &sink, bool periodic) {
        if (ring_) ring_->poll(sink, 64);  // direct, and so inlined: the class is final
        bool polled = false;
        if (quiet_ && (periodic || quiet_->wants_poll())) {
            poll_quiet(*quiet_, sink);
            polled = true;
        }
        if (more_) [[unlikely]]
            polled |= poll_more(sink, periodic);
        return polled && has_news();
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
        if (quiet_ && quiet_->busy()) return true;
        return more_ && more_busy();
    }
    void mark_active();

  private:
    struct Entry {
        std::unique_ptr<Port> port;
        RxQueue *queue;  // port->queue()
        bool always;
        Port::Signals sig;
        uint64_t foreign_seen = 0;
        bool wants_poll() const {
            if (!sig.active) return port->wants_poll();
            return sig.active->load(std::memory_order_relaxed) ||
                   sig.busy->load(std::memory_order_relaxed);
        }
        bool busy() const {
            return sig.busy ? sig.busy->load(std::memory_order_relaxed) : port->busy();
        }
    };
    void poll_quiet(Entry &e, PacketSink &sink);
    bool poll_more(PacketSink &sink, bool periodic);  // local_ and more_quiet_
    bool more_busy() const;
    Link *resolve(const Address &peer, int &err, bool &shared);

    std::vector<Entry> ports_;
    // The same ports split for progress: host-local queues, polled on every call, and
    // the others, polled when they ask. The shared-memory ring is read by its own type
    // and the first quiet port (UDP's) directly; any further ports (none today) wait
    // behind one flag, so that they cost the common case one test.
    shm::ShmRxQueue *ring_ = nullptr;
    Entry *quiet_ = nullptr;
    bool more_ = false;  // local_ or more_quiet_ holds any
    std::vector<RxQueue *> local_;
    std::vector<Entry *> more_quiet_;
    std::vector<Link *> failed_;
    uint64_t foreign_new_ = 0;
    Link *last_ = nullptr;  // the last peer's link, when it is one of our ports'
    uint64_t last_key_ = 0;
};

}  // namespace softnic::transport

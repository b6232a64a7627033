// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A port: one transport's receive queue for a local endpoint and its links to peers,
// and the Transport that opens it. transports() lists every transport in order of
// preference; the port set (ports.hpp) opens one port on each.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
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
    // The flags behind wants_poll() (active || busy) and a superset of busy(), where the
    // transport keeps them as atomics: read on every progress without a virtual call.
    struct Signals {
        const std::atomic<bool> *active = nullptr, *busy = nullptr;
    };
    virtual Signals signals() const { return {}; }
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

}  // namespace softnic::transport

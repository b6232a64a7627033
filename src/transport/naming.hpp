// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Endpoints in transport-neutral terms (node, realm, id) and the protocol's naming rules
// from which each transport derives its own names (ring files, UDP ports).
#pragma once

#include <cstdint>
#include <string>

namespace softnic::transport {

// An endpoint in transport-neutral terms: the node (NIC) it lives on, the realm (VNI)
// it belongs to and its number there (PID, below 65536).
struct Address {
    uint32_t node = 0;
    uint16_t realm = 0;
    uint32_t id = 0;
    uint64_t key() const { return uint64_t(realm) << 48 | uint64_t(node) << 16 | (id & 0xffff); }
};

// The protocol's naming rules, from which each transport derives its own names.
class Naming {
  public:
    virtual ~Naming() = default;
    // The name of a host-local queue (shared memory) of endpoint `a`.
    virtual std::string local_name(const Address &a) const = 0;
    // The IPv4 address (host order) of `node`, 0 when it has none; the UDP port of `a`.
    virtual uint32_t ipv4(uint32_t node) const = 0;
    virtual uint16_t ip_port(const Address &a) const = 0;
};

}  // namespace softnic::transport

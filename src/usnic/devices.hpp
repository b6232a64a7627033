// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// usNIC devices: each up Linux interface with an IPv4 address stands for one usnic_N
// device, read from the kernel over netlink (libnl-route-3).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace softnic::usnic {

struct Device {
    unsigned index = 0;  // N of usnic_N
    std::string name;    // "usnic_N"
    std::string ifname;  // the Linux interface
    int ifindex = 0;
    uint32_t ip_be = 0;       // IPv4 address, network order
    uint32_t netmask_be = 0;  // network order
    unsigned prefixlen = 0;
    unsigned mtu = 1500;      // IP MTU
    unsigned speed_mbps = 0;  // 0: unknown
    uint8_t mac[6] = {};
    bool link_up = false;
    // "a.b.c.d/n": the network in CIDR form (the fabric name for API >= 1.4).
    std::string cidr() const;
    std::string ip_string() const;
};

// The devices of this host, read once per process (as upstream caches them).
// FI_USNIC_IFACES (a comma list) picks interfaces, loopback included; unset: every up
// interface but loopback that has an IPv4 address.
const std::vector<Device> &devices();

// The device whose name is `name` ("usnic_N") or whose fabric name (CIDR) it is.
const Device *find_device(const char *name);

// Re-read the interface's live state (link, MTU, speed) for the getinfo extension.
Device refresh(const Device &d);

// Sets the interface list (from the provider parameter) before the first devices().
void set_iface_filter(const std::string &list);

}  // namespace softnic::usnic

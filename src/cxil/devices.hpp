// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Soft NICs: cxiN devices, each bound to one IPv4 interface address.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace softnic::cxil {

constexpr uint32_t kNicAddrBits = 20;
constexpr uint32_t kNicAddrMask = (1u << kNicAddrBits) - 1;

struct SoftNic {
    unsigned index;      // N of cxiN
    std::string name;    // "cxiN"
    std::string ifname;  // backing interface
    uint32_t ipv4;       // host byte order
    uint32_t addr;       // NIC address: the low 20 bits of ipv4
    unsigned mtu;
};

// Whether `ipv4` (host order) is a loopback address or one of this host's interfaces.
bool is_host_ipv4(uint32_t ipv4);

using Warn = std::function<void(const std::string &)>;

// The soft NICs named by `soft_nics` (FI_CXI_SOFT_NICS: addresses or interfaces, comma
// separated), else the default-route interface, else loopback; `device_filter` is
// FI_CXI_DEVICE_NAME (a comma list of cxiN names; malformed lists are ignored).
std::vector<SoftNic> discover(const std::string &soft_nics, const std::string &device_filter,
                              const Warn &warn);

}  // namespace softnic::cxil

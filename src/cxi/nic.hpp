// Soft NICs: cxiN devices, each bound to one IPv4 interface address.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace softnic::cxi {

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

// All soft NICs of this host (FI_CXI_SOFT_NICS, else the default-route interface, else
// loopback), filtered by FI_CXI_DEVICE_NAME. Computed once.
const std::vector<SoftNic> &soft_nics();
const SoftNic *find_nic(const std::string &name);
const SoftNic *find_nic_by_addr(uint32_t addr);
// The IPv4 address (host order) of NIC `addr` seen from `local`: all hosts of a fabric
// share the address bits above the 20-bit NIC address.
inline uint32_t peer_ipv4(const SoftNic &local, uint32_t addr) {
    return (local.ipv4 & ~kNicAddrMask) | (addr & kNicAddrMask);
}

}  // namespace softnic::cxi

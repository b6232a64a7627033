// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Soft NICs as the provider sees them (discovery lives in src/cxil, shared with libcxi).
#pragma once

#include "cxil/devices.hpp"

namespace softnic::cxi {

using cxil::kNicAddrBits;
using cxil::kNicAddrMask;
using cxil::SoftNic;

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

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The cxi address: 8 bytes, PID in bits 0-8 and NIC in bits 9-28 of the first word,
// then the VNI (which an endpoint's own name leaves at 0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace softnic::cxi {

constexpr uint32_t kPidBits = 9;
constexpr uint32_t kPidAny = (1u << kPidBits) - 1;  // 511: pick any free PID
constexpr uint32_t kMaxPid = kPidAny - 1;           // 510

struct CxiAddr {
    uint32_t pid : 9;
    uint32_t nic : 20;
    // softnic only, in source addresses: the PID came from a port-like service, and the
    // endpoint takes any free PID when it is held (fabtests' -E client binds the server's).
    uint32_t pid_preferred : 1;
    uint32_t pad : 2;
    uint16_t vni;
    uint16_t pad2;
};
static_assert(sizeof(CxiAddr) == 8, "fi_getname returns 8 bytes");

// Applications built for libfabric before 1.20 know the 4-byte address (the first word:
// PID and NIC; Mercury checks the length); 1.20 and later the 8-byte one with the VNI.
constexpr size_t kCompactAddrLen = 4;
inline size_t addr_len(uint32_t api_version) {
    return api_version >= ((1u << 16) | 20) ? sizeof(CxiAddr) : kCompactAddrLen;
}
// An application's address of `len` bytes (either form), widened; the VNI of a compact
// one is 0.
inline CxiAddr read_addr(const void *addr, size_t len) {
    CxiAddr a{};
    std::memcpy(&a, addr, len < sizeof(a) ? len : sizeof(a));
    return a;
}

inline CxiAddr make_addr(uint32_t nic, uint32_t pid, uint16_t vni = 0) {
    CxiAddr a{};
    a.pid = pid & kPidAny;
    a.nic = nic & ((1u << 20) - 1);
    a.vni = vni;
    return a;
}

inline uint32_t addr_word(const CxiAddr &a) {
    return (uint32_t(a.nic) << 9) | a.pid;
}

// The identity of an endpoint on the fabric: (NIC, PID) within a VNI.
inline uint64_t addr_key(uint32_t nic, uint32_t pid, uint16_t vni = 0) {
    return (uint64_t(vni) << 32) | (uint64_t(nic) << 9) | pid;
}
inline uint64_t addr_key(const CxiAddr &a) {
    return addr_key(a.nic, a.pid, a.vni);
}

std::string addr_to_string(const CxiAddr &a);
// node: "cxiN", a MAC "aa:bb:cc:dd:ee:ff", an integer NIC address (any base), or an
// IPv4 address or host name: a soft NIC's own address names it, any other address of
// this host (127.0.0.1 too) the first soft NIC, a remote address the NIC of its low
// 20 bits (the soft NIC addressing rule).
bool parse_node(const char *node, uint32_t &nic);

// service: a PID 0..510 as on the hardware, or a port-like number 511..65535, which
// names PID kPortPidBase + port % kPortPidSpan on every host alike (port_like is set).
constexpr uint32_t kPortPidBase = 256;
constexpr uint32_t kPortPidSpan = kMaxPid + 1 - kPortPidBase;  // 255: PIDs 256..510
bool parse_service(const char *service, uint32_t &pid, bool *port_like = nullptr);

// The shared-memory name of an endpoint's receive ring.
std::string ring_name(uint32_t nic, uint16_t vni, uint32_t pid);
// The UDP port of endpoint (VNI, PID) on every NIC: FI_CXI_UDP_PORT_BASE +
// (VNI % 16) * 512 + PID, so a remote peer computes it from the address alone.
uint16_t udp_port(uint16_t vni, uint32_t pid);

}  // namespace softnic::cxi

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "cxi/obj/addr.hpp"

#include "cxi/prov/env.hpp"

#include <arpa/inet.h>
#include <netdb.h>

#include <cstdio>

#include "common/info.hpp"
#include "cxi/prov/nic.hpp"

namespace softnic::cxi {

std::string addr_to_string(const CxiAddr &a) {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "fi_addr_cxi://0x%08x", addr_word(a));
    return buf;
}

namespace {

// An IPv4 address or a host name resolving to one, in host order.
bool resolve_ipv4(const char *node, uint32_t &ip) {
    in_addr a{};
    if (inet_pton(AF_INET, node, &a) == 1) {
        ip = ntohl(a.s_addr);
        return true;
    }
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_INET;
    if (getaddrinfo(node, nullptr, &hints, &res) != 0 || !res) return false;
    ip = ntohl(reinterpret_cast<sockaddr_in *>(res->ai_addr)->sin_addr.s_addr);
    freeaddrinfo(res);
    return true;
}

// The NIC an IPv4 address names (see addr.hpp).
uint32_t nic_of_ipv4(uint32_t ip) {
    const auto &nics = soft_nics();
    for (const auto &n : nics)
        if (n.ipv4 == ip) return n.addr;
    if (!nics.empty() && cxil::is_host_ipv4(ip)) return nics.front().addr;
    return ip & kNicAddrMask;
}

}  // namespace

bool parse_node(const char *node, uint32_t &nic) {
    if (!node) return false;
    if (const SoftNic *n = find_nic(node)) {
        nic = n->addr;
        return true;
    }
    unsigned o[6];
    char tail;
    if (std::sscanf(node, "%2x:%2x:%2x:%2x:%2x:%2x%c", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5],
                    &tail) == 6) {
        nic = ((o[3] & 0xf) << 16) | (o[4] << 8) | o[5];
        return true;
    }
    unsigned long v = 0;
    if (info::parse_uint(node, v)) {
        if (v > kNicAddrMask) return false;
        nic = static_cast<uint32_t>(v);
        return true;
    }
    uint32_t ip = 0;
    if (!resolve_ipv4(node, ip)) return false;
    nic = nic_of_ipv4(ip);
    return true;
}

bool parse_service(const char *service, uint32_t &pid, bool *port_like) {
    unsigned long v = 0;
    if (!info::parse_uint(service, v) || v > 65535) return false;
    if (port_like) *port_like = v > kMaxPid;
    pid = v <= kMaxPid ? uint32_t(v) : kPortPidBase + uint32_t(v % kPortPidSpan);
    return true;
}

std::string ring_name(uint32_t nic, uint16_t vni, uint32_t pid) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "/softnic-cxi-%05x-%u-%u", nic, vni, pid);
    return buf;
}

uint16_t udp_port(uint16_t vni, uint32_t pid) {
    return uint16_t(env().udp_port_base + (vni % 16) * 512 + pid);
}

}  // namespace softnic::cxi

#include "cxi/addr.hpp"

#include "cxi/env.hpp"

#include <cstdio>

#include "common/info.hpp"
#include "cxi/nic.hpp"

namespace softnic::cxi {

std::string addr_to_string(const CxiAddr &a) {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "fi_addr_cxi://0x%08x", addr_word(a));
    return buf;
}

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
    if (!info::parse_uint(node, v) || v > kNicAddrMask) return false;
    nic = static_cast<uint32_t>(v);
    return true;
}

bool parse_service(const char *service, uint32_t &pid) {
    unsigned long v = 0;
    if (!info::parse_uint(service, v) || v >= kPidAny) return false;
    pid = static_cast<uint32_t>(v);
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

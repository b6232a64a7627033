// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "usnic/addr.hpp"

#include <arpa/inet.h>
#include <netdb.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace softnic::usnic {
namespace {
constexpr const char kPrefix[] = "fi_sockaddr_in://";
}

std::string to_string(const sockaddr_in &a) {
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &a.sin_addr, ip, sizeof(ip));
    return std::string(kPrefix) + ip + ":" + std::to_string(ntohs(a.sin_port));
}

bool from_string(const char *s, sockaddr_in &out) {
    if (!s || std::strlen(s) > kAddrStrMax) return false;
    if (!std::strncmp(s, kPrefix, sizeof(kPrefix) - 1)) s += sizeof(kPrefix) - 1;
    char ip[INET_ADDRSTRLEN + 1];
    unsigned port = 0;
    const char *colon = std::strrchr(s, ':');
    size_t iplen = colon ? size_t(colon - s) : std::strlen(s);
    if (iplen >= sizeof(ip)) return false;
    std::memcpy(ip, s, iplen);
    ip[iplen] = '\0';
    if (colon && (std::sscanf(colon + 1, "%u", &port) != 1 || port > 65535)) return false;
    out = sockaddr_in{};
    out.sin_family = AF_INET;
    out.sin_port = htons(static_cast<uint16_t>(port));
    return inet_pton(AF_INET, ip, &out.sin_addr) == 1;
}

int resolve(const char *node, const char *service, sockaddr_in &out) {
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_DGRAM;
    if (getaddrinfo(node, service, &hints, &res) || !res) return -FI_EINVAL;
    std::memcpy(&out, res->ai_addr, sizeof(out));
    freeaddrinfo(res);
    return 0;
}

bool from_user(uint32_t format, const void *addr, sockaddr_in &out) {
    if (!addr) return false;
    if (format == FI_ADDR_STR) return from_string(static_cast<const char *>(addr), out);
    std::memcpy(&out, addr, sizeof(out));
    return out.sin_family == AF_INET;
}

int to_user(uint32_t format, const sockaddr_in &a, void *addr, size_t *addrlen) {
    std::string s;
    const void *src = &a;
    size_t need = sizeof(a);
    if (format == FI_ADDR_STR) {
        s = to_string(a);
        src = s.c_str();
        need = s.size() + 1;
    }
    size_t have = *addrlen;
    if (addr && have) std::memcpy(addr, src, std::min(have, need));
    *addrlen = need;
    return have < need ? -FI_ETOOSMALL : 0;
}

}  // namespace softnic::usnic

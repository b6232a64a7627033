// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// usnic addresses: struct sockaddr_in (FI_SOCKADDR_IN / FI_SOCKADDR), or the string
// "fi_sockaddr_in://a.b.c.d:port" (FI_ADDR_STR).
#pragma once

#include <netinet/in.h>
#include <rdma/fabric.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace softnic::usnic {

constexpr size_t kAddrStrMax = 54;  // INET6_ADDRSTRLEN + 8, as upstream

std::string to_string(const sockaddr_in &a);
// Parses "fi_sockaddr_in://a.b.c.d:port" (the prefix may be left out).
bool from_string(const char *s, sockaddr_in &out);
// node/service through getaddrinfo (IPv4); 0 or -FI_EINVAL.
int resolve(const char *node, const char *service, sockaddr_in &out);
// An application's address in `format` (sockaddr or string); false if malformed.
bool from_user(uint32_t format, const void *addr, sockaddr_in &out);
// Write `a` in `format` into addr/*addrlen; -FI_ETOOSMALL (with the full length) when
// the buffer is short.
int to_user(uint32_t format, const sockaddr_in &a, void *addr, size_t *addrlen);
inline bool is_sockaddr_format(uint32_t f) {
    return f == FI_SOCKADDR_IN || f == FI_SOCKADDR;
}
inline uint64_t addr_key(const sockaddr_in &a) {
    return (uint64_t(a.sin_addr.s_addr) << 16) | a.sin_port;
}

}  // namespace softnic::usnic

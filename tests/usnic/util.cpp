// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Shared helpers of the usnic conformance suite (see util.hpp).
#include "util.hpp"

#include <arpa/inet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace usnict {

InfoPtr usnic_hints(fi_ep_type type, uint64_t mode) {
    InfoPtr h(fi_allocinfo());
    if (!h) return h;
    h->fabric_attr->prov_name = strdup("usnic");
    h->ep_attr->type = type;
    h->mode = mode;
    h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED;
    return h;
}

bool is_usnic(const fi_info *i) {
    return i && i->fabric_attr && i->fabric_attr->prov_name &&
           std::strcmp(i->fabric_attr->prov_name, "usnic") == 0;
}

GetinfoResult getinfo(const fi_info *hints, uint32_t api, const char *node, const char *service,
                      uint64_t flags) {
    GetinfoResult r;
    fi_info *out = nullptr;
    r.rc = fi_getinfo(api, node, service, flags, hints, &out);
    r.list.reset(r.rc == 0 ? out : nullptr);
    for (const fi_info *i = r.list.get(); i; i = i->next)
        if (is_usnic(i)) r.usnic.push_back(i);
    return r;
}

sockaddr_in make_sin(uint32_t ip, uint16_t port) {
    sockaddr_in s{};
    s.sin_family = AF_INET;
    s.sin_addr.s_addr = htonl(ip);
    s.sin_port = htons(port);
    return s;
}

sockaddr_in make_sin(const char *ip, uint16_t port) {
    sockaddr_in s{};
    s.sin_family = AF_INET;
    s.sin_port = htons(port);
    inet_pton(AF_INET, ip, &s.sin_addr);
    return s;
}

uint16_t port_of(const sockaddr_in &sin) {
    return ntohs(sin.sin_port);
}
uint32_t ip_of(const sockaddr_in &sin) {
    return ntohl(sin.sin_addr.s_addr);
}

std::string sin_str(const sockaddr_in &sin) {
    char ip[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &sin.sin_addr, ip, sizeof(ip));
    return std::string(ip) + ":" + std::to_string(port_of(sin));
}

int iface_mtu(const char *ifname) {
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) return -1;
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, ifname, IFNAMSIZ - 1);
    const int rc = ioctl(fd, SIOCGIFMTU, &ifr);
    close(fd);
    return rc == 0 ? ifr.ifr_mtu : -1;
}

size_t dgram_max_payload(const char *ifname) {
    const int mtu = iface_mtu(ifname);
    if (mtu <= 28) return 0;
    return std::min<size_t>(static_cast<size_t>(mtu) - 28, kUdpMaxPayload);
}

void fill_pattern(void *buf, size_t len, size_t msg) {
    auto *p = static_cast<uint8_t *>(buf);
    for (size_t i = 0; i < len; i++)
        p[i] = pattern(msg, i);
}

size_t check_pattern(const void *buf, size_t len, size_t msg) {
    const auto *p = static_cast<const uint8_t *>(buf);
    for (size_t i = 0; i < len; i++)
        if (p[i] != pattern(msg, i)) return i;
    return len;
}

UdpSocket::UdpSocket() {
    fd_ = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd_ < 0) return;
    sockaddr_in a = make_sin(kLoopback, 0);
    if (bind(fd_, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0) return;
    socklen_t len = sizeof(addr_);
    getsockname(fd_, reinterpret_cast<sockaddr *>(&addr_), &len);
}

UdpSocket::~UdpSocket() {
    if (fd_ >= 0) close(fd_);
}

ssize_t UdpSocket::send_to(const sockaddr_in &to, const void *buf, size_t len) const {
    return sendto(fd_, buf, len, 0, reinterpret_cast<const sockaddr *>(&to), sizeof(to));
}

ssize_t UdpSocket::recv_from(void *buf, size_t len, sockaddr_in *from) const {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, kTimeoutMs) != 1) return -1;
    socklen_t flen = sizeof(sockaddr_in);
    return recvfrom(fd_, buf, len, MSG_DONTWAIT, reinterpret_cast<sockaddr *>(from),
                    from ? &flen : nullptr);
}

}  // namespace usnict

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "usnic/dgram_ep.hpp"

#include <arpa/inet.h>
#include <netinet/ip.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/log.hpp"
#include "transport/udp/socket.hpp"
#include "usnic/addr.hpp"
#include "usnic/av.hpp"
#include "usnic/caps.hpp"
#include "usnic/cq.hpp"
#include "usnic/domain.hpp"
#include "usnic/ports.hpp"

namespace softnic::usnic {

int DgramEp::create(Domain *domain, const fi_info &info, void *context, Endpoint *&out) {
    if (info.handle) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "DGRAM endpoints take no handle\n");
    size_t total_iov = (info.tx_attr && info.tx_attr->iov_limit ? info.tx_attr->iov_limit : 3) +
                       ((info.mode & FI_MSG_PREFIX) ? 0 : 1);
    size_t size = info.tx_attr && info.tx_attr->size ? info.tx_attr->size : kDgramQueue;
    if (size * total_iov > kCredits)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "queue of %zu x %zu descriptors above %u\n", size,
                  total_iov, kCredits);
    auto *ep = new DgramEp(domain, info, context);
    if (info.src_addr) {
        sockaddr_in a{};
        if (from_user(info.addr_format, info.src_addr, a)) ep->bind_port_be_ = a.sin_port;
    }
    out = ep;
    return 0;
}

DgramEp::DgramEp(Domain *domain, const fi_info &info, void *context)
    : Endpoint(domain, info, context), rxq_(rx_size_) {}

DgramEp::~DgramEp() {
    if (fd_ >= 0) close(fd_);
}

int DgramEp::enable() {
    int ret = check_enable_cqs(-FI_EOPBADSTATE);
    if (ret) return ret;
    const uint32_t ip = ntohl(domain_->device().ip_be);
    int fd = transport::udp::open_bound_socket(ip, ntohs(bind_port_be_), 4 << 20);
    if (fd == -EADDRINUSE && is_service_port(bind_port_be_)) {
        SN_WARN(FI_LOG_EP_CTRL, "port %u is taken: binding any free port\n", ntohs(bind_port_be_));
        fd = transport::udp::open_bound_socket(ip, 0, 4 << 20);
    }
    if (fd < 0)
        SN_REJECT(fd, FI_LOG_EP_CTRL, "cannot open the UDP socket on port %u: %s\n",
                  ntohs(bind_port_be_), strerror(-fd));
    int df = IP_PMTUDISC_DO;
    setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &df, sizeof(df));  // never fragment, as the VIC
    fd_ = fd;
    attach_cqs(fd_);
    enabled_ = true;
    return 0;
}

sockaddr_in DgramEp::local_name() const {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = domain_->device().ip_be;
    if (fd_ >= 0) {
        socklen_t len = sizeof(a);
        getsockname(fd_, reinterpret_cast<sockaddr *>(&a), &len);
    }
    return a;
}

ssize_t DgramEp::send(const Op &op) {
    UAv *v = av();
    const sockaddr_in *dest = v ? v->peer(op.addr) : nullptr;
    if (!dest) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "destination %lu is not in the AV\n", op.addr);
    iovec iov[kMaxIov];
    size_t len = 0;
    if (!payload_iov(op, iov)) return -FI_EINVAL;
    for (size_t i = 0; i < op.count; i++)
        len += op.iov[i].iov_len;
    msghdr m{};
    m.msg_name = const_cast<sockaddr_in *>(dest);
    m.msg_namelen = sizeof(*dest);
    m.msg_iov = iov;
    m.msg_iovlen = op.count;
    if (sendmsg(fd_, &m, MSG_DONTWAIT) < 0) {
        if (errno == EAGAIN || errno == ENOBUFS) return -FI_EAGAIN;
        if (errno == EMSGSIZE)
            SN_REJECT(-FI_EMSGSIZE, FI_LOG_EP_DATA, "datagram above the path MTU\n");
        // Unreachable peers and the like: a datagram may be lost, as on the wire.
        SN_DBG(FI_LOG_EP_DATA, "sendmsg: %s\n", strerror(errno));
    }
    if (op.signal) {
        SpinGuard g(lock_);
        push_tx(op.context, len);
    }
    return 0;
}

ssize_t DgramEp::recv(const Op &op) {
    Rx rx{};
    rx.count = op.count;
    rx.context = op.context;
    if (!payload_iov(op, rx.iov)) return -FI_EINVAL;
    for (size_t i = 0; i < op.count; i++)
        rx.cap += rx.iov[i].iov_len;
    SpinGuard g(lock_);
    if (rx_count_ == rxq_.size()) return -FI_EAGAIN;
    rxq_[(rx_head_ + rx_count_) % rxq_.size()] = rx;
    rx_count_++;
    return 0;
}

ssize_t DgramEp::size_left(bool tx) {
    if (tx) return static_cast<ssize_t>(tx_size_);
    SpinGuard g(lock_);
    return static_cast<ssize_t>(rxq_.size() - rx_count_);
}

void DgramEp::fill_prefix(uint8_t *prefix, const sockaddr_in &from, size_t payload) const {
    // What the VIC writes at bytes 22..63: Ethernet, IPv4 and UDP headers of the frame.
    uint8_t *eth = prefix + kPrefixHdrOffset, *ip = eth + 14, *udp = ip + 20;
    std::memset(eth, 0, kFrameHdr);
    eth[12] = 0x08;  // ethertype IPv4
    ip[0] = 0x45;
    uint16_t ip_len = htons(static_cast<uint16_t>(20 + 8 + payload));
    std::memcpy(ip + 2, &ip_len, 2);
    ip[8] = 8;  // TTL
    ip[9] = IPPROTO_UDP;
    std::memcpy(ip + 12, &from.sin_addr.s_addr, 4);
    uint32_t me = domain_->device().ip_be;
    std::memcpy(ip + 16, &me, 4);
    std::memcpy(udp, &from.sin_port, 2);
    std::memcpy(udp + 2, &bind_port_be_, 2);
    uint16_t udp_len = htons(static_cast<uint16_t>(8 + payload));
    std::memcpy(udp + 4, &udp_len, 2);
}

// One datagram has landed in `rx` (got: its full length, MSG_TRUNC).
void DgramEp::complete(Rx &rx, const sockaddr_in &from, size_t got) {
    if (got > rx.cap) {
        SN_DBG(FI_LOG_EP_DATA, "datagram of %zu bytes truncated to %zu\n", got, rx.cap);
        push_rx_error(rx.context, FI_ETRUNC, rx.cap, got - rx.cap);
        return;
    }
    UAv *v = av();
    fi_addr_t src = v ? v->reverse_of(from) : FI_ADDR_NOTAVAIL;
    if (prefix_) {
        fill_prefix(static_cast<uint8_t *>(rx.iov[0].iov_base) - kPrefixSize, from, got);
        got += kPrefixSize;
    }
    push_rx(rx.context, got, src);
}

// One recvmmsg fills as many posted receives as datagrams wait (up to kBatch): no
// second system call just to learn that the socket is empty.
void DgramEp::progress() {
    constexpr size_t kBatch = 16;
    SpinGuard g(lock_);
    if (!rx_count_) return;
    mmsghdr m[kBatch];
    sockaddr_in from[kBatch];
    size_t n = std::min(rx_count_, kBatch);
    for (size_t i = 0; i < n; i++) {
        Rx &rx = rxq_[(rx_head_ + i) % rxq_.size()];
        m[i] = mmsghdr{};
        m[i].msg_hdr.msg_name = &from[i];
        m[i].msg_hdr.msg_namelen = sizeof(from[i]);
        m[i].msg_hdr.msg_iov = rx.iov;
        m[i].msg_hdr.msg_iovlen = rx.count;
    }
    int got = recvmmsg(fd_, m, static_cast<unsigned>(n), MSG_DONTWAIT | MSG_TRUNC, nullptr);
    for (int i = 0; i < got; i++) {
        complete(rxq_[rx_head_], from[i], m[i].msg_len);
        rx_head_ = (rx_head_ + 1) % rxq_.size();
        rx_count_--;
    }
}

}  // namespace softnic::usnic

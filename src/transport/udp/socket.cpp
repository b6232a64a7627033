#include "transport/udp/socket.hpp"

#include <fcntl.h>
#include <linux/errqueue.h>
#include <netinet/ip.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

namespace softnic::transport::udp {

uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ULL + uint64_t(ts.tv_nsec);
}

sockaddr_in make_sockaddr(uint32_t ip, uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(ip);
    a.sin_port = htons(port);
    return a;
}

RecvBatch::RecvBatch(size_t count, size_t max_datagram)
    : stride_((max_datagram + 63) & ~size_t(63)),
      storage_(count * stride_),
      msgs_(count),
      iov_(count),
      from_(count) {
    for (size_t i = 0; i < count; i++) {
        iov_[i] = {storage_.data() + i * stride_, stride_};
        msgs_[i].msg_hdr = {};
        msgs_[i].msg_hdr.msg_iov = &iov_[i];
        msgs_[i].msg_hdr.msg_iovlen = 1;
        msgs_[i].msg_hdr.msg_name = &from_[i];
        msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
    }
}

UdpSocket::~UdpSocket() {
    if (fd_ >= 0) close(fd_);
}

int UdpSocket::open(uint32_t ip, uint16_t port, int buffer_bytes) {
    fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return -errno;
    // Large buffers absorb bursts of a whole window; the FORCE variants need root.
    if (setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &buffer_bytes, sizeof(int)) != 0)
        setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &buffer_bytes, sizeof(int));
    if (setsockopt(fd_, SOL_SOCKET, SO_SNDBUFFORCE, &buffer_bytes, sizeof(int)) != 0)
        setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &buffer_bytes, sizeof(int));
    int one = 1;  // learn about peers whose port is closed (ICMP port unreachable)
    setsockopt(fd_, IPPROTO_IP, IP_RECVERR, &one, sizeof(one));
    sockaddr_in a = make_sockaddr(ip, port);
    if (bind(fd_, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0) {
        int e = -errno;
        close(fd_);
        fd_ = -1;
        return e;
    }
    for (size_t i = 0; i < kBatch; i++) {
        msgs_[i].msg_hdr = {};
        msgs_[i].msg_hdr.msg_name = &to_[i];
        msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
        msgs_[i].msg_hdr.msg_iov = iov_[i];
    }
    return 0;
}

void UdpSocket::set_faults(const FaultConfig &c) {
    faults_ = c.any() ? std::make_unique<FaultInjector>(c) : nullptr;
}

void UdpSocket::queue(const sockaddr_in &to, const void *a, size_t alen, const void *b,
                      size_t blen) {
    if (queued_ == kBatch) flush();
    size_t i = queued_++;
    to_[i] = to;
    iov_[i][0] = {const_cast<void *>(a), alen};
    iov_[i][1] = {const_cast<void *>(b), blen};
    msgs_[i].msg_hdr.msg_iovlen = blen ? 2 : 1;
}

void UdpSocket::send_now(size_t from, size_t n) {
    while (n) {
        int r = sendmmsg(fd_, msgs_ + from, unsigned(n), MSG_DONTWAIT);
        if (r < 0) {
            if (errno == EINTR) continue;
            if (errno == ECONNREFUSED) {  // a pending ICMP error: note who refused, retry
                drain_errors(refused_);
                continue;
            }
            send_errors += n;  // EAGAIN / ENOBUFS: lost like on a wire, retransmitted later
            return;
        }
        sent += unsigned(r);
        from += unsigned(r);
        n -= unsigned(r);
        if (r == 0) return;
    }
}

// Rewrite the queue according to the fault injector's verdicts.
void UdpSocket::apply_faults() {
    uint64_t now = now_ns();
    size_t out = 0, n = queued_;
    for (size_t i = 0; i < n; i++) {
        auto v = faults_->decide();
        if (v == FaultInjector::Verdict::kDrop) continue;
        if (v == FaultInjector::Verdict::kHold) {
            std::vector<uint8_t> flat(iov_[i][0].iov_len + iov_[i][1].iov_len);
            std::memcpy(flat.data(), iov_[i][0].iov_base, iov_[i][0].iov_len);
            if (iov_[i][1].iov_len)
                std::memcpy(flat.data() + iov_[i][0].iov_len, iov_[i][1].iov_base,
                            iov_[i][1].iov_len);
            faults_->hold(&to_[i], sizeof(sockaddr_in), flat.data(), flat.size(), now);
            continue;
        }
        if (out != i) {
            to_[out] = to_[i];
            iov_[out][0] = iov_[i][0];
            iov_[out][1] = iov_[i][1];
            msgs_[out].msg_hdr.msg_iovlen = msgs_[i].msg_hdr.msg_iovlen;
        }
        out++;
        if (v == FaultInjector::Verdict::kDuplicate) send_now(out - 1, 1);
    }
    queued_ = out;
}

void UdpSocket::flush() {
    if (!queued_) return;
    if (faults_) apply_faults();
    send_now(0, queued_);
    bool sent_something = queued_ > 0;
    queued_ = 0;
    if (faults_ && faults_->holding() && sent_something) release_faults(now_ns());
}

bool UdpSocket::release_faults(uint64_t now) {
    if (!faults_) return false;
    due_.clear();
    faults_->take_due(now, due_);
    for (auto &h : due_) {
        mmsghdr m{};
        iovec iov{h.data.data(), h.data.size()};
        m.msg_hdr.msg_name = h.to.data();
        m.msg_hdr.msg_namelen = socklen_t(h.to.size());
        m.msg_hdr.msg_iov = &iov;
        m.msg_hdr.msg_iovlen = 1;
        if (sendmmsg(fd_, &m, 1, MSG_DONTWAIT) == 1) sent++;
    }
    return faults_->holding();
}

size_t UdpSocket::receive(RecvBatch &b, std::vector<sockaddr_in> &refused) {
    if (!refused_.empty()) {  // refusals learnt while sending
        refused.insert(refused.end(), refused_.begin(), refused_.end());
        refused_.clear();
    }
    for (auto &m : b.msgs_)
        m.msg_hdr.msg_namelen = sizeof(sockaddr_in);
    for (;;) {
        int r = recvmmsg(fd_, b.msgs_.data(), unsigned(b.msgs_.size()), MSG_DONTWAIT, nullptr);
        if (r >= 0) return size_t(r);
        if (errno == EINTR) continue;
        if (errno == ECONNREFUSED || errno == EHOSTUNREACH || errno == ENETUNREACH) {
            drain_errors(refused);
            continue;
        }
        return 0;  // EAGAIN: nothing waiting
    }
}

// The error queue names the destination of each datagram that was refused.
void UdpSocket::drain_errors(std::vector<sockaddr_in> &refused) {
    for (int guard = 0; guard < 64; guard++) {
        sockaddr_in to{};
        char data[64], ctrl[512];
        iovec iov{data, sizeof(data)};
        msghdr m{};
        m.msg_name = &to;
        m.msg_namelen = sizeof(to);
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        m.msg_control = ctrl;
        m.msg_controllen = sizeof(ctrl);
        if (recvmsg(fd_, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) return;
        for (cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
            if (c->cmsg_level != IPPROTO_IP || c->cmsg_type != IP_RECVERR) continue;
            sock_extended_err ee;
            std::memcpy(&ee, CMSG_DATA(c), sizeof(ee));
            if (ee.ee_origin == SO_EE_ORIGIN_ICMP && ee.ee_errno == ECONNREFUSED)
                refused.push_back(to);
        }
    }
}

}  // namespace softnic::transport::udp

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "transport/udp/socket.hpp"

#include <fcntl.h>
#include <linux/errqueue.h>
#include <linux/sock_diag.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "common/clock.hpp"

namespace softnic::transport::udp {

uint64_t now_ns() {
    return monotonic_ns();
}

sockaddr_in make_sockaddr(uint32_t ip, uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(ip);
    a.sin_port = htons(port);
    return a;
}

RecvBatch::RecvBatch(size_t buffers, size_t max_datagram, bool coalesced)
    : coalesced_(coalesced),
      stride_(coalesced ? 65536 : (max_datagram + 63) & ~size_t(63)),
      storage_(new uint8_t[buffers * stride_]),
      msgs_(buffers),
      iov_(buffers),
      from_(buffers),
      ctrl_(coalesced ? buffers * kCtrl : 0) {
    dgrams_.reserve(buffers * (coalesced ? 8 : 1));
    for (size_t i = 0; i < buffers; i++) {
        iov_[i] = {storage_.get() + i * stride_, stride_};
        msgs_[i].msg_hdr = {};
        msgs_[i].msg_hdr.msg_iov = &iov_[i];
        msgs_[i].msg_hdr.msg_iovlen = 1;
        msgs_[i].msg_hdr.msg_name = &from_[i];
        msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
        if (coalesced) {
            msgs_[i].msg_hdr.msg_control = ctrl_.data() + i * kCtrl;
            msgs_[i].msg_hdr.msg_controllen = kCtrl;
        }
    }
}

// A coalesced buffer is a run of datagrams of the size its UDP_GRO cmsg gives, the
// last one possibly shorter. A truncated buffer keeps only its whole datagrams.
void RecvBatch::split(size_t received) {
    dgrams_.clear();
    for (size_t i = 0; i < received; i++) {
        msghdr &h = msgs_[i].msg_hdr;
        const uint8_t *p = storage_.get() + i * stride_;
        size_t len = msgs_[i].msg_len, seg = len;
        for (cmsghdr *c = coalesced_ ? CMSG_FIRSTHDR(&h) : nullptr; c; c = CMSG_NXTHDR(&h, c)) {
            int g;
            if (c->cmsg_level != SOL_UDP || c->cmsg_type != UDP_GRO) continue;
            std::memcpy(&g, CMSG_DATA(c), sizeof(g));
            if (g > 0 && size_t(g) < len) seg = size_t(g);
        }
        bool cut = h.msg_flags & MSG_TRUNC;
        if (cut) truncated++;
        if (len == 0 && !cut) dgrams_.push_back({p, 0, uint32_t(i)});
        for (size_t off = 0; off < len; off += seg) {
            size_t n = std::min(seg, len - off);
            if (cut && (seg == len || n < seg)) break;  // the cut-off tail
            dgrams_.push_back({p + off, uint32_t(n), uint32_t(i)});
        }
    }
}

UdpSocket::~UdpSocket() {
    if (fd_ >= 0) close(fd_);
}

int open_bound_socket(uint32_t ip, uint16_t port, int buffer_bytes) {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    // Large buffers absorb bursts of a whole window; the FORCE variants need root.
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buffer_bytes, sizeof(int)) != 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer_bytes, sizeof(int));
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buffer_bytes, sizeof(int)) != 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer_bytes, sizeof(int));
    sockaddr_in a = make_sockaddr(ip, port);
    if (bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    return fd;
}

int UdpSocket::open(uint32_t ip, uint16_t port, int buffer_bytes, bool offload) {
    int fd = open_bound_socket(ip, port, buffer_bytes);
    if (fd < 0) return fd;
    fd_ = fd;
    int one = 1;  // learn about peers whose port is closed (ICMP port unreachable)
    setsockopt(fd_, IPPROTO_IP, IP_RECVERR, &one, sizeof(one));
    if (offload) {  // kernels from 4.18 (segmentation) and 5.0 (receive coalescing)
        int size = 0;
        socklen_t sl = sizeof(size);
        gso_ = getsockopt(fd_, SOL_UDP, UDP_SEGMENT, &size, &sl) == 0;
        gro_ = setsockopt(fd_, SOL_UDP, UDP_GRO, &one, sizeof(one)) == 0;
    }
    return 0;
}

size_t UdpSocket::receive_buffer() const {
    int size = 0;
    socklen_t len = sizeof(size);
    if (fd_ < 0 || getsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &size, &len) != 0 || size < 0) return 0;
    return size_t(size);
}

uint16_t UdpSocket::port() const {
    sockaddr_in a{};
    socklen_t len = sizeof(a);
    if (fd_ < 0 || getsockname(fd_, reinterpret_cast<sockaddr *>(&a), &len) != 0) return 0;
    return ntohs(a.sin_port);
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
}

// How many queued datagrams from `from` can leave as one segmented send: same peer,
// the same size, except that the last may be shorter.
size_t UdpSocket::run_length(size_t from, size_t n) const {
    size_t seg = iov_[from][0].iov_len + iov_[from][1].iov_len, total = seg, k = 1;
    const sockaddr_in &to = to_[from];
    while (k < n && k < kMaxSegments) {
        size_t i = from + k, len = iov_[i][0].iov_len + iov_[i][1].iov_len;
        if (to_[i].sin_addr.s_addr != to.sin_addr.s_addr || to_[i].sin_port != to.sin_port ||
            len > seg || len == 0 || total + len > kMaxSegmented)
            break;
        total += len;
        k++;
        if (len < seg) break;
    }
    return k;
}

// Fill msgs_ for up to n queued datagrams from `from`; counts[j] says how many
// datagrams message j carries. Returns the number of messages.
size_t UdpSocket::gather(size_t from, size_t n, size_t counts[]) {
    size_t m = 0;
    while (n) {
        size_t k = gso_ ? run_length(from, n) : 1;
        msghdr &h = msgs_[m].msg_hdr;
        h = {};
        h.msg_name = &to_[from];
        h.msg_namelen = sizeof(sockaddr_in);
        h.msg_iov = iov_[from];
        h.msg_iovlen = 2 * k;  // a datagram's unused second piece is empty
        if (k > 1) {
            uint16_t seg = uint16_t(iov_[from][0].iov_len + iov_[from][1].iov_len);
            h.msg_control = ctrl_[m];
            h.msg_controllen = CMSG_SPACE(sizeof(seg));
            cmsghdr *c = CMSG_FIRSTHDR(&h);
            c->cmsg_level = SOL_UDP;
            c->cmsg_type = UDP_SEGMENT;
            c->cmsg_len = CMSG_LEN(sizeof(seg));
            std::memcpy(CMSG_DATA(c), &seg, sizeof(seg));
        }
        counts[m++] = k;
        from += k;
        n -= k;
    }
    return m;
}

void UdpSocket::send_now(size_t from, size_t n) {
    if (n == 1 && send_single(from)) return;  // an error takes the general path below
    size_t counts[kBatch];
    while (n) {
        size_t m = gather(from, n, counts);
        int r = m > 1 ? sendmmsg(fd_, msgs_, unsigned(m), MSG_DONTWAIT)
                      : (sendmsg(fd_, &msgs_[0].msg_hdr, MSG_DONTWAIT) < 0 ? -1 : 1);
        if (r < 0) {
            if (errno == EINTR) continue;
            if (errno == ECONNREFUSED) {  // a pending ICMP error: note who refused, retry
                drain_errors(refused_);
                continue;
            }
            if ((errno == EINVAL || errno == EIO) && counts[0] > 1) {
                gso_ = false;  // the route cannot segment (no checksum offload, MTU): stop trying
                continue;
            }
            send_errors += n;  // EAGAIN / ENOBUFS: lost like on a wire, retransmitted later
            return;
        }
        if (r == 0) return;
        for (int j = 0; j < r; j++) {
            if (counts[j] > 1) segmented_sends++;
            sent += counts[j];
            from += counts[j];
            n -= counts[j];
        }
    }
}

// A lone datagram (a message of a ping-pong, an acknowledgement) needs no gathering.
bool UdpSocket::send_single(size_t i) {
    msghdr h{};
    h.msg_name = &to_[i];
    h.msg_namelen = sizeof(sockaddr_in);
    h.msg_iov = iov_[i];
    h.msg_iovlen = iov_[i][1].iov_len ? 2 : 1;
    if (sendmsg(fd_, &h, MSG_DONTWAIT) < 0) return false;
    sent++;
    return true;
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
    // Asking for a whole batch costs a ping-pong half a microsecond (the kernel tries
    // for a second datagram): ask for one while the socket is found empty, for a batch
    // right after something arrived.
    unsigned want = b.batch_next_ ? unsigned(b.msgs_.size()) : 1;
    // The kernel wrote the lengths of the headers it filled last time only: the rest
    // still hold what the constructor set.
    for (unsigned i = 0; i < b.filled_; i++) {
        b.msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
        if (b.coalesced_) b.msgs_[i].msg_hdr.msg_controllen = RecvBatch::kCtrl;
    }
    b.filled_ = 0;
    for (;;) {
        int r = recvmmsg(fd_, b.msgs_.data(), want, MSG_DONTWAIT, nullptr);
        if (r >= 0) {
            b.filled_ = unsigned(r);
            b.batch_next_ = r > 0;
            if (want > 1 && 2 * unsigned(r) >= want) check_pressure();
            b.split(size_t(r));
            return b.count();
        }
        if (errno == EINTR) continue;
        if (errno == ECONNREFUSED || errno == EHOSTUNREACH || errno == ENETUNREACH) {
            drain_errors(refused);
            continue;
        }
        b.dgrams_.clear();
        b.batch_next_ = false;
        return 0;  // EAGAIN: nothing waiting
    }
}

void UdpSocket::check_pressure() {
    uint32_t mem[SK_MEMINFO_VARS] = {};
    socklen_t len = sizeof(mem);
    if (getsockopt(fd_, SOL_SOCKET, SO_MEMINFO, mem, &len) != 0 || len <= SK_MEMINFO_DROPS * 4)
        return;
    if (mem[SK_MEMINFO_DROPS] != drops_ ||
        2 * uint64_t(mem[SK_MEMINFO_RMEM_ALLOC]) > mem[SK_MEMINFO_RCVBUF])
        pressure_ = true;
    drops_ = mem[SK_MEMINFO_DROPS];
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

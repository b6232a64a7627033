// A non-blocking UDP socket with batched I/O: datagrams queued during one call go out
// in one sendmmsg, and receives come in batches from one recvmmsg.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "transport/udp/fault.hpp"

namespace softnic::transport::udp {

uint64_t now_ns();

inline uint64_t sockaddr_key(const sockaddr_in &a) {
    return (uint64_t(ntohl(a.sin_addr.s_addr)) << 16) | ntohs(a.sin_port);
}
sockaddr_in make_sockaddr(uint32_t ipv4_host_order, uint16_t port);

// Received datagrams, valid until the next receive().
struct RecvBatch {
    RecvBatch(size_t count, size_t max_datagram);
    size_t count() const { return msgs_.size(); }
    const uint8_t *data(size_t i) const { return storage_.data() + i * stride_; }
    size_t len(size_t i) const { return msgs_[i].msg_len; }
    const sockaddr_in &from(size_t i) const { return from_[i]; }

  private:
    friend class UdpSocket;
    size_t stride_;
    std::vector<uint8_t> storage_;
    std::vector<mmsghdr> msgs_;
    std::vector<iovec> iov_;
    std::vector<sockaddr_in> from_;
};

class UdpSocket {
  public:
    UdpSocket() = default;
    ~UdpSocket();
    UdpSocket(const UdpSocket &) = delete;
    UdpSocket &operator=(const UdpSocket &) = delete;

    // Bind to ip:port (host order). 0 or -errno (-EADDRINUSE when taken).
    int open(uint32_t ip, uint16_t port, int buffer_bytes);
    int fd() const { return fd_; }
    void set_faults(const FaultConfig &c);

    // Queue one datagram made of up to two pieces; the bytes must stay valid until
    // flush(), which sends everything queued. A full socket buffer drops the rest:
    // the reliability layer retransmits.
    void queue(const sockaddr_in &to, const void *a, size_t alen, const void *b = nullptr,
               size_t blen = 0);
    void flush();
    size_t queued() const { return queued_; }
    // Send held (delayed / reordered) datagrams that are due; true while some remain.
    bool release_faults(uint64_t now);
    bool holding_faults() const { return faults_ && faults_->holding(); }

    // Receive up to batch.count() datagrams; returns how many (0 when none waits).
    // Destinations that refused (ICMP port unreachable) are appended to `refused`.
    size_t receive(RecvBatch &batch, std::vector<sockaddr_in> &refused);

    uint64_t sent = 0, send_errors = 0;

  private:
    void send_now(size_t from, size_t n);
    void apply_faults();
    void drain_errors(std::vector<sockaddr_in> &refused);

    static constexpr size_t kBatch = 64;
    int fd_ = -1;
    size_t queued_ = 0;
    mmsghdr msgs_[kBatch];
    iovec iov_[kBatch][2];
    sockaddr_in to_[kBatch];
    std::unique_ptr<FaultInjector> faults_;
    std::vector<FaultInjector::Held> due_;  // held datagrams being sent this flush
    std::vector<sockaddr_in> refused_;      // ICMP refusals seen by sendmmsg
};

}  // namespace softnic::transport::udp

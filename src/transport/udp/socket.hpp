// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A non-blocking UDP socket with batched I/O: datagrams queued during one call go out
// in one sendmmsg, and receives come in batches from one recvmmsg. Where the kernel
// has segmentation offload, a run of equal-sized datagrams to one peer leaves as one
// UDP_SEGMENT send, and UDP_GRO hands back runs of datagrams as one buffer; both cut
// the per-packet cost of the kernel, which dominates bulk transfers.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "transport/udp/fault.hpp"

namespace softnic::transport::udp {

uint64_t now_ns();

inline uint64_t sockaddr_key(const sockaddr_in &a) {
    return (uint64_t(ntohl(a.sin_addr.s_addr)) << 16) | ntohs(a.sin_port);
}
sockaddr_in make_sockaddr(uint32_t ipv4_host_order, uint16_t port);

// A non-blocking UDP socket bound to ip:port (host order) with `buffer_bytes` of send and
// receive buffer (past the system's limit where allowed): its descriptor, or -errno
// (-EADDRINUSE when the port is taken). UdpSocket and usnic's DGRAM endpoints open theirs here.
int open_bound_socket(uint32_t ip, uint16_t port, int buffer_bytes);

// Received datagrams, valid until the next receive(). With receive offload one
// buffer may hold several datagrams; count() and data(i) are per datagram.
struct RecvBatch {
    // `coalesced`: buffers big enough for what UDP_GRO hands back (64 KiB each).
    RecvBatch(size_t buffers, size_t max_datagram, bool coalesced);
    size_t count() const { return dgrams_.size(); }
    const uint8_t *data(size_t i) const { return dgrams_[i].data; }
    size_t len(size_t i) const { return dgrams_[i].len; }
    const sockaddr_in &from(size_t i) const { return from_[dgrams_[i].buffer]; }
    bool coalesced() const { return coalesced_; }
    uint64_t truncated = 0;  // datagrams cut short by a too-small buffer, dropped

  private:
    friend class UdpSocket;
    struct Dgram {
        const uint8_t *data;
        uint32_t len, buffer;
    };
    void split(size_t received);  // fill dgrams_ from the first `received` buffers

    static constexpr size_t kCtrl = 64;  // room for one UDP_GRO cmsg
    bool coalesced_;
    bool batch_next_ = false;  // the last receive found something: ask for a batch
    unsigned filled_ = 0;      // headers the last receive wrote into (to reset, no more)
    size_t stride_;
    std::unique_ptr<uint8_t[]> storage_;  // not zeroed: untouched pages stay unmapped
    std::vector<mmsghdr> msgs_;
    std::vector<iovec> iov_;
    std::vector<sockaddr_in> from_;
    std::vector<uint8_t> ctrl_;
    std::vector<Dgram> dgrams_;
};

class UdpSocket {
  public:
    UdpSocket() = default;
    ~UdpSocket();
    UdpSocket(const UdpSocket &) = delete;
    UdpSocket &operator=(const UdpSocket &) = delete;

    // Bind to ip:port (host order). 0 or -errno (-EADDRINUSE when taken).
    // `offload`: use UDP_SEGMENT / UDP_GRO where the kernel has them.
    int open(uint32_t ip, uint16_t port, int buffer_bytes, bool offload);
    bool segmenting() const { return gso_; }
    bool coalescing() const { return gro_; }
    int fd() const { return fd_; }
    // The receive buffer's size in bytes, as the kernel accounts it (twice what was set).
    size_t receive_buffer() const;
    // The bound port (host order): the kernel's choice when opened with port 0.
    uint16_t port() const;
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
    // Whether the receive queue ran past half the buffer, or overflowed, since the last
    // call (looked at after a receive that filled its batch: only a backlog runs deep).
    bool take_pressure() { return std::exchange(pressure_, false); }

    uint64_t sent = 0, send_errors = 0, segmented_sends = 0;

  private:
    void send_now(size_t from, size_t n);
    bool send_single(size_t i);
    size_t gather(size_t from, size_t n, size_t counts[]);
    size_t run_length(size_t from, size_t n) const;
    void apply_faults();
    void drain_errors(std::vector<sockaddr_in> &refused);
    void check_pressure();

    static constexpr size_t kBatch = 64;
    static constexpr size_t kMaxSegments = 64;      // the kernel's UDP_MAX_SEGMENTS
    static constexpr size_t kMaxSegmented = 65000;  // bytes in one segmented send
    int fd_ = -1;
    bool gso_ = false, gro_ = false;
    bool pressure_ = false;
    uint32_t drops_ = 0;  // the kernel's count of receive drops (SK_MEMINFO_DROPS)
    size_t queued_ = 0;
    iovec iov_[kBatch][2];  // queued datagrams; contiguous so that a run is one iovec array
    sockaddr_in to_[kBatch];
    mmsghdr msgs_[kBatch];  // what one sendmmsg sends: single datagrams or segmented runs
    alignas(cmsghdr) uint8_t ctrl_[kBatch][32];
    std::unique_ptr<FaultInjector> faults_;
    std::vector<FaultInjector::Held> due_;  // held datagrams being sent this flush
    std::vector<sockaddr_in> refused_;      // ICMP refusals seen by sendmmsg
};

}  // namespace softnic::transport::udp

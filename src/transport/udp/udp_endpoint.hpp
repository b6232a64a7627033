// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The UDP transport: one socket per endpoint, bound to the soft NIC's address at a port
// that a remote peer computes from the endpoint's identity alone, and one reliable
// Channel per peer over it.
#pragma once

#include <atomic>
#include <memory>
#include <unordered_map>
#include <vector>

#include "transport/transport.hpp"
#include "transport/udp/channel.hpp"
#include "transport/udp/fault.hpp"
#include "transport/udp/socket.hpp"

namespace softnic::transport::udp {

struct UdpConfig {
    size_t max_datagram = 1472;  // UDP payload bytes per datagram (path MTU - 28)
    uint32_t window = 256;       // packets in flight per peer; also the reorder buffer
    size_t window_bytes = 4 << 20;
    unsigned retry_limit = 20;  // timeouts in a row before the peer is declared dead...
    // ...and for at least this long not a word from it: a process the OS has descheduled
    // for seconds (an oversubscribed host) is slow, not dead.
    uint32_t dead_after_ms = 10000;
    uint32_t rto_min_us = 50, rto_max_us = 200000;  // the timer's floor is 3 RTTs or this
    int socket_buffer = 8 << 20;
    bool offload = true;  // UDP_SEGMENT / UDP_GRO where the kernel has them
    uint32_t realm = 0;   // only peers of the same realm are served
    FaultConfig faults;
};

struct UdpStats {
    uint64_t malformed = 0, duplicates = 0, retransmits = 0, foreign = 0;
    uint64_t congestion = 0;  // congestion window cuts (on the receivers' marks)
    uint64_t marks = 0;       // our receive queue ran deep: the senders were told
};

class UdpEndpoint final : public RxQueue {
  public:
    // Null with err = -errno (-EADDRINUSE when the port is taken).
    static std::unique_ptr<UdpEndpoint> open(uint32_t ip, uint16_t port, const UdpConfig &cfg,
                                             int &err);
    ~UdpEndpoint() override;

    // Receive, acknowledge, retransmit. Returns the datagrams received.
    size_t poll(PacketSink &sink, size_t budget) override;
    // The channel to ip:port (host order), created on first use.
    Channel *link_to(uint32_t ip, uint16_t port);
    // Channels whose peer died since the last call.
    void take_failed(std::vector<Link *> &out) override;
    // Before closing: keep answering for a short while so that peers whose last
    // acknowledgement was lost learn that their packets arrived. New data is refused.
    void linger();
    // How long linger waits for the peers to fall quiet: eight of the longest timeout
    // between us and a live peer we heard from (ours toward it, or the one its datagrams
    // said), 10 ms to 250 ms; 0 when there is no such peer (nothing to linger for).
    uint64_t linger_quiet_ns() const;
    bool closing() const { return closing_; }

    int fd() const { return sock_.fd(); }
    // Whether the owner should poll now: traffic seen lately, or state to look after.
    // Atomics only: the offload helper asks without the owner's lock. busy_hint_ is set
    // whenever state is added and cleared only by a poll that leaves none, so it is
    // never false while busy() is true.
    bool wants_poll() const {
        return active_.load(std::memory_order_relaxed) ||
               busy_hint_.load(std::memory_order_relaxed);
    }
    // Work that needs polling even when the application does not call in.
    bool busy() const { return next_deadline_ || !ack_list_.empty() || !drain_list_.empty(); }
    void mark_active() { active_.store(true, std::memory_order_relaxed); }
    // The two flags wants_poll() reads, for a port set that reads them directly.
    const std::atomic<bool> &active_flag() const { return active_; }
    const std::atomic<bool> &busy_flag() const { return busy_hint_; }
    const UdpConfig &config() const { return cfg_; }
    const UdpStats &stats() const { return stats_; }
    UdpSocket &socket() { return sock_; }

    // For channels.
    void need_ack(Channel *c);
    void need_drain(Channel *c);
    void arm_timer(uint64_t deadline);
    void channel_failed(Channel *c);
    void count_duplicate() { stats_.duplicates++; }
    void count_retransmit() { stats_.retransmits++; }
    void count_congestion() { stats_.congestion++; }
    // The packets each peer may have in flight toward us: the receive buffer shared
    // between the peers that sent data lately, at most the configured window.
    uint32_t grant() const { return grant_; }
    void saw_data(uint64_t now) { last_data_ns_ = now; }
    void sender_joined() { share_due_ns_ = 0; }  // shared again after this poll's packets
    // A peer counts as sending while its latest data packet is this recent.
    static constexpr uint64_t kSendingNs = 5000000;

  private:
    explicit UdpEndpoint(const UdpConfig &cfg);
    Channel *lookup(const sockaddr_in &from, bool create);
    void dispatch(const uint8_t *pkt, size_t len, const sockaddr_in &from, PacketSink &sink);
    void reject(const RelHdr &h, const sockaddr_in &from);
    void run_timers(uint64_t now);
    void flush_acks(bool idle);
    void ack_heard_peers();  // linger's acknowledgements
    void signal_congestion();
    void share_buffer(uint64_t now);

    UdpConfig cfg_;
    UdpSocket sock_;
    std::unique_ptr<RecvBatch> batch_;
    std::unordered_map<uint64_t, Channel *> channels_;  // open channels by peer address
    std::vector<std::unique_ptr<Channel>> all_;         // including failed ones
    std::vector<Channel *> ack_list_, drain_list_, failed_;
    std::vector<sockaddr_in> refused_;
    uint64_t next_deadline_ = 0;
    std::atomic<bool> active_{false};
    std::atomic<bool> busy_hint_{false};
    unsigned idle_polls_ = 0;
    uint32_t grant_;               // see grant()
    uint32_t buffer_packets_ = 0;  // full-sized datagrams half the receive buffer holds
    uint64_t last_data_ns_ = 0, share_due_ns_ = 0;
    bool closing_ = false;
    Channel *last_ = nullptr;  // the peer of the previous datagram
    UdpStats stats_;
    RelHdr reject_buf_{};  // a queued REJECT lives here until the socket flushes
};

// Stream epochs increase across the processes of a host (they start from the clock),
// so a restarted peer's new stream is recognised as newer.
uint32_t next_epoch();

}  // namespace softnic::transport::udp

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// One reliable, ordered stream pair between a local UDP endpoint and one peer: the
// transmit side numbers packets, keeps them until acknowledged and retransmits with
// backoff; the receive side suppresses duplicates, reorders, and hands packets to the
// protocol in sequence, holding them while the protocol pushes back.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transport/transport.hpp"
#include "transport/udp/congestion.hpp"
#include "transport/udp/rel_wire.hpp"
#include "transport/udp/seq_ring.hpp"
#include "transport/udp/socket.hpp"

namespace softnic::transport::udp {

class UdpEndpoint;

class Channel final : public Link {
  public:
    enum class State { kOpen, kTimedOut, kRefused, kForeign };  // kForeign: other realm

    Channel(UdpEndpoint &ep, const sockaddr_in &peer, uint32_t epoch);
    ~Channel() override;

    // Link
    size_t max_packet() const override;
    bool send(const void *hdr, size_t hdr_len, const iovec *iov, size_t iovcnt, bool more) override;
    bool send_stable(const void *hdr, size_t hdr_len, const void *payload, size_t len,
                     bool more) override;
    void flush() override;
    bool alive() override { return state_ == State::kOpen; }
    bool peer_dead() override { return state_ != State::kOpen; }
    bool completes_on_ack() const override { return true; }
    uint64_t last_token() const override { return next_seq_; }
    bool acked(uint64_t token) const override { return una_ >= token; }

    LinkFailure failure() const override;
    const sockaddr_in *inet_peer() const override { return &peer_; }
    std::string describe() const override;

    State state() const { return state_; }
    bool heard_from_peer() const { return heard_; }
    uint64_t last_heard_ns() const { return last_heard_ns_; }
    uint64_t last_data_ns() const { return last_data_ns_; }
    const sockaddr_in &peer() const { return peer_; }

    // Called by the endpoint for each datagram from this peer. `body` follows the header.
    void on_datagram(const RelHdr &h, const uint8_t *body, size_t len, PacketSink &sink);
    // Hand held packets to the protocol; false when it pushed back again.
    bool drain(PacketSink &sink);
    bool backlogged() const { return backlogged_; }
    // Acknowledgements: owed to the peer, urgent after a gap or duplicate.
    unsigned rx_unacked() const { return rx_unacked_; }
    bool ack_urgent() const { return ack_urgent_; }
    void send_ack(RelType type = RelType::kAck);
    // Our receive queue ran deep while the peer was sending: its next acknowledgement,
    // sent at once, tells it to slow down.
    void mark_congested();
    // Retransmission timer; returns the next deadline (0: nothing outstanding).
    uint64_t on_timer(uint64_t now);
    bool busy() const { return una_ != next_seq_ || blocked_; }
    // The retransmission timeout toward the peer, and the peer's toward us as its latest
    // datagram said (0 when it never did).
    uint64_t rto_ns() const { return rto_ns_; }
    uint64_t peer_rto_ns() const { return peer_rto_ns_; }
    void fail(State why);
    // Quiet: give back the slots grown for a burst (nothing in flight, nothing held).
    void trim();
    size_t slot_count() const { return tx_.size() + rx_.size(); }
    // Heap bytes this channel holds: itself, its slots and their buffers.
    size_t footprint() const;

    bool in_ack_list = false, in_drain_list = false;

  private:
    struct TxSlot {
        std::unique_ptr<uint8_t[]> buf;  // headers, and the payload unless it is referenced
        uint32_t cap = 0, len = 0;       // len: bytes in buf
        const void *ref = nullptr;       // a payload the sender keeps stable until acked
        uint32_t ref_len = 0;
        uint64_t sent_ns = 0;
        uint8_t tries = 0;
        bool sacked = false;
    };
    struct RxSlot {
        std::unique_ptr<uint8_t[]> buf;
        uint32_t cap = 0, len = 0;
        bool present = false;
    };
    void fill_ack(RelHdr &h);
    bool enqueue(const void *hdr, size_t hdr_len, const iovec *iov, size_t iovcnt, const iovec &ref,
                 bool more);
    void on_ack(const RelHdr &h, uint64_t now);
    void on_data(const RelHdr &h, const uint8_t *body, size_t len, PacketSink &sink);
    void reset_rx(uint32_t epoch);
    void skip_held();
    void store(RxSlot &s, const uint8_t *body, size_t len);
    void retransmit(uint64_t seq, uint64_t now);
    void fast_retransmit(uint64_t upto, uint64_t now);
    void release_acked(uint64_t upto, uint64_t now);
    void take_rtt_sample(uint64_t sample);
    uint64_t rto_from_estimate() const;
    void note_delivered(const TxSlot &t, uint64_t now);
    // The peer marked an acknowledgement lately (its receive queue ran deep): loss and
    // timeouts are then read as congestion, not as noise on the wire.
    bool congested(uint64_t now) const {
        constexpr uint64_t kCongestedNs = 100000000;  // 100 ms: many round trips
        return marked_ns_ && now - marked_ns_ < kCongestedNs;
    }
    TxSlot &tx(uint64_t seq) { return tx_[seq]; }
    RxSlot &rx(uint64_t seq) { return rx_[seq]; }

    UdpEndpoint &ep_;
    sockaddr_in peer_;
    State state_ = State::kOpen;
    bool heard_ = false;  // the peer answered at least once
    // Transmit stream.
    uint32_t epoch_;
    uint64_t next_seq_ = 0, una_ = 0, peer_limit_;
    size_t inflight_bytes_ = 0;
    bool blocked_ = false;  // a send was refused for want of window
    SeqRing<TxSlot> tx_;
    CongestionWindow cwnd_;
    uint64_t rack_sent_ns_ = 0;  // the latest send time among packets known to have arrived
    uint64_t rto_ns_, srtt_ns_ = 0, rttvar_ns_ = 0, min_rtt_ns_ = 0, deadline_ = 0;
    uint64_t peer_rto_ns_ = 0;
    unsigned retries_ = 0;
    bool timeout_cut_ = false;  // the window was cut since the last acknowledgement
    uint64_t marked_ns_ = 0;    // the peer's latest congestion mark
    bool needless_ = false;     // the peer saw duplicates since the last fresh RTT sample
    uint64_t last_heard_ns_;    // the peer's latest datagram (or our first attempt)
    // Receive stream.
    bool have_peer_epoch_ = false;
    uint32_t peer_epoch_ = 0;
    uint64_t deliv_next_ = 0, rcv_next_ = 0, rx_high_ = 0;
    SeqRing<RxSlot> rx_;
    uint32_t rx_window_;         // packets past the next to deliver we accept (the reorder room)
    uint64_t last_data_ns_ = 0;  // the peer's latest data packet
    bool backlogged_ = false, ack_urgent_ = false, mark_ = false, dup_seen_ = false;
    unsigned rx_unacked_ = 0;
    RelHdr ack_buf_{};  // a queued ACK / PROBE lives here until the socket flushes
};

}  // namespace softnic::transport::udp

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// MSG and RDM endpoints: messages cut into packets of the shared reliable UDP layer
// (one socket per endpoint, one reliable channel per peer). A message waits in the
// channel until a receive is posted, so nothing is lost for want of one; a send
// completes once the peer acknowledged its last packet.
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "common/lock.hpp"
#include "transport/msg/ack_queue.hpp"
#include "transport/msg/segments.hpp"
#include "transport/offload.hpp"
#include "transport/transport.hpp"
#include "transport/udp/udp_endpoint.hpp"
#include "usnic/caps.hpp"
#include "usnic/endpoint.hpp"
#include "usnic/rudp_wire.hpp"

namespace softnic::usnic {

struct ConnReq;

class RudpEp final : public Endpoint,
                     public transport::PacketSink,
                     public transport::OffloadClient {
  public:
    static int create(Domain *domain, const fi_info &info, void *context, Endpoint *&out);
    RudpEp(Domain *domain, const fi_info &info, void *context);
    ~RudpEp() override;
    ssize_t send(const Op &op) override;
    ssize_t recv(const Op &op) override;
    ssize_t size_left(bool tx) override;
    void progress() override;
    void shutdown_io() override;
    // PacketSink
    bool deliver(const uint8_t *, size_t) override { return true; }
    bool deliver_from(const uint8_t *pkt, size_t len, transport::Link &from) override;
    // OffloadClient
    int offload_fd() override { return udp_ ? udp_->fd() : -1; }
    bool offload_watch() override { return false; }
    bool offload_wanted() override { return work_.load(std::memory_order_relaxed); }
    bool offload_progress(bool readable) override;

    // MSG connection state (msg_cm.cpp).
    enum class Conn { kIdle, kConnecting, kConnected, kShutdown };
    Conn conn() const { return conn_.load(); }
    // kIdle -> kConnecting; false when another call got there first.
    bool start_connecting() {
        Conn idle = Conn::kIdle;
        return conn_.compare_exchange_strong(idle, Conn::kConnecting);
    }
    void set_connected(const sockaddr_in &peer);
    // kConnected -> kShutdown: true for the one caller that ends the connection, which
    // posts the endpoint's single FI_SHUTDOWN (the local fi_shutdown or the peer's).
    bool end_connection() {
        Conn c = Conn::kConnected;
        return conn_.compare_exchange_strong(c, Conn::kShutdown);
    }
    void set_refused() { conn_.store(Conn::kShutdown); }
    bool has_connreq() const;
    // The pending request, or null when another call took it.
    std::unique_ptr<ConnReq> take_connreq();
    std::atomic<int> cm_fd{-1};  // the connection-management TCP socket; -1 once closed
    uint16_t udp_port_be() const;
    // The connection's address, as fi_getname reports it: set once the TCP socket exists.
    void set_cm_name(const sockaddr_in &a);
    // Where fi_connect binds its TCP socket: the address of the passive endpoint this
    // endpoint was created from (info->handle), if any.
    const sockaddr_in *adopted_name() const { return adopted_ ? &adopted_name_ : nullptr; }

  private:
    int enable() override;
    struct TxOp {
        iovec iov[kMaxIov];
        size_t count = 0;
        size_t len = 0, sent = 0;
        void *context = nullptr;
        bool signal = false;
        transport::Link *ch = nullptr;
        uint64_t token = 0;  // the link's token after the last packet
        uint8_t inject[64];
    };
    struct RxOp {
        iovec iov[kMaxIov];
        size_t count = 0, cap = 0;
        void *context = nullptr;
    };
    struct Reasm {
        RxOp rx;
        transport::msg::Reassembly msg;
    };
    sockaddr_in local_name() const override;
    sockaddr_in udp_name() const;
    void progress_locked();
    TxOp *take_tx();
    void release_tx(TxOp *op);
    bool pump(TxOp &op);
    bool queued_behind(const transport::Link *ch) const;
    void reap();
    void fail_channel(transport::Link *ch);
    void complete_rx(Reasm &r, transport::Link &from);
    transport::Link *channel_for(fi_addr_t addr);

    mutable SpinLock lock_;  // every data call and progress; getname reads the CM name
    std::unique_ptr<transport::udp::UdpEndpoint> udp_;
    uint16_t bind_port_be_ = 0;
    // Transmit slots: grown on demand up to tx_size (a deque keeps them in place, as
    // packets reference inject copies), then reused: no allocation per send.
    std::deque<TxOp> tx_slots_;
    std::vector<TxOp *> tx_free_;
    std::deque<TxOp *> sending_;              // in posting order, packets still to queue
    transport::msg::AckQueue<TxOp> unacked_;  // all queued, waiting for the peer's ack
    std::deque<RxOp> rx_;                     // posted, not yet matched
    std::unordered_map<transport::Link *, Reasm> reasm_;
    std::vector<transport::Link *> failed_, blocked_;
    std::atomic<Conn> conn_{Conn::kIdle};
    transport::Link *peer_ch_ = nullptr;
    std::unique_ptr<ConnReq> connreq_;
    sockaddr_in cm_name_{}, adopted_name_{};
    bool has_cm_name_ = false, adopted_ = false;
    std::atomic<bool> work_{false};
    bool offloaded_ = false;
    uint64_t malformed_ = 0;
};

}  // namespace softnic::usnic

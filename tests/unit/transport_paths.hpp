// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// One direction of each transport, for the suites written once against the Transport
// interface (test_transport_contract.cpp, test_msg_layer.cpp).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "transport/shm/shm_transport.hpp"
#include "transport/udp/udp_endpoint.hpp"

namespace softnic::transport {

// One direction of a transport: a link and the receive queue it reaches.
class Path {
  public:
    virtual ~Path() = default;
    virtual Link &link() = 0;
    virtual RxQueue &rx() = 0;
    // The sender's own progress (acknowledgements, retransmissions), where it has any.
    virtual void progress() {}
    // Closes the receive queue, as a process that exits does.
    virtual void close_rx() = 0;
};

class ShmPath : public Path {
  public:
    ShmPath() {
        static int seq = 0;
        name_ = "/softnic-contract-" + std::to_string(getpid()) + "-" + std::to_string(seq++);
        int err = 0;
        rx_ = shm::ShmRxQueue::create(name_, shm::RingGeometry{4096, 64}, err);
        EXPECT_EQ(0, err);
        link_ = shm::ShmLink::open(name_, err);
        EXPECT_EQ(0, err);
    }
    Link &link() override { return *link_; }
    RxQueue &rx() override { return *rx_; }
    void close_rx() override { rx_.reset(); }

  private:
    std::string name_;
    std::unique_ptr<shm::ShmRxQueue> rx_;
    std::unique_ptr<shm::ShmLink> link_;
};

class UdpPath : public Path {
  public:
    UdpPath() {
        int err = 0;
        udp::UdpConfig c;
        c.window = 64;
        a_ = udp::UdpEndpoint::open(kIpA, 0, c, err);  // ephemeral ports
        EXPECT_EQ(0, err);
        b_ = udp::UdpEndpoint::open(kIpB, 0, c, err);
        EXPECT_EQ(0, err);
        link_ = a_->link_to(kIpB, b_->socket().port());
    }
    Link &link() override { return *link_; }
    RxQueue &rx() override { return *b_; }
    void progress() override { a_->poll(discard_, 64); }
    void close_rx() override { b_.reset(); }

  private:
    struct Discard : PacketSink {
        bool deliver(const uint8_t *, size_t) override { return true; }
    } discard_;
    static constexpr uint32_t kIpA = 0x7f000001, kIpB = 0x7f000002;
    std::unique_ptr<udp::UdpEndpoint> a_, b_;
    Link *link_ = nullptr;
};

struct TransportParam {
    const char *name;
    std::function<std::unique_ptr<Path>()> make;
};

// gtest names the parameter in its output by this.
inline void PrintTo(const TransportParam &p, std::ostream *os) {
    *os << p.name;
}

inline std::vector<TransportParam> every_transport() {
    return {TransportParam{"shm", [] { return std::make_unique<ShmPath>(); }},
            TransportParam{"udp", [] { return std::make_unique<UdpPath>(); }}};
}

}  // namespace softnic::transport

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The Transport contract (transport/transport.hpp), written once and run over every
// transport, as UCX instantiates its uct tests: packets of any size up to max_packet()
// arrive intact, in order and once; a receiver that pushes back loses nothing; a full
// path refuses and recovers; transmit completion tokens settle; a closed receive queue
// is noticed. Transport-specific behaviour (rings, loss, hostile bytes) stays in
// test_shm_ring.cpp and test_udp_*.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "transport_paths.hpp"

namespace softnic::transport {
namespace {

// Expects packets numbered 0, 1, 2...: an 8-byte header with the number, then bytes
// that follow from it. Refuses every `refuse_every`th delivery (back-pressure).
struct Checker : PacketSink {
    uint64_t next = 0, bad = 0;
    unsigned refuse_every = 0, calls = 0;
    bool deliver(const uint8_t *pkt, size_t len) override {
        if (refuse_every && ++calls % refuse_every == 0) return false;
        uint64_t n = ~0ULL;
        if (len >= sizeof(n)) std::memcpy(&n, pkt, sizeof(n));
        bool ok = n == next;
        for (size_t i = sizeof(n); ok && i < len; i++)
            ok = pkt[i] == uint8_t(n * 31 + i);
        bad += !ok;
        next = n + 1;
        return true;
    }
};

class TransportContract : public ::testing::TestWithParam<TransportParam> {
  protected:
    void SetUp() override { path_ = GetParam().make(); }
    // Packet n: its number as the header, then len - 8 payload bytes.
    bool send(uint64_t n, size_t len) {
        payload_.resize(len - sizeof(n));
        for (size_t i = 0; i < payload_.size(); i++)
            payload_[i] = uint8_t(n * 31 + i + sizeof(n));
        iovec iov{payload_.data(), payload_.size()};
        return path_->link().send(&n, sizeof(n), &iov, 1, false);
    }
    // Sends `count` packets of sizes from `size_of`, polling the receiver into `sink`
    // whenever the path is full, until all have arrived.
    void stream(uint64_t count, const std::function<size_t(uint64_t)> &size_of, Checker &sink) {
        uint64_t sent = 0;
        for (uint64_t spins = 0; sink.next < count; spins++) {
            while (sent < count && send(sent, size_of(sent)))
                sent++;
            path_->link().flush();
            path_->rx().poll(sink, 64);
            path_->progress();
            ASSERT_LT(spins, 10000000u) << "stuck at " << sink.next << " of " << count;
        }
    }
    std::unique_ptr<Path> path_;
    std::vector<uint8_t> payload_;
};

TEST_P(TransportContract, EverySizeArrivesInOrderOnceAndIntact) {
    const size_t max = path_->link().max_packet();
    Checker sink;
    stream(
        500, [&](uint64_t n) { return 8 + (n * 7919) % (max - 7); }, sink);
    EXPECT_EQ(500u, sink.next);
    EXPECT_EQ(0u, sink.bad);
    EXPECT_EQ(0u, path_->rx().poll(sink, 64)) << "nothing more, nothing twice";
}

TEST_P(TransportContract, ReceiverBackPressureLosesNothing) {
    Checker sink;
    sink.refuse_every = 3;
    stream(
        300, [](uint64_t n) { return 8 + n % 200; }, sink);
    EXPECT_EQ(300u, sink.next);
    EXPECT_EQ(0u, sink.bad);
}

TEST_P(TransportContract, AFullPathRefusesThenRecovers) {
    uint64_t sent = 0;
    while (sent < 100000 && send(sent, 64))
        sent++;
    ASSERT_LT(sent, 100000u) << "the path never filled";
    Checker sink;
    for (int i = 0; i < 1000000 && sink.next < sent; i++) {
        path_->rx().poll(sink, 64);
        path_->progress();
    }
    EXPECT_EQ(sent, sink.next);
    EXPECT_TRUE(send(sent, 64)) << "room again once drained";
}

TEST_P(TransportContract, CompletionTokensSettleOnceDelivered) {
    Checker sink;
    stream(
        50, [](uint64_t) { return size_t(100); }, sink);
    uint64_t token = path_->link().last_token();
    for (int i = 0; i < 1000000 && !path_->link().acked(token); i++) {
        path_->rx().poll(sink, 64);
        path_->progress();
    }
    EXPECT_TRUE(path_->link().acked(token));
}

TEST_P(TransportContract, AClosedReceiverIsNoticed) {
    Checker sink;
    stream(
        10, [](uint64_t) { return size_t(64); }, sink);
    path_->close_rx();
    bool noticed = false;
    for (uint64_t n = 10; n < 2000000 && !noticed; n++) {
        send(n, 64);
        path_->link().flush();
        path_->progress();
        noticed = !path_->link().alive() || path_->link().peer_dead();
    }
    EXPECT_TRUE(noticed);
}

INSTANTIATE_TEST_SUITE_P(, TransportContract, ::testing::ValuesIn(every_transport()),
                         [](const ::testing::TestParamInfo<TransportParam> &i) {
                             return std::string(i.param.name);
                         });

}  // namespace
}  // namespace softnic::transport

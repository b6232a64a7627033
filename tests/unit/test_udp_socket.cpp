// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The batched UDP socket on loopback: runs of equal-sized datagrams leave as one
// segmented send and may come back coalesced; either way the receiver must see each
// datagram once, whole, in order, from the right sender, whatever the offload mix.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <vector>

#include "transport/udp/socket.hpp"

using namespace softnic::transport::udp;

namespace {

constexpr uint32_t kIp = 0x7f000001;  // 127.0.0.1

// Datagram `n` of a test: its length and contents are a function of n.
std::vector<uint8_t> datagram(uint32_t n, size_t len) {
    std::vector<uint8_t> d(len);
    for (size_t i = 0; i < len; i++)
        d[i] = uint8_t(n * 7 + i);
    if (len >= 4) std::memcpy(d.data(), &n, 4);
    return d;
}

struct Pair {
    UdpSocket tx, rx, other;
    Pair(bool tx_offload, bool rx_offload) {  // ephemeral ports
        EXPECT_EQ(tx.open(kIp, 0, 1 << 22, tx_offload), 0);
        EXPECT_EQ(rx.open(kIp, 0, 1 << 22, rx_offload), 0);
        EXPECT_EQ(other.open(kIp, 0, 1 << 22, false), 0);
    }
};

// Sends `lens.size()` datagrams in one flush (with one to a third socket in the middle)
// and checks what the receiver gets.
void round_trip(Pair &p, const std::vector<size_t> &lens) {
    std::vector<std::vector<uint8_t>> sent;
    sockaddr_in to = make_sockaddr(kIp, p.rx.port());
    sockaddr_in elsewhere = make_sockaddr(kIp, p.other.port());
    std::vector<uint8_t> stray = datagram(999, 100);
    for (uint32_t n = 0; n < lens.size(); n++) {
        sent.push_back(datagram(n, lens[n]));
        if (n == lens.size() / 2) p.tx.queue(elsewhere, stray.data(), stray.size());
        size_t half = sent.back().size() / 2;  // two pieces, as the channel may queue them
        p.tx.queue(to, sent.back().data(), half, sent.back().data() + half,
                   sent.back().size() - half);
    }
    p.tx.flush();
    EXPECT_EQ(p.tx.sent, lens.size() + 1);

    RecvBatch batch(16, 9000, p.rx.coalescing());
    std::vector<sockaddr_in> refused;
    size_t got = 0;
    for (int spins = 0; got < sent.size() && spins < 100000; spins++) {
        size_t n = p.rx.receive(batch, refused);
        for (size_t i = 0; i < n; i++, got++) {
            ASSERT_LT(got, sent.size());
            ASSERT_EQ(batch.len(i), sent[got].size()) << "datagram " << got;
            if (!sent[got].empty()) {  // an empty vector's data() may be null
                EXPECT_EQ(0, std::memcmp(batch.data(i), sent[got].data(), sent[got].size()));
            }
            EXPECT_EQ(ntohs(batch.from(i).sin_port), p.tx.port());
        }
    }
    EXPECT_EQ(got, sent.size());
    EXPECT_EQ(batch.truncated, 0u);
    RecvBatch one(4, 9000, false);
    size_t strays = 0;
    for (int spins = 0; strays == 0 && spins < 100000; spins++)
        strays = p.other.receive(one, refused);
    ASSERT_EQ(strays, 1u);
    EXPECT_EQ(one.len(0), stray.size());
}

// Equal sizes, a shorter last one, then a longer one (which starts a new run).
const std::vector<size_t> kLens = {1400, 1400, 1400, 1400, 1400, 600,  1400, 1400, 9000,
                                   9000, 9000, 9000, 9000, 9000, 9000, 9000, 40,   40};

}  // namespace

TEST(UdpSocket, SegmentedSendCoalescedReceive) {
    Pair p(true, true);
    round_trip(p, kLens);
    if (p.tx.segmenting()) {
        EXPECT_GT(p.tx.segmented_sends, 0u);
    }
}

TEST(UdpSocket, SegmentedSendPlainReceive) {
    Pair p(true, false);
    round_trip(p, kLens);
}

TEST(UdpSocket, PlainSendCoalescedReceive) {
    Pair p(false, true);
    round_trip(p, kLens);
    EXPECT_EQ(p.tx.segmented_sends, 0u);
}

TEST(UdpSocket, ManyRunsInOneFlush) {
    Pair p(true, true);
    std::vector<size_t> lens(64 * 3, 1000);  // more than one queue's worth
    for (size_t i = 0; i < lens.size(); i += 17)
        lens[i] = 300;  // each short one ends a run
    round_trip(p, lens);
}

TEST(UdpSocket, EmptyDatagramIsDelivered) {
    Pair p(true, true);
    round_trip(p, {0, 10, 10});
}

// A closed port answers with ICMP port unreachable. The error can surface on a later
// send (sendmmsg fails with ECONNREFUSED, which clears it) instead of on a receive;
// either way the next receive() must name the peer that refused.
TEST(UdpSocket, RefusalSeenBySendIsReported) {
    UdpSocket s;
    ASSERT_EQ(s.open(kIp, 0, 1 << 20, true), 0);
    uint16_t port;
    {
        UdpSocket gone;  // a port that was just given back: nobody listens there
        ASSERT_EQ(gone.open(kIp, 0, 1 << 16, false), 0);
        port = gone.port();
    }
    sockaddr_in closed = make_sockaddr(kIp, port);
    uint8_t bytes[16] = {};
    s.queue(closed, bytes, sizeof(bytes));
    s.flush();
    usleep(20000);  // the ICMP error comes back
    s.queue(closed, bytes, sizeof(bytes));
    s.flush();  // meets the pending error
    RecvBatch batch(4, 1500, false);
    std::vector<sockaddr_in> refused;
    s.receive(batch, refused);
    ASSERT_FALSE(refused.empty());
    EXPECT_EQ(ntohs(refused[0].sin_port), port);
}

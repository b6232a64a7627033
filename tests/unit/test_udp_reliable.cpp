// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The UDP reliability layer on its own: two endpoints on loopback exchange numbered
// packets through fault injection (loss, duplication, reordering, delay) and through a
// receiver that pushes back; every packet must arrive exactly once, intact, in order.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "transport/udp/udp_endpoint.hpp"

using namespace softnic::transport;
using namespace softnic::transport::udp;

namespace {

constexpr uint32_t kIpA = 0x7f000001, kIpB = 0x7f000002;  // 127.0.0.1 / 127.0.0.2

// Expects packets numbered 0, 1, 2... whose bytes are a function of their number.
struct CheckingSink : PacketSink {
    uint64_t next = 0, bad = 0;
    unsigned refuse_every = 0, calls = 0;
    bool deliver(const uint8_t *pkt, size_t len) override {
        if (refuse_every && ++calls % refuse_every == 0) return false;  // back-pressure
        uint64_t n;
        if (len < sizeof(n)) {
            bad++;
            return true;
        }
        std::memcpy(&n, pkt, sizeof(n));
        if (n != next) bad++;
        for (size_t i = sizeof(n); i < len; i++)
            if (pkt[i] != uint8_t(n + i)) {
                bad++;
                break;
            }
        next = n + 1;
        return true;
    }
};

// Checks each sender's packets apart (many senders toward one receiver).
struct PerLink : PacketSink {
    std::map<Link *, CheckingSink> by_link;
    bool deliver(const uint8_t *, size_t) override { return false; }
    bool deliver_from(const uint8_t *pkt, size_t len, Link &from) override {
        return by_link[&from].deliver(pkt, len);
    }
};

size_t packet_size(uint64_t n, size_t max) {
    return 8 + (n * 7919) % (max - 8);
}

struct Pair {
    std::unique_ptr<UdpEndpoint> a, b;
    Pair(const UdpConfig &ca, const UdpConfig &cb) {  // ephemeral ports
        int err = 0;
        a = UdpEndpoint::open(kIpA, 0, ca, err);
        EXPECT_EQ(err, 0);
        b = UdpEndpoint::open(kIpB, 0, cb, err);
        EXPECT_EQ(err, 0);
    }
    uint16_t port_a() const { return a->socket().port(); }
    uint16_t port_b() const { return b->socket().port(); }
};

// Send `count` packets each way at once and poll until both sides have them all.
void exchange(Pair &p, uint64_t count, CheckingSink &sa, CheckingSink &sb, size_t max) {
    Channel *ab = p.a->link_to(kIpB, p.port_b()), *ba = p.b->link_to(kIpA, p.port_a());
    ASSERT_NE(ab, nullptr);
    uint64_t sent_a = 0, sent_b = 0;
    std::vector<uint8_t> buf(max);
    auto fill = [&](uint64_t n) {
        size_t len = packet_size(n, max);
        std::memcpy(buf.data(), &n, 8);
        for (size_t i = 8; i < len; i++)
            buf[i] = uint8_t(n + i);
        return len;
    };
    uint64_t spins = 0;
    while (sa.next < count || sb.next < count || !ab->acked(count) || !ba->acked(count)) {
        for (int k = 0; k < 32 && sent_a < count; k++) {
            size_t len = fill(sent_a);
            iovec iov{buf.data() + 8, len - 8};
            if (!ab->send(buf.data(), 8, &iov, 1, k < 31)) break;
            sent_a++;
        }
        ab->flush();
        for (int k = 0; k < 32 && sent_b < count; k++) {
            size_t len = fill(sent_b);
            iovec iov{buf.data() + 8, len - 8};
            if (!ba->send(buf.data(), 8, &iov, 1, k < 31)) break;
            sent_b++;
        }
        ba->flush();
        p.a->poll(sa, 64);
        p.b->poll(sb, 64);
        ASSERT_TRUE(ab->alive() && ba->alive()) << ab->describe() << " / " << ba->describe();
        ASSERT_LT(++spins, 50000000u) << ab->describe() << " / " << ba->describe();
    }
    EXPECT_EQ(sa.bad, 0u);
    EXPECT_EQ(sb.bad, 0u);
    EXPECT_EQ(sa.next, count);
    EXPECT_EQ(sb.next, count);
}

uint64_t elapsed_us(const timespec &since) {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return uint64_t(now.tv_sec - since.tv_sec) * 1000000 +
           uint64_t(now.tv_nsec - since.tv_nsec) / 1000;
}

// Polls only `ep` for `us` microseconds (its peer is paused).
void poll_alone(UdpEndpoint &ep, PacketSink &sink, uint64_t us) {
    timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (elapsed_us(start) < us)
        ep.poll(sink, 64);
}

// CheckingSink's packet n over `c`: its number, then bytes n + i.
bool send_numbered(Channel *c, uint64_t n) {
    uint8_t pkt[16];
    std::memcpy(pkt, &n, sizeof(n));
    for (size_t i = sizeof(n); i < sizeof(pkt); i++)
        pkt[i] = uint8_t(n + i);
    iovec iov{pkt + sizeof(n), sizeof(pkt) - sizeof(n)};
    return c->send(pkt, sizeof(n), &iov, 1, false);
}

// Polls both ends until what `ab` sent is acknowledged, for at most `spins` rounds.
void settle(Pair &p, Channel *ab, PacketSink &sa, PacketSink &sb, int spins = 1000000) {
    for (int k = 0; k < spins && !ab->acked(ab->last_token()); k++) {
        p.b->poll(sb, 64);
        p.a->poll(sa, 64);
    }
}

UdpConfig faulty(const char *spec, size_t max_datagram) {
    UdpConfig c;
    c.max_datagram = max_datagram;
    std::string why;
    EXPECT_TRUE(parse_faults(spec, c.faults, why)) << why;
    return c;
}

}  // namespace

TEST(UdpReliable, CleanExchangeSmallAndLarge) {
    UdpConfig c;
    c.max_datagram = 9000;
    Pair p(c, c);
    CheckingSink sa, sb;
    exchange(p, 20000, sa, sb, 8900);
}

TEST(UdpReliable, LossDuplicationReorderDelay) {
    UdpConfig c = faulty("drop=10,dup=5,reorder=5,delay=2,delay_us=300,seed=11", 1472);
    Pair p(c, c);
    CheckingSink sa, sb;
    exchange(p, 20000, sa, sb, 1400);
}

TEST(UdpReliable, HeavyLossWithLargeDatagrams) {
    UdpConfig c = faulty("drop=20,seed=5", 65507);
    Pair p(c, c);
    CheckingSink sa, sb;
    exchange(p, 2000, sa, sb, 60000);
}

// Random loss on the wire is repaired, not read as congestion: no receiver queue ran
// deep, so no acknowledgement was marked and no window was cut (a window halved on every
// loss sat at a few packets under 10 % loss, and 1 MiB ping-pongs took ten times as long).
TEST(UdpReliable, WireLossAloneLeavesTheCongestionWindow) {
    UdpConfig c = faulty("drop=10,seed=7", 1472);
    // A window small enough that no queue runs deep even when this process is slow (under
    // ThreadSanitizer, 256 packets in flight each way filled half of a 16 MiB buffer, in
    // the kernel's accounting of loopback datagrams, and drew marks, rightly).
    c.window = 64;
    Pair p(c, c);
    CheckingSink sa, sb;
    exchange(p, 5000, sa, sb, 1400);
    EXPECT_GT(p.a->stats().retransmits + p.b->stats().retransmits, 0u) << "nothing was lost";
    EXPECT_EQ(p.a->stats().marks + p.b->stats().marks, 0u);
    EXPECT_EQ(p.a->stats().congestion + p.b->stats().congestion, 0u);
}

TEST(UdpReliable, ReceiverBackPressureLosesNothing) {
    UdpConfig c = faulty("drop=5,seed=3", 1472);
    Pair p(c, c);
    CheckingSink sa, sb;
    sb.refuse_every = 3;
    exchange(p, 10000, sa, sb, 1400);
}

TEST(UdpReliable, DeadPeerFailsTheChannel) {
    UdpConfig c;
    c.retry_limit = 3;
    c.rto_max_us = 5000;
    c.dead_after_ms = 20;
    Pair p(c, c);
    ASSERT_TRUE(p.a && p.b);
    Channel *ab = p.a->link_to(kIpB, p.port_b());
    uint64_t n = 1;
    iovec iov{&n, sizeof(n)};
    ASSERT_TRUE(ab->send(&n, sizeof(n), &iov, 1, false));
    CheckingSink s;
    p.b.reset();  // the peer vanishes without answering
    std::vector<Link *> failed;
    for (int i = 0; i < 2000000 && failed.empty(); i++) {
        p.a->poll(s, 64);
        p.a->take_failed(failed);
    }
    ASSERT_EQ(failed.size(), 1u);
    EXPECT_EQ(failed[0], ab);
    EXPECT_FALSE(ab->alive());
    EXPECT_FALSE(ab->acked(ab->last_token()));
}

// A peer that stops answering for longer than the retransmission limit lasts, but less
// than dead_after_ms (a process the OS descheduled), is slow, not dead: once it answers,
// the message arrives exactly once and the channel carries on.
TEST(UdpReliable, PausedPeerIsNotDeclaredDead) {
    UdpConfig c;
    c.retry_limit = 2;
    c.rto_max_us = 2000;
    c.dead_after_ms = 5000;
    Pair p(c, c);
    ASSERT_TRUE(p.a && p.b);
    UdpEndpoint *a = p.a.get(), *b = p.b.get();
    Channel *ab = a->link_to(kIpB, p.port_b());
    uint64_t n = 0;  // packet 0 of CheckingSink's sequence: its number and nothing else
    ASSERT_TRUE(ab->send(&n, sizeof(n), nullptr, 0, false));
    CheckingSink sa, sb;
    std::vector<Link *> failed;
    uint64_t before = a->stats().retransmits;
    while (a->stats().retransmits - before <= 2 * c.retry_limit) {  // b is paused meanwhile
        a->poll(sa, 64);
        a->take_failed(failed);
        ASSERT_TRUE(failed.empty());
    }
    EXPECT_TRUE(ab->alive());
    for (int i = 0; i < 100000 && !ab->acked(ab->last_token()); i++) {  // b resumes
        b->poll(sb, 64);
        a->poll(sa, 64);
    }
    EXPECT_TRUE(ab->acked(ab->last_token()));
    EXPECT_TRUE(ab->alive());
    EXPECT_EQ(sb.next, 1u);
    EXPECT_EQ(sb.bad, 0u);
    a->take_failed(failed);
    EXPECT_TRUE(failed.empty());
}

// A peer paused for 200 ms (descheduled, stopped in a debugger) after the round trip
// was measured at microseconds: the timer backs off, so the sender resends a bounded
// number of packets, not one burst per floor-length interval (which would be thousands),
// and once the peer resumes every packet arrives once, in order.
TEST(UdpReliable, PausedPeerDrawsABoundedNumberOfRetransmissions) {
    UdpConfig c;
    Pair p(c, c);
    ASSERT_TRUE(p.a && p.b);
    Channel *ab = p.a->link_to(kIpB, p.port_b());
    CheckingSink sa, sb;
    uint64_t n = 0;
    auto send_one = [&] {
        ASSERT_TRUE(ab->send(&n, sizeof(n), nullptr, 0, false));
        n++;
    };
    for (int i = 0; i < 20; i++) {  // round trips measured while b answers
        send_one();
        settle(p, ab, sa, sb, 100000);
    }
    for (int i = 0; i < 10; i++)
        send_one();
    uint64_t before = p.a->stats().retransmits;
    poll_alone(*p.a, sa, 200000);  // b is paused: only a runs
    uint64_t resent = p.a->stats().retransmits - before;
    settle(p, ab, sa, sb);  // b resumes
    EXPECT_TRUE(ab->acked(ab->last_token()));
    EXPECT_TRUE(ab->alive());
    EXPECT_EQ(n, sb.next);
    EXPECT_EQ(0u, sb.bad);
    EXPECT_GT(resent, 0u);
    EXPECT_LE(resent, 8u * 16) << "at most 8 packets per timeout, 16 doublings";
}

// A protocol that answers from inside the delivery (a read response, a rendezvous
// pull): the answer leaves before the packet that asked for it counts as received, so it
// cannot acknowledge that packet, and the acknowledgement must stay owed. Otherwise the
// asker hears of its packet only when its timer resends it.
TEST(UdpReliable, AnAnswerSentDuringDeliveryLeavesTheAcknowledgementOwed) {
    UdpConfig c;
    Pair p(c, c);
    ASSERT_TRUE(p.a && p.b);
    Channel *ab = p.a->link_to(kIpB, p.port_b()), *ba = p.b->link_to(kIpA, p.port_a());
    struct Answering : PacketSink {
        Channel *back = nullptr;
        unsigned got = 0;
        bool deliver(const uint8_t *, size_t) override {
            uint64_t v = got++;
            return back->send(&v, sizeof(v), nullptr, 0, false);
        }
    } answering;
    answering.back = ba;
    CheckingSink sa;
    uint64_t n = 0;
    ASSERT_TRUE(ab->send(&n, sizeof(n), nullptr, 0, false));
    for (int i = 0; i < 1000000 && !answering.got; i++)
        p.b->poll(answering, 64);
    ASSERT_EQ(answering.got, 1u);
    EXPECT_GT(ba->rx_unacked(), 0u) << "the answer settled an acknowledgement it did not carry";
    for (int i = 0; i < 1000000 && !(ab->acked(ab->last_token()) && sa.next == 1); i++) {
        p.b->poll(answering, 64);
        p.a->poll(sa, 64);
    }
    EXPECT_TRUE(ab->acked(ab->last_token()));
    EXPECT_EQ(sa.next, 1u);
    EXPECT_EQ(sa.bad, 0u);
}

// Sixteen senders stream at one receiver that polls once per round of theirs, through a
// receive buffer too small for their windows together: the socket drops datagrams, the
// senders' congestion windows shrink, and still every packet of every sender arrives
// once, intact and in order.
TEST(UdpReliable, ManySendersIntoOneSmallBufferLoseNothing) {
    constexpr int kSenders = 16;
    constexpr uint64_t kCount = 1500;
    UdpConfig rc;
    rc.socket_buffer = 64 << 10;
    int err = 0;
    auto recv = UdpEndpoint::open(kIpA, 0, rc, err);
    ASSERT_TRUE(recv) << err;
    PerLink sink;
    std::vector<std::unique_ptr<UdpEndpoint>> senders;
    std::vector<Channel *> links;
    std::vector<uint64_t> sent(kSenders, 0);
    for (int i = 0; i < kSenders; i++) {
        senders.push_back(UdpEndpoint::open(kIpB, 0, UdpConfig{}, err));
        ASSERT_TRUE(senders.back()) << err;
        links.push_back(senders.back()->link_to(kIpA, recv->socket().port()));
    }
    std::vector<uint8_t> buf(1400);
    CheckingSink ignore;
    auto done = [&] {
        for (int i = 0; i < kSenders; i++)
            if (!links[i]->acked(kCount)) return false;
        return true;
    };
    uint64_t cuts = 0;
    for (uint64_t spins = 0; !done(); spins++) {
        ASSERT_LT(spins, 20000000u) << links[0]->describe();
        for (int i = 0; i < kSenders; i++) {
            for (int k = 0; k < 64 && sent[i] < kCount; k++) {
                uint64_t n = sent[i];
                std::memcpy(buf.data(), &n, 8);
                size_t len = packet_size(n, buf.size());
                for (size_t j = 8; j < len; j++)
                    buf[j] = uint8_t(n + j);
                iovec iov{buf.data() + 8, len - 8};
                if (!links[i]->send(buf.data(), 8, &iov, 1, true)) break;
                sent[i]++;
            }
            links[i]->flush();
            senders[i]->poll(ignore, 64);
            ASSERT_TRUE(links[i]->alive()) << links[i]->describe();
        }
        recv->poll(sink, 64);
    }
    ASSERT_EQ(sink.by_link.size(), size_t(kSenders));
    for (auto &[link, check] : sink.by_link) {
        EXPECT_EQ(check.next, kCount);
        EXPECT_EQ(check.bad, 0u);
    }
    for (auto &s : senders)
        cuts += s->stats().congestion;
    RecordProperty("congestion_cuts", std::to_string(cuts));
    EXPECT_GT(cuts, 0u) << "the buffer overflowed: the congestion windows should have shrunk";
}

// The receiver shares its buffer between the peers sending to it: what it grants each
// (the window its acknowledgements advertise) shrinks as senders join, to the packets
// half its socket holds between them, and is the whole window again once one is left.
TEST(UdpReliable, TheReceiverSharesItsBufferBetweenItsSenders) {
    constexpr int kSenders = 16;
    UdpConfig rc;
    int err = 0;
    auto recv = UdpEndpoint::open(kIpA, 0, rc, err);
    ASSERT_TRUE(recv) << err;
    EXPECT_EQ(recv->grant(), rc.window) << "alone, a sender may use the whole window";
    std::vector<std::unique_ptr<UdpEndpoint>> senders;
    std::vector<Channel *> links;
    for (int i = 0; i < kSenders; i++) {
        senders.push_back(UdpEndpoint::open(kIpB, 0, UdpConfig{}, err));
        ASSERT_TRUE(senders.back()) << err;
        links.push_back(senders.back()->link_to(kIpA, recv->socket().port()));
    }
    CheckingSink ignore;
    PerLink sink;
    std::vector<uint64_t> sent(kSenders, 0);
    auto send_from = [&](int i, int count) {
        for (int k = 0; k < count; k++) {
            uint64_t n = sent[i];
            if (!links[i]->send(&n, sizeof(n), nullptr, 0, true)) break;
            sent[i]++;
        }
        links[i]->flush();
        senders[i]->poll(ignore, 64);
    };
    timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    uint32_t shared = rc.window;
    while (elapsed_us(start) < 20000) {  // all of them send for 20 ms
        for (int i = 0; i < kSenders; i++)
            send_from(i, 4);
        recv->poll(sink, 64);
        shared = std::min(shared, recv->grant());
    }
    EXPECT_LT(shared, rc.window);
    EXPECT_GE(shared, 4u);
    EXPECT_LE(uint64_t(shared) * kSenders * (rc.max_datagram + 64), recv->socket().receive_buffer())
        << "the grants together must fit the socket's buffer";
    clock_gettime(CLOCK_MONOTONIC, &start);
    // Then only the first, for 20 ms and until its grant is whole again (at most 2 s: a
    // loaded machine, a sanitizer, may poll too seldom for the others to age out in 20).
    while (elapsed_us(start) < 20000 ||
           (recv->grant() != rc.window && elapsed_us(start) < 2000000)) {
        send_from(0, 4);
        recv->poll(sink, 64);
        for (int i = 1; i < kSenders; i++)
            senders[i]->poll(ignore, 64);
    }
    EXPECT_EQ(recv->grant(), rc.window);
    for (int i = 0; i < kSenders; i++)
        EXPECT_TRUE(links[i]->alive()) << links[i]->describe();
    for (auto &[link, check] : sink.by_link)
        EXPECT_EQ(check.bad, 0u);
}

// A channel with no round-trip sample yet (its first packets all timed out and were
// resent, so no acknowledgement can be timed) keeps the first-contact timer. From the
// timer's floor (50 us) it resent everything every few tens of microseconds while a
// receiver serving many peers caught up, and never got a sample.
TEST(UdpReliable, WithoutARoundTripSampleTheTimerStaysAtFirstContact) {
    UdpConfig c;
    Pair p(c, c);
    ASSERT_TRUE(p.a && p.b);
    Channel *ab = p.a->link_to(kIpB, p.port_b());
    CheckingSink sa, sb;
    uint64_t n = 0;
    auto send_some = [&](int count) {
        for (int i = 0; i < count; i++, n++)
            ASSERT_TRUE(ab->send(&n, sizeof(n), nullptr, 0, i + 1 < count));
    };
    send_some(8);
    poll_alone(*p.a, sa, 3000);  // b is slow to start: the first timer (2 ms) fires
    ASSERT_GT(p.a->stats().retransmits, 0u);
    settle(p, ab, sa, sb);
    ASSERT_TRUE(ab->acked(ab->last_token()));
    send_some(8);
    uint64_t before = p.a->stats().retransmits;
    const auto t0 = std::chrono::steady_clock::now();
    poll_alone(*p.a, sa, 1000);  // b pauses again, for less than the first-contact timer
    // A machine that held this thread off past the timer (2 ms) may rightly resend.
    if (std::chrono::steady_clock::now() - t0 < std::chrono::microseconds(1800)) {
        EXPECT_EQ(p.a->stats().retransmits, before) << ab->describe();
    }
    settle(p, ab, sa, sb);
    EXPECT_TRUE(ab->acked(ab->last_token()));
    EXPECT_EQ(n, sb.next);
    EXPECT_EQ(0u, sb.bad);
}

// A peer may say a packet arrived (selectively) and then acknowledge only up to it: its
// last acknowledgement was lost, or it answered from inside a delivery. The sender's
// timeout must still resend that packet; trusting the selective acknowledgement left
// nothing to resend while the peer owed nothing, and the peer was declared dead.
TEST(UdpReliable, ATimeoutResendsThePacketThePeerSaidItHeld) {
    UdpConfig c;
    c.rto_max_us = 2000;
    int err = 0;
    auto a = UdpEndpoint::open(kIpA, 0, c, err);
    ASSERT_TRUE(a);
    UdpSocket peer;  // a hand-driven peer
    ASSERT_EQ(peer.open(kIpB, 0, 1 << 16, false), 0);
    Channel *ab = a->link_to(kIpB, peer.port());
    ASSERT_NE(ab, nullptr);
    for (uint64_t n = 0; n < 2; n++) {
        iovec iov{&n, sizeof(n)};
        ASSERT_TRUE(ab->send(&n, sizeof(n), &iov, 1, n == 0));
    }
    RecvBatch batch(16, c.max_datagram, false);
    std::vector<sockaddr_in> refused;
    auto resent = [&](uint32_t seq, uint64_t polls) {  // whether A sends DATA `seq` again
        CheckingSink s;
        for (uint64_t i = 0; i < polls; i++) {
            a->poll(s, 64);
            size_t got = peer.receive(batch, refused);
            for (size_t k = 0; k < got; k++) {
                RelHdr h;
                std::memcpy(&h, batch.data(k), sizeof(h));
                if (h.type == uint8_t(RelType::kData) && h.seq == seq) return true;
            }
        }
        return false;
    };
    uint32_t epoch = 0;
    {
        CheckingSink s;
        size_t seen = 0;
        for (int i = 0; i < 100000 && seen < 2; i++) {
            a->poll(s, 64);
            size_t got = peer.receive(batch, refused);
            for (size_t k = 0; k < got; k++, seen++)
                std::memcpy(&epoch, batch.data(k) + offsetof(RelHdr, epoch), sizeof(epoch));
        }
        ASSERT_EQ(seen, 2u);
    }
    auto ack = [&](uint32_t upto, uint64_t sack) {
        RelHdr h{};
        h.magic = kRelMagic;
        h.version = kRelVersion;
        h.type = uint8_t(RelType::kAck);
        h.flags = kRelAckValid;
        h.epoch = 77;
        h.ack_epoch = epoch;
        h.ack = upto;
        h.window = upto + 256;
        h.sack = sack;
        peer.queue(make_sockaddr(kIpA, a->socket().port()), &h, sizeof(h));
        peer.flush();
    };
    ack(0, 1);  // "1 arrived, 0 did not"
    ack(1, 0);  // then "0 arrived", and nothing more is ever said about 1
    EXPECT_TRUE(resent(1, 2000000)) << ab->describe();
    EXPECT_FALSE(ab->acked(2));
}

// A closing endpoint whose acknowledgement of the last packet was lost acknowledges again
// while it lingers. Its peer's timer may be far longer than the closing side's quiet
// time (the peer measured a slower round trip): one acknowledgement, lost, left the peer
// to resend into a closed port, which failed an operation that had arrived.
TEST(UdpReliable, ALingeringEndpointAcknowledgesAgain) {
    UdpConfig ca;
    ca.rto_min_us = 100000;   // a's timer: 100 ms; a is not polled while b lingers, so only
    Pair p(ca, UdpConfig{});  // an acknowledgement that got out spares its resend
    CheckingSink sa, sb;
    exchange(p, 1, sa, sb, 64);  // a round-trip sample: a's timer is at its floor
    Channel *ab = p.a->link_to(kIpB, p.port_b());
    ASSERT_GE(ab->rto_ns(), 100000000u) << ab->describe();
    FaultConfig lose_all;
    lose_all.drop = 100;
    p.b->socket().set_faults(lose_all);  // b's acknowledgements of packet 1 are lost
    ASSERT_TRUE(send_numbered(ab, 1));
    poll_alone(*p.b, sb, 5000);  // b takes it; its acknowledgements, delayed ones too, go nowhere
    ASSERT_EQ(sb.next, 2u);
    EXPECT_EQ(sb.bad, 0u);
    p.a->poll(sa, 64);
    ASSERT_FALSE(ab->acked(ab->last_token()));
    FaultConfig lose_two;  // xorshift64* from seed 7 draws 3, 31, 89...: drop, drop, send
    lose_two.drop = 50;
    lose_two.seed = 7;
    p.b->socket().set_faults(lose_two);
    p.b->linger();
    p.b.reset();                   // b's port closes: a resend from now on is refused
    poll_alone(*p.a, sa, 200000);  // past a's timer
    EXPECT_TRUE(ab->acked(ab->last_token())) << ab->describe();
    EXPECT_TRUE(ab->alive()) << ab->describe();
}

// Each side's datagrams say its retransmission timeout, and a closing endpoint lingers by
// its peer's when that is the longer: a peer with a 100 ms timer may resend 100 ms after
// its last acknowledgement was lost, and must find the port still answering. Before, the
// closing side lingered by its own timer (here well under 1 ms), at least 10 ms.
TEST(UdpReliable, ALingeringEndpointWaitsOutItsPeersTimer) {
    UdpConfig ca;
    ca.rto_min_us = 100000;  // a's timer: 100 ms
    Pair p(ca, UdpConfig{});
    EXPECT_EQ(p.b->linger_quiet_ns(), 0u) << "no peer heard from: nothing to linger for";
    CheckingSink sa, sb;
    exchange(p, 1, sa, sb, 64);
    Channel *ab = p.a->link_to(kIpB, p.port_b()), *ba = p.b->link_to(kIpA, p.port_a());
    ASSERT_GE(ab->rto_ns(), 100000000u) << ab->describe();
    ASSERT_TRUE(send_numbered(ab, 1));  // its header says a's timer as it is now
    poll_alone(*p.b, sb, 5000);
    ASSERT_EQ(sb.next, 2u);
    EXPECT_GE(ba->peer_rto_ns(), 100000000u) << ba->describe();
    EXPECT_LT(ba->rto_ns(), 100000000u) << ba->describe();
    // Eight of a's timeouts, capped at 250 ms (what linger waits for, not a clock reading).
    EXPECT_EQ(p.b->linger_quiet_ns(), 250000000u) << ba->describe();
    p.b->linger();
    EXPECT_TRUE(p.b->closing());
}

// Stream epochs follow the clock, whatever its value, so that a restarted process's
// streams are newer than its previous incarnation's: numbering them 1, 2, 3 (as happened
// whenever the clock's value had its top bit set) made a restarted peer look older, and
// its packets were dropped as stale.
TEST(UdpReliable, StreamEpochsFollowTheClock) {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint32_t clock = uint32_t((uint64_t(ts.tv_sec) * 1000000 + uint64_t(ts.tv_nsec) / 1000) >> 4);
    uint32_t e1 = next_epoch(), e2 = next_epoch();
    EXPECT_GT(int32_t(e2 - e1), 0) << "later streams are newer";
    int64_t off = int32_t(e1 - clock);
    EXPECT_LT(off < 0 ? -off : off, 1 << 22) << "epoch " << e1 << " clock " << clock;
}

// A channel's slots grow with a burst (a window of packets in flight) and go back to a
// few once the endpoint has been quiet: an idle peer costs little.
TEST(UdpReliable, ABurstGrowsTheSlotsAndQuietGivesThemBack) {
    UdpConfig c;
    Pair p(c, c);
    ASSERT_TRUE(p.a && p.b);
    Channel *ab = p.a->link_to(kIpB, p.port_b());
    size_t idle = ab->slot_count();
    EXPECT_LE(idle, 32u);
    CheckingSink sa, sb;
    std::vector<uint8_t> buf(1000);
    uint64_t sent = 0, most = 0;
    for (int spins = 0; sent < 3000 || !ab->acked(sent); spins++) {
        ASSERT_LT(spins, 10000000);
        for (int k = 0; k < 64 && sent < 3000; k++) {
            std::memcpy(buf.data(), &sent, 8);
            size_t len = packet_size(sent, buf.size());
            for (size_t j = 8; j < len; j++)
                buf[j] = uint8_t(sent + j);
            iovec iov{buf.data() + 8, len - 8};
            if (!ab->send(buf.data(), 8, &iov, 1, true)) break;
            sent++;
        }
        ab->flush();
        most = std::max<uint64_t>(most, ab->slot_count());
        p.b->poll(sb, 64);
        p.a->poll(sa, 64);
    }
    EXPECT_EQ(sb.next, 3000u);
    EXPECT_EQ(sb.bad, 0u);
    EXPECT_GT(most, idle) << "a window of packets in flight needs more than the first slots";
    for (int i = 0; i < 100000; i++) {  // quiet: nothing arrives
        p.a->poll(sa, 64);
        p.b->poll(sb, 64);
    }
    EXPECT_EQ(ab->slot_count(), idle);
}

// One endpoint that heard from many peers once: what each idle peer costs it.
TEST(UdpReliable, AnIdlePeerCostsAFewKilobytes) {
    UdpConfig c;
    int err = 0;
    auto rx = UdpEndpoint::open(kIpA, 0, c, err);
    ASSERT_TRUE(rx);
    const uint16_t port = rx->socket().port();
    // One descriptor per peer: room for 1,024 where the hard limit allows it.
    rlimit lim{};
    getrlimit(RLIMIT_NOFILE, &lim);
    if (lim.rlim_cur < 1200 && lim.rlim_max >= 1200) {
        lim.rlim_cur = 1200;
        setrlimit(RLIMIT_NOFILE, &lim);
    }
    const int kPeers = lim.rlim_cur >= 1200 ? 1024 : 200;
    std::vector<std::unique_ptr<UdpEndpoint>> peers;
    CheckingSink sink, none;
    uint64_t seq = 0;
    for (int i = 0; i < kPeers; i++) {
        peers.push_back(UdpEndpoint::open(kIpB, 0, c, err));
        ASSERT_TRUE(peers.back());
        Channel *ch = peers.back()->link_to(kIpA, port);
        uint8_t msg[64] = {};
        iovec iov{msg, sizeof(msg)};
        ASSERT_TRUE(ch->send(&seq, 8, &iov, 1, false));
        for (int spins = 0; !ch->acked(ch->last_token()); spins++) {
            ASSERT_LT(spins, 1000000);
            rx->poll(sink, 64);
            peers.back()->poll(none, 64);
        }
    }
    for (int i = 0; i < 100000; i++)  // quiet
        rx->poll(sink, 64);
    size_t total = 0;
    for (int i = 0; i < kPeers; i++) {
        Channel *ch = rx->link_to(kIpB, peers[i]->socket().port());
        ASSERT_NE(ch, nullptr);
        total += ch->footprint();
    }
    const size_t per_peer = total / kPeers;
    std::printf("heap per idle peer: %zu bytes (%d peers of one endpoint)\n", per_peer, kPeers);
    EXPECT_LE(per_peer, size_t{8192}) << "an idle peer should cost a few KiB";
}

TEST(UdpReliable, GarbageIsCountedNotTrusted) {
    UdpConfig c;
    int err = 0;
    auto a = UdpEndpoint::open(kIpA, 0, c, err);
    ASSERT_TRUE(a);
    UdpSocket raw;
    ASSERT_EQ(raw.open(kIpB, 0, 1 << 16, false), 0);
    std::mt19937 rng(7);
    std::vector<uint8_t> junk(600);
    for (int i = 0; i < 200; i++) {
        for (auto &b : junk)
            b = uint8_t(rng());
        if (i % 2) {  // a valid magic and version but nonsense after it
            RelHdr h{};
            h.magic = kRelMagic;
            h.version = kRelVersion;
            h.type = uint8_t(1 + i % 5);
            std::memcpy(junk.data(), &h, 8);
        }
        raw.queue(make_sockaddr(kIpA, a->socket().port()), junk.data(), 1 + rng() % junk.size());
        raw.flush();
    }
    CheckingSink s;
    for (int i = 0; i < 1000; i++)
        a->poll(s, 64);
    EXPECT_GT(a->stats().malformed, 0u);
}

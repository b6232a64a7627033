// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Port sets and the per-peer table (transport/ports.hpp): a peer is reached through the
// first transport that reaches it, the domain's shared links are one per peer, an
// address is claimed once, and what went wrong comes back with its reason.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sys/socket.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "transport/ports.hpp"

namespace softnic::transport {
namespace {

// Nodes 1..99 are 127.0.0.<node>; node 100 has no IP address. Each address gets a port
// the kernel picked as free when it was first named (ephemeral, as the other unit
// tests take theirs).
class TestNaming final : public Naming {
  public:
    std::string local_name(const Address &a) const override {
        return "/softnic-ports-" + std::to_string(getpid()) + "-" + std::to_string(a.node) + "-" +
               std::to_string(a.realm) + "-" + std::to_string(a.id);
    }
    uint32_t ipv4(uint32_t node) const override { return node < 100 ? 0x7f000000 | node : 0; }
    uint16_t ip_port(const Address &a) const override {
        auto [it, fresh] = ports_.try_emplace(a.key(), 0);
        if (fresh) it->second = free_port(ipv4(a.node));
        return it->second;
    }

  private:
    static uint16_t free_port(uint32_t ip) {
        int fd = socket(AF_INET, SOCK_DGRAM, 0);
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(ip);
        socklen_t len = sizeof(sa);
        EXPECT_EQ(0, bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)));
        EXPECT_EQ(0, getsockname(fd, reinterpret_cast<sockaddr *>(&sa), &len));
        close(fd);
        return ntohs(sa.sin_port);
    }
    mutable std::map<uint64_t, uint16_t> ports_;
};

struct Inbox final : PacketSink {
    std::vector<std::string> got;
    bool deliver(const uint8_t *p, size_t n) override {
        got.emplace_back(reinterpret_cast<const char *>(p), n);
        return true;
    }
};

class PortsTest : public ::testing::Test {
  protected:
    PortsTest() { opts_.naming = &naming_; }
    int open(PortSet &s, uint32_t node, uint16_t realm, uint32_t id) {
        return s.open(Address{node, realm, id}, opts_, peers_);
    }
    // Polls until `done` holds, or gives up after a few seconds (the test then fails on
    // what it checks, rather than hanging).
    template <class F>
    void poll_until(std::vector<PortSet *> sets, Inbox &in, F done) {
        auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (!done() && std::chrono::steady_clock::now() < end)
            for (PortSet *s : sets)
                s->poll(in, true);
    }
    // The link from `s` to `to`, which must exist; `shared` as link_to says.
    static Link *link(PortSet &s, const Address &to, bool &shared) {
        int err = 0;
        Link *l = s.link_to(to, err, shared);
        EXPECT_EQ(0, err);
        return l;
    }
    static bool send(Link *l, const std::string &s) {
        return l->send(s.data(), s.size(), nullptr, 0);
    }

    TestNaming naming_;
    PortOptions opts_;
    PeerTable peers_;
};

TEST_F(PortsTest, SameNodeGoesThroughSharedMemoryOtherNodesThroughUdp) {
    PortSet a, b, c;
    ASSERT_EQ(0, open(a, 1, 5, 1));
    ASSERT_EQ(0, open(b, 1, 5, 2));
    ASSERT_EQ(0, open(c, 2, 5, 3));
    bool shared = false;
    Link *to_b = link(a, {1, 5, 2}, shared);
    ASSERT_NE(nullptr, to_b);
    EXPECT_TRUE(shared);
    EXPECT_FALSE(to_b->completes_on_ack());
    EXPECT_EQ(nullptr, to_b->inet_peer());
    Link *to_c = link(a, {2, 5, 3}, shared);
    ASSERT_NE(nullptr, to_c);
    EXPECT_FALSE(shared);
    EXPECT_TRUE(to_c->completes_on_ack());
    ASSERT_NE(nullptr, to_c->inet_peer());
    EXPECT_EQ(naming_.ip_port(Address{2, 5, 3}), ntohs(to_c->inet_peer()->sin_port));

    ASSERT_TRUE(send(to_b, "local"));
    ASSERT_TRUE(send(to_c, "remote"));
    Inbox in_b, in_c;
    b.poll(in_b, false);  // a ring is read on every call
    ASSERT_EQ(1u, in_b.got.size());
    EXPECT_EQ("local", in_b.got[0]);
    poll_until({&a, &c}, in_c, [&] { return !in_c.got.empty(); });
    ASSERT_EQ(1u, in_c.got.size());
    EXPECT_EQ("remote", in_c.got[0]);
    EXPECT_GE(a.wake_fd(), 0);  // the UDP socket, for an offload helper
}

TEST_F(PortsTest, TheDomainKeepsOneSharedLinkPerPeerUntilItIsForgotten) {
    PortSet a1, a2, b;
    ASSERT_EQ(0, open(a1, 1, 5, 1));
    ASSERT_EQ(0, open(a2, 1, 5, 2));
    ASSERT_EQ(0, open(b, 1, 5, 3));
    bool shared = false;
    Link *l1 = link(a1, {1, 5, 3}, shared);
    Link *l2 = link(a2, {1, 5, 3}, shared);
    ASSERT_NE(nullptr, l1);
    EXPECT_EQ(l1, l2);
    peers_.forget(l1);
    Link *l3 = link(a1, {1, 5, 3}, shared);
    ASSERT_NE(nullptr, l3);
    EXPECT_NE(l1, l3);
    EXPECT_TRUE(l1->alive());  // forgotten, not freed: cached pointers stay valid
}

TEST_F(PortsTest, AnAddressIsClaimedOnce) {
    PortSet a, again;
    ASSERT_EQ(0, open(a, 1, 5, 7));
    EXPECT_EQ(-EADDRINUSE, open(again, 1, 5, 7));
    EXPECT_FALSE(again.is_open());
    a.close();
    EXPECT_EQ(0, open(again, 1, 5, 7));
}

TEST_F(PortsTest, UnreachablePeersAreNamedByTheirError) {
    PortSet a;
    ASSERT_EQ(0, open(a, 1, 5, 1));
    int err = 0;
    bool shared = false;
    EXPECT_EQ(nullptr, a.link_to(Address{1, 5, 9}, err, shared));
    EXPECT_EQ(-ENOENT, err);  // our node, but no endpoint there
    EXPECT_EQ(nullptr, a.link_to(Address{100, 5, 9}, err, shared));
    EXPECT_EQ(-EHOSTUNREACH, err);  // no transport reaches that node
}

TEST_F(PortsTest, AnotherRealmRefusesAndTheLinkFailsWithThatReason) {
    PortSet a, other;
    ASSERT_EQ(0, open(a, 1, 5, 1));
    ASSERT_EQ(0, open(other, 2, 6, 1));
    bool shared = false;
    Link *l = link(a, {2, 6, 1}, shared);  // its port, our realm
    ASSERT_NE(nullptr, l);
    ASSERT_TRUE(send(l, "hello"));
    Inbox in;
    uint64_t foreign = 0;
    poll_until({&a, &other}, in, [&] {
        foreign += other.take_foreign();
        return foreign > 0 && !a.failed().empty();
    });
    EXPECT_TRUE(in.got.empty());
    EXPECT_GE(foreign, 1u);
    ASSERT_EQ(1u, a.failed().size());
    EXPECT_EQ(l, a.failed()[0]);
    EXPECT_EQ(LinkFailure::kForeign, l->failure().reason);
}

}  // namespace
}  // namespace softnic::transport

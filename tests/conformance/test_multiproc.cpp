// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Cross-process tests with the cxi_peer program (fork + execve, addresses
// exchanged over a socketpair): pingpong over every size, unexpected
// messages, a named shared AV opened FI_READ by the peer (fi_av(3)
// FI_SHARED_AV semantics), and a peer killed with SIGKILL.
#include <rdma/fi_collective.h>
#include <rdma/fi_cxi_ext.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "fixture.hpp"
#include "peer_proto.hpp"

#ifndef CXIT_PEER_PATH
#error "CXIT_PEER_PATH must name the cxi_peer executable"
#endif

using namespace cxit;

namespace {

class MultiProcTest : public TransportTest {
  protected:
    proc::Child spawn(const std::string &mode, const std::vector<std::string> &args = {},
                      const std::vector<std::string> &env = {}) {
        return proc::spawn(CXIT_PEER_PATH, mode, peer_domain(), args, env);
    }
    // The peer sends its name first, then waits for ours.
    static fi_addr_t exchange(Endpoint &ep, proc::Child &c) {
        std::vector<uint8_t> theirs = proc::recv_blob(c.fd());
        proc::send_blob(c.fd(), ep.name());
        return ep.insert(theirs);
    }
    void pingpong_all_sizes(const std::vector<std::string> &env);
    void unexpected_burst(const std::vector<std::string> &env);
    // One tagged round trip through an "echo" peer.
    static void echo(Endpoint &ep, fi_addr_t peer, size_t len, uint32_t seed) {
        std::vector<uint8_t> out = pattern(len, seed), in(len);
        int sctx = 0, rctx = 0;
        post([&] { return fi_trecv(ep.ep(), in.data(), len, nullptr, peer, 5, 0, &rctx); },
             "fi_trecv");
        post([&] { return fi_tsend(ep.ep(), out.data(), len, nullptr, peer, 5, &sctx); },
             "fi_tsend");
        wait_comp(ep.tx(), &sctx, "echo request");
        Comp c = wait_comp(ep.rx(), &rctx, "echo reply");
        EXPECT_EQ(len, c.e.len);
        EXPECT_EQ(SIZE_MAX, mismatch(in.data(), len, seed)) << "echo of " << len << " bytes";
    }
};

void MultiProcTest::pingpong_all_sizes(const std::vector<std::string> &env) {
    EndpointPtr ep = make_ep("cxi0");
    proc::Child c = spawn("pingpong", {}, env);
    fi_addr_t peer = exchange(*ep, c);
    const std::vector<size_t> sizes = pingpong_sizes();
    std::vector<uint8_t> out(sizes.back()), in(sizes.back());
    for (size_t i = 0; i < sizes.size(); i++) {
        const size_t len = sizes[i];
        SCOPED_TRACE(len);
        fill(out.data(), len, static_cast<uint32_t>(len));
        std::memset(in.data(), 0, len);
        int sctx = 0, rctx = 0;
        proc::expect_str(c.fd(), "R");  // the peer's receive is posted
        post([&] { return fi_trecv(ep->ep(), in.data(), len, nullptr, peer, i, 0, &rctx); },
             "fi_trecv");
        post([&] { return fi_tsend(ep->ep(), out.data(), len, nullptr, peer, i, &sctx); },
             "fi_tsend");
        wait_comp(ep->tx(), &sctx, "ping of " + std::to_string(len));
        Comp r = wait_comp(ep->rx(), &rctx, "pong of " + std::to_string(len));
        ASSERT_EQ(len, r.e.len);
        ASSERT_EQ(i, r.e.tag);
        ASSERT_EQ(SIZE_MAX, mismatch(in.data(), len, static_cast<uint32_t>(len)));
    }
    proc::expect_str(c.fd(), "DONE");
    proc::send_str(c.fd(), "BYE");
    EXPECT_EQ(0, c.wait_exit()) << "peer reported a failure (see its stderr)";
}

void MultiProcTest::unexpected_burst(const std::vector<std::string> &env) {
    EndpointPtr ep = make_ep("cxi0");
    proc::Child c = spawn("unexpected", {}, env);
    fi_addr_t peer = exchange(*ep, c);
    proc::expect_str(c.fd(), "S");
    progress_for(std::chrono::milliseconds(100));  // let the burst arrive unexpected
    const std::vector<size_t> sizes = proc::unexpected_sizes();
    std::vector<std::vector<uint8_t>> in(sizes.size());
    std::vector<int> rctx(sizes.size());
    for (size_t k = sizes.size(); k-- > 0;) {  // tagged ones in reverse order
        if (k % 2) continue;
        in[k].assign(sizes[k], 0);
        post(
            [&] {
                return fi_trecv(ep->ep(), in[k].data(), sizes[k], nullptr, peer, 100 + k, 0,
                                &rctx[k]);
            },
            "fi_trecv");
    }
    for (size_t k = 1; k < sizes.size(); k += 2) {  // untagged ones in send order
        in[k].assign(sizes[k], 0);
        post([&] { return fi_recv(ep->ep(), in[k].data(), sizes[k], nullptr, peer, &rctx[k]); },
             "fi_recv");
    }
    for (size_t k = 0; k < sizes.size(); k++) {
        Comp r = wait_comp(ep->rx(), &rctx[k], "unexpected message " + std::to_string(k));
        EXPECT_EQ(sizes[k], r.e.len) << "message " << k;
        EXPECT_EQ(k % 2 ? FI_MSG | FI_RECV : FI_TAGGED | FI_RECV, r.e.flags) << "message " << k;
        EXPECT_EQ(SIZE_MAX, mismatch(in[k].data(), sizes[k], static_cast<uint32_t>(1000 + k)))
            << "message " << k;
    }
    proc::expect_str(c.fd(), "D");
    proc::send_str(c.fd(), "BYE");
    EXPECT_EQ(0, c.wait_exit()) << "peer reported a failure (see its stderr)";
}

TEST_P(MultiProcTest, PingPongAllSizes) {
    pingpong_all_sizes({});
}

TEST_P(MultiProcTest, PingPongAllSizesSoftwareMatchingPeer) {
    pingpong_all_sizes(proc::sw_match_env());
}

TEST_P(MultiProcTest, UnexpectedMessagesFromPeer) {
    unexpected_burst({});
}

TEST_P(MultiProcTest, UnexpectedMessagesFromSoftwareMatchingPeer) {
    unexpected_burst(proc::sw_match_env());
}

TEST_P(MultiProcTest, SharedAvOpenedReadOnlyByPeer) {
    static std::atomic<int> seq{0};
    const std::string name = "cxit_av_" + std::to_string(getpid()) + "_" + std::to_string(seq++);
    EpOptions o;
    o.av_name = name.c_str();
    EndpointPtr ep = make_ep("cxi0", o);
    std::vector<std::vector<uint8_t>> entries{encode_addr(0xABC01, 11), encode_addr(0xABC02, 12),
                                              ep->name(), encode_addr(0xABC03, 13)};
    std::vector<uint8_t> table;
    for (size_t i = 0; i < entries.size(); i++) {
        ASSERT_EQ(i, ep->insert(entries[i])) << "named TABLE AV indexes";
        table.insert(table.end(), entries[i].begin(), entries[i].end());
    }
    proc::Child c = spawn("shared_av", {name});
    proc::recv_blob(c.fd());  // the peer's own name (unused)
    proc::send_blob(c.fd(), table);
    proc::send_str(c.fd(), "2");  // our fi_addr in the shared AV
    std::vector<uint8_t> small(1000), big(kRdzvSize);
    int r1 = 0, r2 = 0;
    post(
        [&] { return fi_recv(ep->ep(), small.data(), small.size(), nullptr, FI_ADDR_UNSPEC, &r1); },
        "fi_recv");
    post([&] { return fi_recv(ep->ep(), big.data(), big.size(), nullptr, FI_ADDR_UNSPEC, &r2); },
         "fi_recv");
    wait_comp(ep->rx(), &r1, "message sent through the shared AV");
    wait_comp(ep->rx(), &r2, "rendezvous message sent through the shared AV");
    EXPECT_EQ(SIZE_MAX, mismatch(small.data(), small.size(), 4242));
    EXPECT_EQ(SIZE_MAX, mismatch(big.data(), big.size(), 4343));
    proc::expect_str(c.fd(), "D");
    proc::send_str(c.fd(), "BYE");
    EXPECT_EQ(0, c.wait_exit()) << "peer reported a failure (see its stderr)";
}

TEST_P(MultiProcTest, PeerKilledWhileConnected) {
    // Buffers and contexts of the sends to the dead peer outlive the EP: the
    // provider may still hold them when the EP is closed.
    std::vector<uint8_t> small(64), big(kRdzvSize);
    int dead1 = 0, dead2 = 0;
    EndpointPtr ep = make_ep("cxi0");
    fi_addr_t self = ep->insert(ep->name());
    {
        proc::Child c = spawn("echo");
        fi_addr_t peer = exchange(*ep, c);
        proc::expect_str(c.fd(), "R");
        echo(*ep, peer, 100, 1);
        echo(*ep, peer, kRdzvSize, 2);
        c.kill_now();

        // Traffic to the dead peer may fail or vanish; it must not wedge us.
        // (Tag 9: never matched by the echo receives below, should a new
        // peer reuse the dead one's address.)
        (void)fi_tsend(ep->ep(), small.data(), small.size(), nullptr, peer, 9, &dead1);
        (void)fi_tsend(ep->ep(), big.data(), big.size(), nullptr, peer, 9, &dead2);
        progress_for(std::chrono::milliseconds(200));
    }
    ping(*ep, self, *ep, 1000, 3);  // still working locally
    ping(*ep, self, *ep, kRdzvSize, 4);
    {
        proc::Child c = spawn("echo");  // a new peer process can connect
        fi_addr_t peer = exchange(*ep, c);
        proc::expect_str(c.fd(), "R");
        echo(*ep, peer, 2000, 5);
        echo(*ep, peer, kRdzvSize, 6);
        c.kill_now();
    }
    EXPECT_OK(ep->close_ep()) << "closing with traffic to a dead peer outstanding";
}

// Sends to a peer that was killed end in an error, as soon as the provider can tell, and
// never leave the caller retrying -FI_EAGAIN forever. Within a host the dead process's
// ring fills up and stays full; between hosts its port is closed. The peer sits at a PID
// of its own choosing: with kPidAny, an endpoint that a test process running beside this
// one opens may take the dead peer's PID over, and the sends then go to it (a run of the
// suite, 4 tests at once, once saw all 65,536 accepted and no error).
TEST_P(MultiProcTest, SendsToAKilledPeerEndInAnError) {
    EndpointPtr ep = make_ep("cxi0");
    proc::Child c = spawn("echo", {"pinned"});
    fi_addr_t peer = exchange(*ep, c);
    proc::expect_str(c.fd(), "R");
    echo(*ep, peer, 100, 1);
    c.kill_now();
    static uint8_t buf[64];
    std::vector<int> ctx(1 << 16);  // more sends than a ring has cells, by far
    size_t posted = 0;
    bool failed = poll_until([&] {
        if (posted < ctx.size()) {
            ssize_t rc = fi_tsend(ep->ep(), buf, sizeof(buf), nullptr, peer, 9, &ctx[posted]);
            if (rc == 0) posted++;
            if (rc != 0 && rc != -FI_EAGAIN) return true;  // refused at the call
        }
        ep->tx().poll();
        return ep->tx().err_count() > 0;
    });
    EXPECT_TRUE(failed) << posted << " sends to the killed peer accepted, and no error";
}

// A collective group of two processes; the other member is killed while our barrier
// waits for it: the barrier fails (MC_FAILURE), it does not hang.
TEST_P(MultiProcTest, CollectiveMemberKilledMidCall) {
    EpOptions o;
    o.caps = FI_MSG | FI_TAGGED | FI_COLLECTIVE;
    EndpointPtr ep = make_ep("cxi0", o);
    proc::Child c = spawn("coll");
    fi_addr_t peer = exchange(*ep, c);
    fi_addr_t self = ep->insert(ep->name());
    CollGroup g;
    join_group(g, fabric(), *ep, {self, peer}, nullptr, false);
    proc::expect_str(c.fd(), "J");
    EXPECT_EQ(42, allreduce_sum(*ep, g, 37, "allreduce with the peer"));
    proc::expect_str(c.fd(), "42");
    int ctx = 0;
    ASSERT_OK(fi_barrier(ep->ep(), g.addr(), &ctx));  // the peer never enters it
    c.kill_now();
    ErrComp e = wait_err(ep->tx(), &ctx, "barrier whose other member was killed");
    EXPECT_EQ(FI_CXI_ERRNO_RED_MC_FAILURE, e.e.prov_errno);
    EXPECT_OK(fi_close(&g.mc->fid));
    g.mc = nullptr;
}

// Three processes fetch-add one word of ours at once: no update is lost, and each
// sees the values it fetched rise strictly.
TEST_P(MultiProcTest, ProcessesHammeringOneWordLoseNothing) {
    EpOptions o;
    o.caps = FI_MSG | FI_ATOMIC;
    EndpointPtr ep = make_ep("cxi0", o);
    uint64_t word = 0;
    Fid<fid_mr> mr;
    ASSERT_OK(CXIT_OPEN(mr, fi_mr_reg(domain("cxi0", o), &word, sizeof(word),
                                      FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, OUT, nullptr)));
    ASSERT_OK(fi_mr_bind(mr.get(), &ep->ep()->fid, 0));
    ASSERT_OK(fi_mr_enable(mr.get()));
    const int kPeers = 3, kEach = 300;
    std::vector<proc::Child> peers;
    for (int i = 0; i < kPeers; i++) {
        peers.push_back(spawn("hammer", {std::to_string(kEach)}));
        exchange(*ep, peers.back());
    }
    for (auto &c : peers)
        proc::send_str(c.fd(), std::to_string(fi_mr_key(mr.get())));
    for (auto &c : peers)
        proc::expect_str(c.fd(), "D");
    EXPECT_EQ(uint64_t(kPeers * kEach), word);
    for (auto &c : peers) {
        proc::send_str(c.fd(), "BYE");
        EXPECT_EQ(0, c.wait_exit()) << "peer reported a failure (see its stderr)";
    }
    mr.reset();
}

// The target process is blocked outside libfabric while we write and read its memory.
// Within a host it runs without its helper thread, so only single-copy access can
// serve us; between hosts (or with single copy switched off) its helper thread does,
// as a NIC would.
TEST_P(MultiProcTest, OneSidedNeedsNoCallsFromTheTargetProcess) {
    EpOptions o;
    o.caps = FI_MSG | FI_RMA;
    EndpointPtr ep = make_ep("cxi0", o);
    const bool local = single_copy();
    proc::Child c =
        spawn("window", {},
              local ? std::vector<std::string>{"FI_CXI_OFFLOAD=0"} : std::vector<std::string>{});
    fi_addr_t peer = exchange(*ep, c);
    const uint64_t key = std::stoull(proc::recv_str(c.fd()));
    const size_t half = 1 << 19;
    std::vector<uint8_t> out = pattern(half, 78), in(half);
    int wctx = 0, rctx = 0;
    post([&] { return fi_write(ep->ep(), out.data(), half, nullptr, peer, 0, key, &wctx); },
         "fi_write");
    post([&] { return fi_read(ep->ep(), in.data(), half, nullptr, peer, half, key, &rctx); },
         "fi_read");
    wait_comp(ep->tx(), &wctx, "write to a process that never calls in");
    wait_comp(ep->tx(), &rctx, "read from a process that never calls in");
    std::vector<uint8_t> whole = pattern(1 << 20, 77);
    EXPECT_EQ(0, std::memcmp(in.data(), &whole[half], half)) << "read returned other bytes";
    proc::send_str(c.fd(), "CHECK");
    EXPECT_EQ("OK", proc::recv_str(c.fd()));
    proc::send_str(c.fd(), "BYE");
    EXPECT_EQ(0, c.wait_exit()) << "peer reported a failure (see its stderr)";
}

CXIT_INSTANTIATE_TRANSPORTS(MultiProcTest);

}  // namespace

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Operation flags that change when and whether completions appear:
// FI_MORE batching (spec §5.9), selective completion (§5.5),
// FI_MATCH_COMPLETE / FI_DELIVERY_COMPLETE / FI_INJECT_COMPLETE /
// FI_TRANSMIT_COMPLETE (§5.1 and the seed's "Operation flags").
#include <cstring>

#include "fixture.hpp"

using namespace cxit;

namespace {

class CompletionLevelsTest : public TransportTest {
  protected:
    static long sendmsg(Pair &p, const void *buf, size_t len, void *ctx, uint64_t flags) {
        iovec iov{const_cast<void *>(buf), len};
        fi_msg m{&iov, nullptr, 1, p.a2b, ctx, 0};
        return fi_sendmsg(p.a->ep(), &m, flags);
    }
    static long recvmsg(Endpoint &e, void *buf, size_t len, void *ctx, uint64_t flags) {
        iovec iov{buf, len};
        fi_msg m{&iov, nullptr, 1, FI_ADDR_UNSPEC, ctx, 0};
        return fi_recvmsg(e.ep(), &m, flags);
    }
    // Progresses everything for a while, then fails if either CQ has entries.
    static void expect_both_quiet(Cq &x, Cq &y, const std::string &what) {
        progress_for(kQuietWindow);
        EXPECT_EQ(0u, x.ok_count() + x.err_count()) << what;
        EXPECT_EQ(0u, y.ok_count() + y.err_count()) << what;
    }
};

TEST_P(CompletionLevelsTest, MoreDefersSendsUntilAFlushingSend) {
    Pair p = make_pair();
    uint32_t in[3] = {}, out[3] = {11, 22, 33};
    int r[3], s[3];
    for (int i = 0; i < 3; i++)
        ASSERT_OK(fi_recv(p.b->ep(), &in[i], 4, nullptr, FI_ADDR_UNSPEC, &r[i]));
    ASSERT_OK(sendmsg(p, &out[0], 4, &s[0], FI_COMPLETION | FI_MORE));
    ASSERT_OK(sendmsg(p, &out[1], 4, &s[1], FI_COMPLETION | FI_MORE));
    expect_both_quiet(p.a->tx(), p.b->rx(), "FI_MORE sends must wait for a flushing send");
    ASSERT_OK(fi_send(p.a->ep(), &out[2], 4, nullptr, p.a2b, &s[2]));
    for (int i = 0; i < 3; i++) {
        wait_comp(p.b->rx(), &r[i], "receive after flush");
        wait_comp(p.a->tx(), &s[i], "send after flush");
        EXPECT_EQ(out[i], in[i]) << "order within the batch";
    }
}

// FI_INJECT on fi_sendmsg only frees the buffer early: unlike fi_inject, the send still
// has a completion (found by fabtests' fi_msg_inject).
TEST_P(CompletionLevelsTest, SendmsgWithInjectStillCompletes) {
    Pair p = make_pair();
    uint64_t out = 0x1234, in = 0;
    int r = 0, s = 0;
    ASSERT_OK(fi_recv(p.b->ep(), &in, sizeof(in), nullptr, FI_ADDR_UNSPEC, &r));
    ASSERT_OK(sendmsg(p, &out, sizeof(out), &s, FI_INJECT | FI_COMPLETION));
    out = 0;  // the buffer is ours again
    wait_comp(p.a->tx(), &s, "send posted with FI_INJECT");
    wait_comp(p.b->rx(), &r, "receive");
    EXPECT_EQ(0x1234u, in);
}

TEST_P(CompletionLevelsTest, MoreDefersTaggedSends) {
    Pair p = make_pair();
    uint64_t in[2] = {}, out[2] = {7, 8};
    int r[2], s[2];
    for (int i = 0; i < 2; i++)
        ASSERT_OK(fi_trecv(p.b->ep(), &in[i], 8, nullptr, FI_ADDR_UNSPEC, 50 + i, 0, &r[i]));
    iovec iov{&out[0], 8};
    fi_msg_tagged m{&iov, nullptr, 1, p.a2b, 50, 0, &s[0], 0};
    ASSERT_OK(fi_tsendmsg(p.a->ep(), &m, FI_COMPLETION | FI_MORE));
    expect_both_quiet(p.a->tx(), p.b->rx(), "FI_MORE tagged send");
    ASSERT_OK(fi_tsend(p.a->ep(), &out[1], 8, nullptr, p.a2b, 51, &s[1]));
    for (int i = 0; i < 2; i++) {
        wait_comp(p.b->rx(), &r[i], "tagged receive");
        wait_comp(p.a->tx(), &s[i], "tagged send");
        EXPECT_EQ(out[i], in[i]);
    }
}

TEST_P(CompletionLevelsTest, MoreOnReceivesPostsThemAll) {
    Pair p = make_pair();
    char in1[8] = {}, in2[8] = {};
    int r1 = 0, r2 = 0;
    ASSERT_OK(recvmsg(*p.b, in1, sizeof(in1), &r1, FI_COMPLETION | FI_MORE));
    ASSERT_OK(recvmsg(*p.b, in2, sizeof(in2), &r2, FI_COMPLETION));
    ASSERT_OK(fi_inject(p.a->ep(), "m1", 3, p.a2b));
    ASSERT_OK(fi_inject(p.a->ep(), "m2", 3, p.a2b));
    wait_comp(p.b->rx(), &r1, "FI_MORE receive");
    wait_comp(p.b->rx(), &r2, "flushing receive");
    EXPECT_STREQ("m1", in1);
    EXPECT_STREQ("m2", in2);
}

TEST_P(CompletionLevelsTest, SelectiveCompletionSuppressesUnflaggedSends) {
    EpOptions oa;
    oa.tx_cq_flags = FI_TRANSMIT | FI_SELECTIVE_COMPLETION;
    oa.counters = true;
    Pair p = make_pair(oa, {});
    char in[4][8];
    int r[4], flagged = 0;
    for (int i = 0; i < 4; i++)
        ASSERT_OK(fi_recv(p.b->ep(), in[i], 8, nullptr, FI_ADDR_UNSPEC, &r[i]));
    for (int i = 0; i < 3; i++)
        ASSERT_OK(fi_send(p.a->ep(), "quiet", 6, nullptr, p.a2b, nullptr));
    ASSERT_OK(sendmsg(p, "loud", 5, &flagged, FI_COMPLETION));
    for (int i = 0; i < 4; i++)
        wait_comp(p.b->rx(), &r[i], "receive");
    wait_cntr(p.a->send_cntr(), 4, "send");
    Comp c = wait_comp(p.a->tx(), &flagged, "the FI_COMPLETION send");
    EXPECT_EQ(FI_MSG | FI_SEND, c.e.flags);
    expect_quiet(p.a->tx(), "sends without FI_COMPLETION");
}

TEST_P(CompletionLevelsTest, SelectiveCompletionSuppressesUnflaggedReceives) {
    EpOptions ob;
    ob.rx_cq_flags = FI_RECV | FI_SELECTIVE_COMPLETION;
    ob.counters = true;
    Pair p = make_pair({}, ob);
    char quiet[8] = {}, loud[8] = {};
    int rq = 0, rl = 0;
    ASSERT_OK(fi_recv(p.b->ep(), quiet, sizeof(quiet), nullptr, FI_ADDR_UNSPEC, &rq));
    ASSERT_OK(recvmsg(*p.b, loud, sizeof(loud), &rl, FI_COMPLETION));
    ASSERT_OK(fi_inject(p.a->ep(), "q", 2, p.a2b));
    ASSERT_OK(fi_inject(p.a->ep(), "l", 2, p.a2b));
    wait_cntr(p.b->recv_cntr(), 2, "recv");
    wait_comp(p.b->rx(), &rl, "the FI_COMPLETION receive");
    expect_quiet(p.b->rx(), "receive without FI_COMPLETION");
    EXPECT_STREQ("q", quiet);
    EXPECT_STREQ("l", loud);
}

TEST_P(CompletionLevelsTest, SelectiveCompletionStillReportsErrors) {
    EpOptions ob;
    ob.rx_cq_flags = FI_RECV | FI_SELECTIVE_COMPLETION;
    Pair p = make_pair({}, ob);
    char small[4];
    int rctx = 0;
    ASSERT_OK(fi_recv(p.b->ep(), small, sizeof(small), nullptr, FI_ADDR_UNSPEC, &rctx));
    ASSERT_OK(fi_inject(p.a->ep(), "too long", 9, p.a2b));
    ErrComp e = wait_err(p.b->rx(), &rctx, "truncation without FI_COMPLETION");
    EXPECT_EQ(FI_ETRUNC, e.e.err);
    EXPECT_EQ(5u, e.e.olen);
}

TEST_P(CompletionLevelsTest, EndpointOpFlagsRequestCompletions) {
    EpOptions oa;
    oa.tx_cq_flags = FI_TRANSMIT | FI_SELECTIVE_COMPLETION;
    oa.tx_op_flags = FI_COMPLETION;
    Pair p = make_pair(oa, {});
    char in[8];
    int r = 0, s = 0;
    ASSERT_OK(fi_recv(p.b->ep(), in, sizeof(in), nullptr, FI_ADDR_UNSPEC, &r));
    ASSERT_OK(fi_send(p.a->ep(), "opflag", 7, nullptr, p.a2b, &s));
    wait_comp(p.b->rx(), &r, "receive");
    wait_comp(p.a->tx(), &s, "send with FI_COMPLETION in the EP op_flags");
}

TEST_P(CompletionLevelsTest, MatchCompleteWaitsForTheReceive) {
    Pair p = make_pair();
    std::vector<uint8_t> out = pattern(100, 4), in(100);
    int s = 0, r = 0;
    ASSERT_OK(sendmsg(p, out.data(), out.size(), &s, FI_COMPLETION | FI_MATCH_COMPLETE));
    expect_quiet(p.a->tx(), "FI_MATCH_COMPLETE eager send without a matching receive");
    ASSERT_OK(fi_recv(p.b->ep(), in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, &r));
    wait_comp(p.a->tx(), &s, "match-complete send");
    wait_comp(p.b->rx(), &r, "receive");
    EXPECT_EQ(SIZE_MAX, mismatch(in.data(), in.size(), 4));
}

TEST_P(CompletionLevelsTest, MatchCompleteTaggedSend) {
    Pair p = make_pair();
    uint64_t out = 0x600D, in = 0;
    int s = 0, r = 0;
    iovec iov{&out, 8};
    fi_msg_tagged m{&iov, nullptr, 1, p.a2b, 77, 0, &s, 0};
    ASSERT_OK(fi_tsendmsg(p.a->ep(), &m, FI_COMPLETION | FI_MATCH_COMPLETE));
    expect_quiet(p.a->tx(), "FI_MATCH_COMPLETE tagged send without a receive");
    ASSERT_OK(fi_trecv(p.b->ep(), &in, 8, nullptr, FI_ADDR_UNSPEC, 77, 0, &r));
    wait_comp(p.a->tx(), &s, "match-complete tagged send");
    wait_comp(p.b->rx(), &r, "tagged receive");
    EXPECT_EQ(out, in);
}

TEST_P(CompletionLevelsTest, DeliveryCompleteDataVisibleAtSendCompletion) {
    Pair p = make_pair();
    for (size_t len : {size_t{100}, kEagerMax, kRdzvSize}) {
        SCOPED_TRACE(len);
        std::vector<uint8_t> out = pattern(len, 12), in(len, 0);
        int s = 0, r = 0;
        ASSERT_OK(fi_recv(p.b->ep(), in.data(), len, nullptr, FI_ADDR_UNSPEC, &r));
        ASSERT_OK(sendmsg(p, out.data(), len, &s, FI_COMPLETION | FI_DELIVERY_COMPLETE));
        wait_comp(p.a->tx(), &s, "delivery-complete send");
        EXPECT_EQ(SIZE_MAX, mismatch(in.data(), len, 12))
            << "data not visible at the target when the send completed";
        wait_comp(p.b->rx(), &r, "receive");
    }
}

TEST_P(CompletionLevelsTest, InjectAndTransmitCompleteLevelsAccepted) {
    Pair p = make_pair();
    for (uint64_t level : {FI_INJECT_COMPLETE, FI_TRANSMIT_COMPLETE}) {
        std::vector<uint8_t> out = pattern(1000, 3), in(1000);
        int s = 0, r = 0;
        ASSERT_OK(fi_recv(p.b->ep(), in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, &r));
        ASSERT_OK(sendmsg(p, out.data(), out.size(), &s, FI_COMPLETION | level));
        wait_comp(p.a->tx(), &s, "send");
        if (level == FI_INJECT_COMPLETE) std::fill(out.begin(), out.end(), 0);
        wait_comp(p.b->rx(), &r, "receive");
        EXPECT_EQ(SIZE_MAX, mismatch(in.data(), in.size(), 3));
    }
}

CXIT_INSTANTIATE_TRANSPORTS(CompletionLevelsTest);

}  // namespace

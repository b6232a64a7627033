// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Tagged messaging (spec §5.4, §5.5): APIs and completion fields, tag and
// ignore-mask matching over 48 bits, posted-order and arrival-order
// matching, tagged/untagged separation, rendezvous, FI_DIRECTED_RECV.
#include <cstring>

#include "fixture.hpp"

using namespace cxit;

namespace {

class TaggedTest : public TransportTest {
  protected:
    void trecv(Endpoint &e, void *buf, size_t len, uint64_t tag, uint64_t ignore, void *ctx,
               fi_addr_t src = FI_ADDR_UNSPEC) {
        post([&] { return fi_trecv(e.ep(), buf, len, nullptr, src, tag, ignore, ctx); },
             "fi_trecv");
    }
    void tsend(Pair &p, const void *buf, size_t len, uint64_t tag, void *ctx) {
        post([&] { return fi_tsend(p.a->ep(), buf, len, nullptr, p.a2b, tag, ctx); }, "fi_tsend");
    }
};

TEST_P(TaggedTest, CompletionFieldsCarryTheSenderTag) {
    Pair p = make_pair();
    char out[16] = "tagged", in[16] = {};
    int sctx = 0, rctx = 0;
    trecv(*p.b, in, sizeof(in), 0xBEEF, 0, &rctx);
    tsend(p, out, 7, 0xBEEF, &sctx);
    Comp r = wait_comp(p.b->rx(), &rctx, "trecv");
    Comp s = wait_comp(p.a->tx(), &sctx, "tsend");
    EXPECT_EQ(FI_TAGGED | FI_RECV, r.e.flags);
    EXPECT_EQ(0xBEEFu, r.e.tag);
    EXPECT_EQ(7u, r.e.len);
    EXPECT_EQ(nullptr, r.e.buf);
    EXPECT_EQ(FI_TAGGED | FI_SEND, s.e.flags);
    EXPECT_STREQ("tagged", in);
}

TEST_P(TaggedTest, DataVariantsDeliverRemoteCqData) {
    Pair p = make_pair();
    uint64_t v1 = 1, v2 = 2, in1 = 0, in2 = 0;
    int sctx = 0, r1 = 0, r2 = 0;
    trecv(*p.b, &in1, 8, 5, 0, &r1);
    trecv(*p.b, &in2, 8, 6, 0, &r2);
    ASSERT_OK(fi_tsenddata(p.a->ep(), &v1, 8, nullptr, 0xAA, p.a2b, 5, &sctx));
    ASSERT_OK(fi_tinjectdata(p.a->ep(), &v2, 8, 0xBB, p.a2b, 6));
    Comp c1 = wait_comp(p.b->rx(), &r1, "tsenddata receive");
    Comp c2 = wait_comp(p.b->rx(), &r2, "tinjectdata receive");
    wait_comp(p.a->tx(), &sctx, "tsenddata");
    EXPECT_EQ(FI_TAGGED | FI_RECV | FI_REMOTE_CQ_DATA, c1.e.flags);
    EXPECT_EQ(0xAAu, c1.e.data);
    EXPECT_EQ(5u, c1.e.tag);
    EXPECT_EQ(FI_TAGGED | FI_RECV | FI_REMOTE_CQ_DATA, c2.e.flags);
    EXPECT_EQ(0xBBu, c2.e.data);
    EXPECT_EQ(1u, in1);
    EXPECT_EQ(2u, in2);
    expect_quiet(p.a->tx(), "fi_tinjectdata");
}

TEST_P(TaggedTest, VectorAndMsgApis) {
    Pair p = make_pair();
    std::vector<uint8_t> out = pattern(500, 4), in1(500), in2(500);
    int s1 = 0, s2 = 0, r1 = 0, r2 = 0, r3 = 0;
    iovec siov{out.data(), out.size()}, riov1{in1.data(), 500}, riov2{in2.data(), 500};
    ASSERT_OK(fi_trecvv(p.b->ep(), &riov1, nullptr, 1, FI_ADDR_UNSPEC, 10, 0, &r1));
    ASSERT_OK(fi_tsendv(p.a->ep(), &siov, nullptr, 1, p.a2b, 10, &s1));
    fi_msg_tagged rmsg{&riov2, nullptr, 1, FI_ADDR_UNSPEC, 11, 0, &r2, 0};
    fi_msg_tagged smsg{&siov, nullptr, 1, p.a2b, 11, 0, &s2, 0x5150};
    ASSERT_OK(fi_trecvmsg(p.b->ep(), &rmsg, FI_COMPLETION));
    ASSERT_OK(fi_tsendmsg(p.a->ep(), &smsg, FI_COMPLETION | FI_REMOTE_CQ_DATA));
    uint32_t small = 0xABCD, got = 0;
    trecv(*p.b, &got, 4, 12, 0, &r3);
    ASSERT_OK(fi_tinject(p.a->ep(), &small, 4, p.a2b, 12));
    EXPECT_EQ(10u, wait_comp(p.b->rx(), &r1, "trecvv").e.tag);
    Comp m = wait_comp(p.b->rx(), &r2, "trecvmsg");
    EXPECT_EQ(11u, m.e.tag);
    EXPECT_EQ(0x5150u, m.e.data);
    wait_comp(p.b->rx(), &r3, "tinject receive");
    wait_comp(p.a->tx(), &s1, "tsendv");
    wait_comp(p.a->tx(), &s2, "tsendmsg");
    EXPECT_EQ(SIZE_MAX, mismatch(in1.data(), 500, 4));
    EXPECT_EQ(SIZE_MAX, mismatch(in2.data(), 500, 4));
    EXPECT_EQ(0xABCDu, got);
}

TEST_P(TaggedTest, IgnoreMaskSelectsMatchingBits) {
    Pair p = make_pair();
    char in_no[8] = {}, in_yes[8] = {};
    int rn = 0, ry = 0;
    trecv(*p.b, in_no, 8, 0x1300, 0xFF, &rn);
    trecv(*p.b, in_yes, 8, 0x1200, 0xFF, &ry);
    ASSERT_OK(fi_tinject(p.a->ep(), "mask", 5, p.a2b, 0x12AB));
    Comp c = wait_comp(p.b->rx(), &ry, "masked receive");
    EXPECT_EQ(0x12ABu, c.e.tag) << "the completion reports the sender's tag";
    EXPECT_STREQ("mask", in_yes);
    EXPECT_STREQ("", in_no);
    ASSERT_OK(fi_cancel(&p.b->ep()->fid, &rn));
    wait_err(p.b->rx(), &rn, "cancel of non-matching receive");
}

TEST_P(TaggedTest, FullFortyEightBitTags) {
    Pair p = make_pair();
    for (uint64_t tag :
         {uint64_t{0}, kMaxTag, uint64_t{0x800000000001}, uint64_t{0x5A5A5A5A5A5A}}) {
        uint64_t in = 0, out = tag ^ 0x1234;
        int rctx = 0;
        trecv(*p.b, &in, 8, tag, 0, &rctx);
        ASSERT_OK(fi_tinject(p.a->ep(), &out, 8, p.a2b, tag));
        Comp c = wait_comp(p.b->rx(), &rctx, "receive");
        EXPECT_EQ(tag, c.e.tag);
        EXPECT_EQ(out, in);
    }
}

TEST_P(TaggedTest, PostedReceivesMatchInPostOrder) {
    Pair p = make_pair();
    uint32_t in1 = 0, in2 = 0, v1 = 1, v2 = 2;
    int r1 = 0, r2 = 0;
    trecv(*p.b, &in1, 4, 7, 0, &r1);
    trecv(*p.b, &in2, 4, 7, 0, &r2);
    ASSERT_OK(fi_tinject(p.a->ep(), &v1, 4, p.a2b, 7));
    wait_comp(p.b->rx(), &r1, "first posted receive");
    EXPECT_EQ(1u, in1);
    ASSERT_OK(fi_tinject(p.a->ep(), &v2, 4, p.a2b, 7));
    wait_comp(p.b->rx(), &r2, "second posted receive");
    EXPECT_EQ(2u, in2);
}

TEST_P(TaggedTest, UnexpectedMatchInArrivalOrder) {
    Pair p = make_pair();
    const size_t lens[] = {10, kEagerMax, kRdzvSize, 0, 300};
    constexpr size_t kN = sizeof(lens) / sizeof(lens[0]);
    std::vector<std::vector<uint8_t>> out(kN), in(kN, std::vector<uint8_t>(kRdzvSize));
    int sctx[kN], rctx[kN];
    for (size_t i = 0; i < kN; i++) {
        out[i] = pattern(lens[i], static_cast<uint32_t>(i));
        tsend(p, out[i].data(), lens[i], 99, &sctx[i]);
    }
    wait_unexpected(*p.b, kN);
    for (size_t i = 0; i < kN; i++)
        trecv(*p.b, in[i].data(), kRdzvSize, 99, 0, &rctx[i]);
    for (size_t i = 0; i < kN; i++) {
        Comp c = wait_comp(p.b->rx(), &rctx[i], "receive " + std::to_string(i));
        EXPECT_EQ(lens[i], c.e.len) << "receive " << i << " got a later message";
        EXPECT_EQ(SIZE_MAX, mismatch(in[i].data(), lens[i], static_cast<uint32_t>(i)));
    }
    for (size_t i = 0; i < kN; i++)
        wait_comp(p.a->tx(), &sctx[i], "send");
}

TEST_P(TaggedTest, UnexpectedMatchedByTag) {
    Pair p = make_pair();
    constexpr int kN = 50;
    std::vector<uint64_t> in(kN, 0);
    std::vector<int> rctx(kN);
    for (uint64_t t = 0; t < kN; t++) {
        uint64_t v = t * 1000;
        post([&] { return fi_tinject(p.a->ep(), &v, 8, p.a2b, 0x100 + t); }, "fi_tinject");
    }
    wait_unexpected(*p.b, kN);
    for (int t = kN - 1; t >= 0; t--)
        trecv(*p.b, &in[t], 8, 0x100 + t, 0, &rctx[t]);
    for (int t = 0; t < kN; t++) {
        Comp c = wait_comp(p.b->rx(), &rctx[t], "tagged receive");
        EXPECT_EQ(0x100u + t, c.e.tag);
        EXPECT_EQ(uint64_t(t) * 1000, in[t]);
    }
}

TEST_P(TaggedTest, TaggedAndUntaggedDoNotCrossMatch) {
    Pair p = make_pair();
    char tin[8] = {}, uin[8] = {};
    int rt = 0, ru = 0;
    trecv(*p.b, tin, 8, 0, kMaxTag, &rt);  // matches any tag
    ASSERT_OK(fi_recv(p.b->ep(), uin, 8, nullptr, FI_ADDR_UNSPEC, &ru));
    ASSERT_OK(fi_inject(p.a->ep(), "untag", 6, p.a2b));
    Comp u = wait_comp(p.b->rx(), &ru, "untagged receive");
    EXPECT_EQ(FI_MSG | FI_RECV, u.e.flags);
    EXPECT_STREQ("untag", uin);
    EXPECT_STREQ("", tin) << "an untagged send matched a tagged receive";
    ASSERT_OK(fi_tinject(p.a->ep(), "tag", 4, p.a2b, 3));
    Comp t = wait_comp(p.b->rx(), &rt, "tagged receive");
    EXPECT_EQ(FI_TAGGED | FI_RECV, t.e.flags);
    EXPECT_STREQ("tag", tin);

    // And the other way round, unexpected: a tagged message is not consumed
    // by an untagged receive.
    char uin2[8] = {}, tin2[8] = {};
    int ru2 = 0, rt2 = 0;
    ASSERT_OK(fi_tinject(p.a->ep(), "T2", 3, p.a2b, 4));
    ASSERT_OK(fi_inject(p.a->ep(), "U2", 3, p.a2b));
    wait_unexpected(*p.b, 2);
    ASSERT_OK(fi_recv(p.b->ep(), uin2, 8, nullptr, FI_ADDR_UNSPEC, &ru2));
    wait_comp(p.b->rx(), &ru2, "untagged receive of unexpected");
    EXPECT_STREQ("U2", uin2);
    trecv(*p.b, tin2, 8, 4, 0, &rt2);
    wait_comp(p.b->rx(), &rt2, "tagged receive of unexpected");
    EXPECT_STREQ("T2", tin2);
}

TEST_P(TaggedTest, RendezvousExpectedAndUnexpected) {
    Pair p = make_pair();
    for (size_t len : {kRdzvSize, size_t{1} << 20, (size_t{4} << 20) - 3}) {
        for (bool unexpected : {false, true}) {
            SCOPED_TRACE(std::to_string(len) + (unexpected ? " unexpected" : " expected"));
            std::vector<uint8_t> out = pattern(len, 77), in(len);
            int sctx = 0, rctx = 0;
            if (!unexpected) trecv(*p.b, in.data(), len, 0x42, 0, &rctx);
            tsend(p, out.data(), len, 0x42, &sctx);
            if (unexpected) {
                wait_unexpected(*p.b, 1);
                trecv(*p.b, in.data(), len, 0x42, 0, &rctx);
            }
            EXPECT_EQ(len, wait_comp(p.b->rx(), &rctx, "rendezvous receive").e.len);
            wait_comp(p.a->tx(), &sctx, "rendezvous send");
            EXPECT_EQ(SIZE_MAX, mismatch(in.data(), len, 77));
        }
    }
}

TEST_P(TaggedTest, TruncationKeepsTagAndData) {
    Pair p = make_pair();
    for (size_t len : {size_t{100}, kRdzvSize}) {
        SCOPED_TRACE(len);
        std::vector<uint8_t> out = pattern(len, 21), in(11, 0xEE);
        int sctx = 0, rctx = 0;
        trecv(*p.b, in.data(), 10, 0x77, 0, &rctx);
        post(
            [&] {
                return fi_tsenddata(p.a->ep(), out.data(), len, nullptr, 0x55, p.a2b, 0x77, &sctx);
            },
            "fi_tsenddata");
        ErrComp e = wait_err(p.b->rx(), &rctx, "truncated tagged receive");
        wait_comp(p.a->tx(), &sctx, "send of the truncated message");
        EXPECT_EQ(FI_ETRUNC, e.e.err);
        EXPECT_EQ(10u, e.e.len);
        EXPECT_EQ(len - 10, e.e.olen);
        EXPECT_EQ(0x77u, e.e.tag);
        EXPECT_EQ(0x55u, e.e.data);
        EXPECT_EQ(FI_TAGGED | FI_RECV | FI_REMOTE_CQ_DATA, e.e.flags);
        EXPECT_EQ(SIZE_MAX, mismatch(in.data(), 10, 21));
        EXPECT_EQ(0xEE, in[10]) << "wrote past the receive buffer";
    }
}

TEST_P(TaggedTest, UnexpectedRendezvousSendCompletesOnlyAfterMatch) {
    Pair p = make_pair();
    std::vector<uint8_t> out = pattern(kRdzvSize, 6), in(kRdzvSize);
    int sctx = 0, rctx = 0;
    tsend(p, out.data(), out.size(), 8, &sctx);
    expect_quiet(p.a->tx(), "unexpected rendezvous send before any receive");
    trecv(*p.b, in.data(), in.size(), 8, 0, &rctx);
    wait_comp(p.b->rx(), &rctx, "receive");
    wait_comp(p.a->tx(), &sctx, "send after the match");
    EXPECT_EQ(SIZE_MAX, mismatch(in.data(), in.size(), 6));
}

TEST_P(TaggedTest, DirectedTaggedReceive) {
    EpOptions ob;
    ob.caps = FI_TAGGED | FI_DIRECTED_RECV;
    Pair p = make_pair({}, ob);
    fi_addr_t fake = p.b->insert(encode_addr(0xABCDE, 303));
    char wrong[8] = {}, right[8] = {};
    int rw = 0, rr = 0;
    trecv(*p.b, wrong, 8, 1, 0, &rw, fake);
    trecv(*p.b, right, 8, 1, 0, &rr, p.b2a);
    ASSERT_OK(fi_tinject(p.a->ep(), "dir", 4, p.a2b, 1));
    wait_comp(p.b->rx(), &rr, "directed receive");
    EXPECT_STREQ("dir", right);
    EXPECT_STREQ("", wrong);
    ASSERT_OK(fi_cancel(&p.b->ep()->fid, &rw));
    wait_err(p.b->rx(), &rw, "cancel");
}

// Open MPI's ranks finish their wire-up at different times: a message may arrive before
// the receiver has its sender in the AV. Once the address is inserted, a receive
// directed at it must take that message (found by the soak test: MPI across hosts hung).
TEST_P(TaggedTest, MessageFromAPeerNotYetInTheAvMatchesADirectedReceiveLater) {
    EpOptions ob;
    ob.caps = FI_TAGGED | FI_DIRECTED_RECV | FI_SOURCE;
    Pair p = make_pair({}, ob);
    ASSERT_OK(fi_av_remove(p.b->av(), &p.b2a, 1, 0));
    ASSERT_OK(fi_tinject(p.a->ep(), "early", 6, p.a2b, 9));
    char in[8] = {};
    for (int i = 0; i < 20000; i++)  // progress b: the message arrives, unexpected
        ASSERT_EQ(0u, p.b->rx().poll());
    fi_addr_t a = p.b->insert(p.a->name());
    int rctx = 0;
    trecv(*p.b, in, sizeof(in), 9, 0, &rctx, a);
    Comp r = wait_comp(p.b->rx(), &rctx, "directed receive of an early message");
    EXPECT_STREQ("early", in);
    EXPECT_EQ(9u, r.e.tag);
    EXPECT_EQ(a, r.src);
}

CXIT_INSTANTIATE_TRANSPORTS(TaggedTest);

}  // namespace

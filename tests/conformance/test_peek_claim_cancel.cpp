// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// FI_PEEK / FI_CLAIM / FI_DISCARD on tagged receives and fi_cancel (spec §5.8).
#include <cstring>

#include "fixture.hpp"

using namespace cxit;

namespace {

class PeekClaimCancelTest : public TransportTest {
  protected:
    void SetUp() override { p_ = make_pair(); }

    long trecvmsg(void *buf, size_t len, uint64_t tag, void *ctx, uint64_t flags) {
        iovec iov{buf, len};
        fi_msg_tagged m{&iov, nullptr, buf ? 1u : 0u, FI_ADDR_UNSPEC, tag, 0, ctx, 0};
        return fi_trecvmsg(p_.b->ep(), &m, flags);
    }
    // Posts a peek; returns the completion, or nullopt on FI_ENOMSG.
    std::optional<Comp> peek_once(uint64_t tag, void *ctx, uint64_t extra = 0) {
        post([&] { return trecvmsg(nullptr, 0, tag, ctx, FI_PEEK | extra); }, "fi_trecvmsg(PEEK)");
        std::optional<Comp> c;
        std::optional<ErrComp> e;
        wait_until(
            [&] {
                c = p_.b->rx().take(ctx);
                if (!c) e = p_.b->rx().take_err(ctx);
                return c || e;
            },
            "peek completion");
        if (e && e->e.err != FI_ENOMSG)
            CXIT_FAIL("peek failed with err " + std::to_string(e->e.err));
        return c;
    }
    // Peeks until the message has arrived at b.
    Comp peek_found(uint64_t tag, void *ctx, uint64_t extra = 0) {
        std::optional<Comp> c;
        wait_until([&] { return (c = peek_once(tag, ctx, extra)).has_value(); }, "peek hit");
        return *c;
    }
    void tsenddata(const void *buf, size_t len, uint64_t tag, uint64_t data, void *ctx) {
        post([&] { return fi_tsenddata(p_.a->ep(), buf, len, nullptr, data, p_.a2b, tag, ctx); },
             "fi_tsenddata");
    }
    Pair p_;
};

TEST_P(PeekClaimCancelTest, PeekMissReportsNoMessage) {
    int ctx = 0;
    post([&] { return trecvmsg(nullptr, 0, 5, &ctx, FI_PEEK); }, "fi_trecvmsg(PEEK)");
    ErrComp e = wait_err(p_.b->rx(), &ctx, "peek without a message");
    EXPECT_EQ(FI_ENOMSG, e.e.err);
    EXPECT_EQ(nullptr, e.e.buf);
    EXPECT_EQ(0u, e.e.olen);
    EXPECT_EQ(5u, e.e.tag) << "the requested tag";
}

TEST_P(PeekClaimCancelTest, PeekHitDoesNotConsume) {
    std::vector<uint8_t> out = pattern(300, 1), in(300);
    int sctx = 0, pctx = 0, rctx = 0;
    tsenddata(out.data(), out.size(), 7, 0xDA7A, &sctx);
    Comp c = peek_found(7, &pctx);
    EXPECT_EQ(300u, c.e.len);
    EXPECT_EQ(7u, c.e.tag);
    EXPECT_EQ(0xDA7Au, c.e.data);
    EXPECT_EQ(nullptr, c.e.buf);
    EXPECT_EQ(FI_TAGGED | FI_RECV | FI_REMOTE_CQ_DATA,
              c.e.flags & (FI_TAGGED | FI_RECV | FI_REMOTE_CQ_DATA));
    EXPECT_TRUE(peek_once(7, &pctx).has_value()) << "a peek leaves the message queued";
    post([&] { return fi_trecv(p_.b->ep(), in.data(), 300, nullptr, FI_ADDR_UNSPEC, 7, 0, &rctx); },
         "fi_trecv");
    wait_comp(p_.b->rx(), &rctx, "receive after peek");
    wait_comp(p_.a->tx(), &sctx, "send");
    EXPECT_EQ(SIZE_MAX, mismatch(in.data(), 300, 1));
    EXPECT_FALSE(peek_once(7, &pctx).has_value()) << "consumed by the receive";
}

// A peek reads no buffer: its iov is ignored, whatever it holds (upstream's code).
TEST_P(PeekClaimCancelTest, PeekIgnoresItsIov) {
    int ctx = 0;
    uint8_t a[8], b[8];
    iovec two[2] = {{a, 8}, {b, 8}};
    fi_msg_tagged m{two, nullptr, 2, FI_ADDR_UNSPEC, 5, 0, &ctx, 0};
    post([&] { return fi_trecvmsg(p_.b->ep(), &m, FI_PEEK); }, "peek with two iovs");
    EXPECT_EQ(FI_ENOMSG, wait_err(p_.b->rx(), &ctx, "peek miss").e.err);
    fi_msg_tagged none{nullptr, nullptr, 3, FI_ADDR_UNSPEC, 5, 0, &ctx, 0};
    post([&] { return fi_trecvmsg(p_.b->ep(), &none, FI_PEEK); }, "peek with a NULL iov");
    EXPECT_EQ(FI_ENOMSG, wait_err(p_.b->rx(), &ctx, "peek miss").e.err);
    EXPECT_RC(-FI_EINVAL, fi_trecvmsg(p_.b->ep(), &m, 0)) << "a receive still takes one iov";
}

TEST_P(PeekClaimCancelTest, PeekReportsOldestOfSameTag) {
    char a[10] = "first", b[20] = "second";
    ASSERT_OK(fi_tinject(p_.a->ep(), a, sizeof(a), p_.a2b, 4));
    ASSERT_OK(fi_tinject(p_.a->ep(), b, sizeof(b), p_.a2b, 4));
    int pctx = 0;
    peek_found(4, &pctx);
    wait_unexpected(*p_.b, 2);
    EXPECT_EQ(sizeof(a), peek_found(4, &pctx).e.len) << "FIFO among unexpected messages";
}

TEST_P(PeekClaimCancelTest, ClaimedMessageIsHiddenUntilClaimReceive) {
    for (size_t len : {size_t{64}, kRdzvSize}) {
        SCOPED_TRACE(len);
        std::vector<uint8_t> claimed = pattern(len, 10), other = pattern(len, 20);
        std::vector<uint8_t> in_claim(len), in_other(len);
        int s1 = 0, s2 = 0, cctx = 0, pctx = 0, rctx = 0;
        tsenddata(claimed.data(), len, 3, 1, &s1);
        Comp c = peek_found(3, &cctx, FI_CLAIM);
        EXPECT_EQ(len, c.e.len);
        EXPECT_FALSE(peek_once(3, &pctx).has_value()) << "claimed message visible to peek";
        post(
            [&] {
                return fi_trecv(p_.b->ep(), in_other.data(), len, nullptr, FI_ADDR_UNSPEC, 3, 0,
                                &rctx);
            },
            "fi_trecv");
        expect_quiet(p_.b->rx(), "a receive matched the claimed message");
        tsenddata(other.data(), len, 3, 2, &s2);
        Comp r = wait_comp(p_.b->rx(), &rctx, "receive of the second message");
        EXPECT_EQ(2u, r.e.data);
        EXPECT_EQ(SIZE_MAX, mismatch(in_other.data(), len, 20));
        ASSERT_OK(trecvmsg(in_claim.data(), len, 3, &cctx, FI_CLAIM));
        Comp k = wait_comp(p_.b->rx(), &cctx, "FI_CLAIM receive");
        EXPECT_EQ(1u, k.e.data);
        EXPECT_EQ(len, k.e.len);
        EXPECT_EQ(SIZE_MAX, mismatch(in_claim.data(), len, 10));
        wait_comp(p_.a->tx(), &s1, "claimed send");
        wait_comp(p_.a->tx(), &s2, "second send");
    }
}

TEST_P(PeekClaimCancelTest, ClaimNeedsAContext_EINVAL) {
    EXPECT_RC(-FI_EINVAL, trecvmsg(nullptr, 0, 1, nullptr, FI_PEEK | FI_CLAIM));
    char buf[8];
    int never = 0;
    EXPECT_RC(-FI_EINVAL, trecvmsg(buf, sizeof(buf), 1, &never, FI_CLAIM))
        << "FI_CLAIM with a context that claimed nothing";
}

// FI_PEEK | FI_DISCARD: one completion, with the message's length and tag, and the
// message is gone; the sender completes normally, eager or rendezvous alike.
TEST_P(PeekClaimCancelTest, PeekDiscardDropsTheMessage) {
    for (size_t len : {size_t(40), kRdzvSize * 2}) {
        std::vector<uint8_t> out = pattern(len, 2);
        int sctx = 0, pctx = 0;
        tsenddata(out.data(), out.size(), 11, 0, &sctx);
        Comp c = peek_found(11, &pctx, FI_DISCARD);
        EXPECT_EQ(len, c.e.len);
        EXPECT_EQ(11u, c.e.tag);
        wait_comp(p_.a->tx(), &sctx, "send of a discarded message");
        EXPECT_FALSE(peek_once(11, &pctx).has_value()) << "discarded, length " << len;
        expect_quiet(p_.b->rx(), "nothing more for the discarded message");
    }
}

// FI_PEEK | FI_CLAIM, then FI_CLAIM | FI_DISCARD: the claimed message completes unread.
TEST_P(PeekClaimCancelTest, ClaimDiscardDropsTheClaimedMessage) {
    std::vector<uint8_t> out = pattern(500, 3);
    int sctx = 0, pctx = 0;
    tsenddata(out.data(), out.size(), 12, 0, &sctx);
    peek_found(12, &pctx, FI_CLAIM);
    post([&] { return trecvmsg(nullptr, 0, 12, &pctx, FI_CLAIM | FI_DISCARD); },
         "fi_trecvmsg(CLAIM|DISCARD)");
    Comp c = wait_comp(p_.b->rx(), &pctx, "claim discard");
    EXPECT_EQ(500u, c.e.len);
    wait_comp(p_.a->tx(), &sctx, "send");
    EXPECT_FALSE(peek_once(12, &pctx).has_value());
}

TEST_P(PeekClaimCancelTest, DiscardAloneIsInvalid) {
    int ctx = 0;
    EXPECT_RC(-FI_EINVAL, trecvmsg(nullptr, 0, 1, &ctx, FI_DISCARD));
}

TEST_P(PeekClaimCancelTest, CancelledReceiveIsNotUsed) {
    char cancelled[16] = {}, live[16] = {};
    int c1 = 0, c2 = 0;
    ASSERT_OK(fi_recv(p_.b->ep(), cancelled, sizeof(cancelled), nullptr, FI_ADDR_UNSPEC, &c1));
    ASSERT_OK(fi_cancel(&p_.b->ep()->fid, &c1));
    ErrComp e = wait_err(p_.b->rx(), &c1, "cancelled receive");
    EXPECT_EQ(FI_ECANCELED, e.e.err);
    EXPECT_EQ(0, e.e.prov_errno);
    EXPECT_EQ(&c1, e.e.op_context);
    EXPECT_EQ(FI_MSG | FI_RECV, e.e.flags & (FI_MSG | FI_RECV));
    ASSERT_OK(fi_recv(p_.b->ep(), live, sizeof(live), nullptr, FI_ADDR_UNSPEC, &c2));
    ASSERT_OK(fi_inject(p_.a->ep(), "live", 5, p_.a2b));
    wait_comp(p_.b->rx(), &c2, "receive after cancel");
    EXPECT_STREQ("live", live);
    EXPECT_STREQ("", cancelled);
}

TEST_P(PeekClaimCancelTest, CancelOneOfSeveralTaggedReceives) {
    uint32_t in[3] = {}, v1 = 1, v2 = 2;
    int c[3] = {};
    for (int i = 0; i < 3; i++)
        ASSERT_OK(fi_trecv(p_.b->ep(), &in[i], 4, nullptr, FI_ADDR_UNSPEC, 6, 0, &c[i]));
    ASSERT_OK(fi_cancel(&p_.b->ep()->fid, &c[1]));
    ErrComp e = wait_err(p_.b->rx(), &c[1], "cancelled tagged receive");
    EXPECT_EQ(FI_ECANCELED, e.e.err);
    EXPECT_EQ(FI_TAGGED | FI_RECV, e.e.flags & (FI_TAGGED | FI_RECV));
    ASSERT_OK(fi_tinject(p_.a->ep(), &v1, 4, p_.a2b, 6));
    ASSERT_OK(fi_tinject(p_.a->ep(), &v2, 4, p_.a2b, 6));
    wait_comp(p_.b->rx(), &c[0], "first receive");
    wait_comp(p_.b->rx(), &c[2], "third receive");
    EXPECT_EQ(1u, in[0]);
    EXPECT_EQ(0u, in[1]);
    EXPECT_EQ(2u, in[2]);
}

TEST_P(PeekClaimCancelTest, CancelCompletedOrCancelledReceive_ENOENT) {
    char buf[8];
    int done = 0, gone = 0;
    ASSERT_OK(fi_recv(p_.b->ep(), buf, sizeof(buf), nullptr, FI_ADDR_UNSPEC, &done));
    ASSERT_OK(fi_inject(p_.a->ep(), "x", 2, p_.a2b));
    wait_comp(p_.b->rx(), &done, "receive");
    EXPECT_RC(-FI_ENOENT, fi_cancel(&p_.b->ep()->fid, &done)) << "already completed";
    ASSERT_OK(fi_recv(p_.b->ep(), buf, sizeof(buf), nullptr, FI_ADDR_UNSPEC, &gone));
    ASSERT_OK(fi_cancel(&p_.b->ep()->fid, &gone));
    wait_err(p_.b->rx(), &gone, "cancelled receive");
    EXPECT_RC(-FI_ENOENT, fi_cancel(&p_.b->ep()->fid, &gone)) << "already cancelled";
}

TEST_P(PeekClaimCancelTest, SendsCannotBeCancelled) {
    std::vector<uint8_t> out = pattern(kRdzvSize, 2), in(kRdzvSize);
    int sctx = 0, rctx = 0;
    post([&] { return fi_send(p_.a->ep(), out.data(), out.size(), nullptr, p_.a2b, &sctx); },
         "fi_send");
    wait_unexpected(*p_.b, 1);
    EXPECT_RC(-FI_ENOENT, fi_cancel(&p_.a->ep()->fid, &sctx));
    post([&] { return fi_recv(p_.b->ep(), in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, &rctx); },
         "fi_recv");
    wait_comp(p_.b->rx(), &rctx, "receive");
    wait_comp(p_.a->tx(), &sctx, "the send was not cancelled");
    EXPECT_EQ(SIZE_MAX, mismatch(in.data(), in.size(), 2));
}

CXIT_INSTANTIATE_TRANSPORTS(PeekClaimCancelTest);

}  // namespace

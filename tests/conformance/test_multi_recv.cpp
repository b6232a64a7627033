// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// FI_MULTI_RECV (spec §5.7): one posted buffer absorbs many messages packed
// back to back; each message has its own completion pointing into the
// buffer; exactly one completion (the last) carries FI_MULTI_RECV; the buffer
// is released when less than FI_OPT_MIN_MULTI_RECV bytes remain.
#include <algorithm>
#include <cstring>
#include <vector>

#include "fixture.hpp"

using namespace cxit;

namespace {

class MultiRecvTest : public TransportTest {
  protected:
    void SetUp() override { p_ = make_pair(); }

    void set_min(Endpoint &e, size_t v) {
        CXIT_CHECK(fi_setopt(&e.ep()->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v, sizeof(v)));
    }
    void post_multi(Endpoint &e, void *buf, size_t len, void *ctx, uint64_t flags = FI_COMPLETION) {
        iovec iov{buf, len};
        fi_msg msg{&iov, nullptr, 1, FI_ADDR_UNSPEC, ctx, 0};
        post([&] { return fi_recvmsg(e.ep(), &msg, flags | FI_MULTI_RECV); }, "fi_recvmsg");
    }
    // Sends messages of the given lengths (pattern seed = index) a -> b.
    std::vector<std::vector<uint8_t>> send_all(const std::vector<size_t> &lens,
                                               uint32_t seed0 = 0) {
        std::vector<std::vector<uint8_t>> out;
        std::vector<int> ctx(lens.size());
        for (size_t i = 0; i < lens.size(); i++) {
            out.push_back(pattern(lens[i], seed0 + static_cast<uint32_t>(i)));
            void *b = out.back().data();
            post([&] { return fi_send(p_.a->ep(), b, lens[i], nullptr, p_.a2b, &ctx[i]); },
                 "fi_send");
        }
        for (size_t i = 0; i < lens.size(); i++)
            wait_comp(p_.a->tx(), &ctx[i], "send");
        return out;
    }
    // Collects the completions of the multi-receive `ctx` and checks that the messages
    // are packed in send order. Completions may arrive in another order (a rendezvous
    // message completes when its pull ends), but FI_MULTI_RECV, when `released`, is on
    // the last completion read.
    void expect_packed(const std::vector<size_t> &lens, uint8_t *base, void *ctx, bool released,
                       uint32_t seed0 = 0) {
        struct Slot {
            const uint8_t *pos;
            size_t index;
            bool seen;
        };
        std::vector<Slot> slots;  // where each message must land, in send order
        size_t off = 0;
        for (size_t i = 0; i < lens.size(); i++) {
            slots.push_back({base + off, i, false});
            off += lens[i];
        }
        for (size_t n = 0; n < lens.size(); n++) {
            Comp c = wait_comp(p_.b->rx(), ctx, "multi-recv completion " + std::to_string(n));
            const bool last = released && n + 1 == lens.size();
            EXPECT_EQ(FI_MSG | FI_RECV | (last ? FI_MULTI_RECV : 0), c.e.flags)
                << "completion " << n;
            auto it = std::find_if(slots.begin(), slots.end(), [&](const Slot &sl) {
                return !sl.seen && sl.pos == c.e.buf && lens[sl.index] == c.e.len;
            });
            if (it == slots.end()) {
                ADD_FAILURE() << "completion " << n << " (len " << c.e.len
                              << ") is not a message of the packed layout";
                continue;
            }
            it->seen = true;
            EXPECT_EQ(SIZE_MAX,
                      mismatch(c.e.buf, c.e.len, seed0 + static_cast<uint32_t>(it->index)))
                << "message " << it->index;
        }
    }
    Pair p_;
};

TEST_P(MultiRecvTest, PacksMessagesAndReleasesWhenFull) {
    const std::vector<size_t> lens(128, 200);
    std::vector<uint8_t> buf(128 * 200);
    int ctx = 0;
    post_multi(*p_.b, buf.data(), buf.size(), &ctx);
    send_all(lens);
    expect_packed(lens, buf.data(), &ctx, true);
    expect_quiet(p_.b->rx(), "after the buffer was released");
}

// FI_MULTI_RECV in rx_attr->op_flags makes a plain fi_recv a multi-receive (fabtests'
// fi_multi_recv relies on it).
TEST_P(MultiRecvTest, RxOpFlagsMakeFiRecvAMultiReceive) {
    EpOptions ob;
    ob.rx_op_flags = FI_MULTI_RECV | FI_COMPLETION;
    p_ = make_pair(EpOptions{}, ob);
    const std::vector<size_t> lens(8, 100);
    std::vector<uint8_t> buf(800);
    int ctx = 0;
    ASSERT_OK(fi_recv(p_.b->ep(), buf.data(), buf.size(), nullptr, FI_ADDR_UNSPEC, &ctx));
    send_all(lens);
    expect_packed(lens, buf.data(), &ctx, true);
}

// ... but not a tagged one: multi-receive is untagged only, and upstream strips the
// default flag from fi_trecv. The tagged receive takes one message, the one of its tag.
TEST_P(MultiRecvTest, RxOpFlagsLeaveFiTrecvAPlainReceive) {
    EpOptions o;
    o.caps = FI_MSG | FI_TAGGED;
    EpOptions ob = o;
    ob.rx_op_flags = FI_MULTI_RECV | FI_COMPLETION;
    p_ = make_pair(o, ob);
    std::vector<uint8_t> out = pattern(100, 3), in(800);
    int ctx = 0, sctx = 0, tctx = 0;
    ASSERT_OK(fi_trecv(p_.b->ep(), in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, 7, 0, &ctx));
    post([&] { return fi_send(p_.a->ep(), out.data(), 40, nullptr, p_.a2b, &sctx); },
         "untagged send");
    post([&] { return fi_tsend(p_.a->ep(), out.data(), 100, nullptr, p_.a2b, 7, &tctx); },
         "tagged send");
    Comp c = wait_comp(p_.b->rx(), &ctx, "tagged receive");
    EXPECT_EQ(FI_TAGGED | FI_RECV, c.e.flags) << "no FI_MULTI_RECV, no FI_MSG";
    EXPECT_EQ(100u, c.e.len);
    EXPECT_EQ(0, std::memcmp(out.data(), in.data(), 100));
    expect_quiet(p_.b->rx(), "the untagged message found no receive");
    // `out` is both sends' until they complete.
    wait_comp(p_.a->tx(), &sctx, "untagged send");
    wait_comp(p_.a->tx(), &tctx, "tagged send");
}

TEST_P(MultiRecvTest, ManyTinyMessagesWithMatchingMinimum) {
    const std::vector<size_t> lens(1024, 20);
    std::vector<uint8_t> buf(1024 * 20);
    set_min(*p_.b, 20);
    int ctx = 0;
    post_multi(*p_.b, buf.data(), buf.size(), &ctx);
    send_all(lens);
    expect_packed(lens, buf.data(), &ctx, true);
}

TEST_P(MultiRecvTest, MinimumFreeSpaceReleasesBufferEarly) {
    std::vector<uint8_t> buf(1000);
    set_min(*p_.b, 300);
    int ctx = 0, rctx = 0;
    post_multi(*p_.b, buf.data(), buf.size(), &ctx);
    std::vector<uint8_t> next(300, 0);
    post(
        [&] {
            return fi_recv(p_.b->ep(), next.data(), next.size(), nullptr, FI_ADDR_UNSPEC, &rctx);
        },
        "fi_recv");
    // 3 x 250: 250 bytes remain after the third, below the 300 minimum.
    send_all({250, 250, 250, 250});
    expect_packed({250, 250, 250}, buf.data(), &ctx, true);
    Comp c = wait_comp(p_.b->rx(), &rctx, "receive after the multi-recv was released");
    EXPECT_EQ(250u, c.e.len);
    EXPECT_EQ(SIZE_MAX, mismatch(next.data(), 250, 3));
}

TEST_P(MultiRecvTest, DefaultMinimumIs64Bytes) {
    std::vector<uint8_t> buf(1000);
    int ctx = 0, rctx = 0;
    post_multi(*p_.b, buf.data(), buf.size(), &ctx);
    std::vector<uint8_t> next(64, 0);
    post(
        [&] {
            return fi_recv(p_.b->ep(), next.data(), next.size(), nullptr, FI_ADDR_UNSPEC, &rctx);
        },
        "fi_recv");
    // 872 + 64 = 936: 64 bytes left keep the buffer; 1 more byte releases it.
    send_all({872, 64, 1, 2});
    expect_packed({872, 64, 1}, buf.data(), &ctx, true);
    EXPECT_EQ(2u, wait_comp(p_.b->rx(), &rctx, "next receive").e.len);
}

TEST_P(MultiRecvTest, LastMessageThatDoesNotFitIsTruncated) {
    std::vector<uint8_t> buf(1024);
    int ctx = 0;
    post_multi(*p_.b, buf.data(), buf.size(), &ctx);
    send_all({600, 600});
    expect_packed({600}, buf.data(), &ctx, false);
    ErrComp e = wait_err(p_.b->rx(), &ctx, "truncated multi-recv completion");
    EXPECT_EQ(FI_ETRUNC, e.e.err);
    EXPECT_EQ(424u, e.e.len) << "len = space that was left";
    EXPECT_EQ(176u, e.e.olen);
    EXPECT_EQ(buf.data() + 600, e.e.buf) << "buf = current position";
    EXPECT_EQ(FI_MULTI_RECV, e.e.flags & FI_MULTI_RECV) << "the last completion releases";
    EXPECT_EQ(SIZE_MAX, mismatch(buf.data() + 600, 424, 1));
}

TEST_P(MultiRecvTest, RendezvousMessagesArePacked) {
    const std::vector<size_t> lens{kRdzvSize, kRdzvSize + 1, 300, kRdzvSize, 60};
    size_t total = 0;
    for (size_t l : lens)
        total += l;
    std::vector<uint8_t> buf(total + 40);  // 40 < 64 left after the last message
    int ctx = 0;
    post_multi(*p_.b, buf.data(), buf.size(), &ctx);
    send_all(lens);
    expect_packed(lens, buf.data(), &ctx, true);
}

TEST_P(MultiRecvTest, UnexpectedMessagesLandInLaterBuffer) {
    const std::vector<size_t> lens{100, 1, 0, 192, 4000};
    std::vector<std::vector<uint8_t>> out;
    std::vector<int> sctx(lens.size());
    for (size_t i = 0; i < lens.size(); i++) {
        out.push_back(pattern(lens[i], static_cast<uint32_t>(i)));
        void *b = out.back().data();
        post([&] { return fi_send(p_.a->ep(), b, lens[i], nullptr, p_.a2b, &sctx[i]); }, "fi_send");
    }
    wait_unexpected(*p_.b, lens.size());
    std::vector<uint8_t> buf(8192);
    int ctx = 0;
    post_multi(*p_.b, buf.data(), buf.size(), &ctx);
    expect_packed(lens, buf.data(), &ctx, false);
    for (size_t i = 0; i < lens.size(); i++)
        wait_comp(p_.a->tx(), &sctx[i], "send");
    ASSERT_OK(fi_cancel(&p_.b->ep()->fid, &ctx));
    ErrComp e = wait_err(p_.b->rx(), &ctx, "cancel of the partly used buffer");
    EXPECT_EQ(FI_ECANCELED, e.e.err);
    EXPECT_EQ(FI_MULTI_RECV, e.e.flags & FI_MULTI_RECV);
}

// A buffer that unexpected messages fill completely at post time is released once:
// the next two buffers are distinct operations (fabtests' fi_multi_recv found the
// double release, which handed one operation out twice).
TEST_P(MultiRecvTest, BufferFilledByUnexpectedMessagesIsReleasedOnce) {
    set_min(*p_.b, 100);
    const std::vector<size_t> lens(4, 100);
    send_all(lens);
    wait_unexpected(*p_.b, lens.size());
    std::vector<uint8_t> first(400), second(1000), third(1000, 0xAB);
    int c1 = 0, c2 = 0, c3 = 0;
    post_multi(*p_.b, first.data(), first.size(), &c1);
    expect_packed(lens, first.data(), &c1, true);
    post_multi(*p_.b, second.data(), second.size(), &c2);
    post_multi(*p_.b, third.data(), third.size(), &c3);
    const std::vector<size_t> more(2, 100);
    send_all(more, 10);
    expect_packed(more, second.data(), &c2, false, 10);
    ASSERT_OK(fi_cancel(&p_.b->ep()->fid, &c3));
    ErrComp e = wait_err(p_.b->rx(), &c3, "cancel of the untouched third buffer");
    EXPECT_EQ(FI_ECANCELED, e.e.err);
    EXPECT_TRUE(std::all_of(third.begin(), third.end(), [](uint8_t b) { return b == 0xAB; }));
    ASSERT_OK(fi_cancel(&p_.b->ep()->fid, &c2));
    wait_err(p_.b->rx(), &c2, "cancel of the second buffer");
}

TEST_P(MultiRecvTest, CancelUnusedBufferReportsMultiRecv) {
    std::vector<uint8_t> buf(4096);
    int ctx = 0;
    post_multi(*p_.b, buf.data(), buf.size(), &ctx);
    ASSERT_OK(fi_cancel(&p_.b->ep()->fid, &ctx));
    ErrComp e = wait_err(p_.b->rx(), &ctx, "cancelled multi-recv");
    EXPECT_EQ(FI_ECANCELED, e.e.err);
    EXPECT_EQ(&ctx, e.e.op_context);
    EXPECT_EQ(FI_MULTI_RECV, e.e.flags & FI_MULTI_RECV);
    EXPECT_RC(-FI_ENOENT, fi_cancel(&p_.b->ep()->fid, &ctx)) << "already cancelled";
}

TEST_P(MultiRecvTest, TaggedReceiveIgnoresMultiRecvFlag) {
    std::vector<uint8_t> buf(1000), second(100);
    int ctx = 0, ctx2 = 0;
    iovec iov{buf.data(), buf.size()};
    fi_msg_tagged msg{&iov, nullptr, 1, FI_ADDR_UNSPEC, 9, 0, &ctx, 0};
    ASSERT_OK(fi_trecvmsg(p_.b->ep(), &msg, FI_COMPLETION | FI_MULTI_RECV));
    ASSERT_OK(fi_tinject(p_.a->ep(), "one", 4, p_.a2b, 9));
    ASSERT_OK(fi_tinject(p_.a->ep(), "two", 4, p_.a2b, 9));
    Comp c = wait_comp(p_.b->rx(), &ctx, "tagged receive");
    EXPECT_EQ(FI_TAGGED | FI_RECV, c.e.flags) << "no FI_MULTI_RECV for tagged receives";
    EXPECT_EQ(nullptr, c.e.buf);
    EXPECT_STREQ("one", reinterpret_cast<char *>(buf.data()));
    ASSERT_OK(
        fi_trecv(p_.b->ep(), second.data(), second.size(), nullptr, FI_ADDR_UNSPEC, 9, 0, &ctx2));
    wait_comp(p_.b->rx(), &ctx2, "second tagged message goes to the next receive");
    EXPECT_STREQ("two", reinterpret_cast<char *>(second.data()));
}

TEST_P(MultiRecvTest, SeveralBuffersUsedInPostOrder) {
    std::vector<uint8_t> b1(300), b2(300);
    int c1 = 0, c2 = 0;
    post_multi(*p_.b, b1.data(), b1.size(), &c1);
    post_multi(*p_.b, b2.data(), b2.size(), &c2);
    // 2 x 120 fill b1 (60 left < 64), the next two go to b2.
    send_all({120, 120, 120, 120});
    expect_packed({120, 120}, b1.data(), &c1, true);
    Comp x = wait_comp(p_.b->rx(), &c2, "b2 first");
    Comp y = wait_comp(p_.b->rx(), &c2, "b2 second");
    EXPECT_EQ(b2.data(), x.e.buf);
    EXPECT_EQ(b2.data() + 120, y.e.buf);
    EXPECT_EQ(FI_MULTI_RECV, y.e.flags & FI_MULTI_RECV);
    EXPECT_EQ(SIZE_MAX, mismatch(b2.data(), 120, 2));
    EXPECT_EQ(SIZE_MAX, mismatch(b2.data() + 120, 120, 3));
}

CXIT_INSTANTIATE_TRANSPORTS(MultiRecvTest);

}  // namespace

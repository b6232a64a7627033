// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Untagged messaging (spec §5.1-5.6): every send/recv API, completion entry
// fields, eager and rendezvous sizes (expected and unexpected), truncation,
// ordering, FI_SOURCE / FI_SOURCE_ERR, FI_DIRECTED_RECV, FI_SYMMETRIC.
// Endpoint a is on cxi0, b on the transport's peer domain.
#include <cstring>

#include "fixture.hpp"

using namespace cxit;

namespace {

const std::vector<size_t> kSizes{0,    1,     64,    191,   192,   193,      2048,
                                 2049, 16384, 18433, 18434, 65536, 1u << 20, (3u << 20) + 5};

class MsgTest : public TransportTest {
  protected:
    // a -> b transfer of `len` bytes; the receive is posted after the send
    // when `unexpected`.
    void xfer(Pair &p, size_t len, bool unexpected, uint32_t seed) {
        std::vector<uint8_t> out = pattern(len, seed), in(len + 1, 0xEE);
        int sctx = 0, rctx = 0;
        auto recv = [&] {
            post([&] { return fi_recv(p.b->ep(), in.data(), len, nullptr, FI_ADDR_UNSPEC, &rctx); },
                 "fi_recv");
        };
        if (!unexpected) recv();
        post([&] { return fi_send(p.a->ep(), out.data(), len, nullptr, p.a2b, &sctx); }, "fi_send");
        if (unexpected) {
            wait_unexpected(*p.b, 1);
            recv();
        }
        Comp r = wait_comp(p.b->rx(), &rctx, "receive of " + std::to_string(len) + " bytes");
        wait_comp(p.a->tx(), &sctx, "send of " + std::to_string(len) + " bytes");
        ASSERT_EQ(len, r.e.len);
        ASSERT_EQ(SIZE_MAX, mismatch(in.data(), len, seed)) << "size " << len;
        ASSERT_EQ(0xEE, in[len]) << "wrote past the message";
    }
};

TEST_P(MsgTest, SendRecvCompletionFields) {
    Pair p = make_pair();
    char out[32] = "hello cxi", in[32] = {};
    int sctx = 0, rctx = 0;
    ASSERT_OK(fi_recv(p.b->ep(), in, sizeof(in), nullptr, FI_ADDR_UNSPEC, &rctx));
    ASSERT_OK(fi_send(p.a->ep(), out, 10, nullptr, p.a2b, &sctx));
    Comp r = wait_comp(p.b->rx(), &rctx, "recv");
    Comp s = wait_comp(p.a->tx(), &sctx, "send");
    EXPECT_EQ(FI_MSG | FI_RECV, r.e.flags);
    EXPECT_EQ(10u, r.e.len);
    EXPECT_EQ(nullptr, r.e.buf);
    EXPECT_EQ(0u, r.e.data);
    EXPECT_EQ(0u, r.e.tag);
    EXPECT_EQ(FI_MSG | FI_SEND, s.e.flags);
    EXPECT_EQ(0u, s.e.len);
    EXPECT_EQ(nullptr, s.e.buf);
    EXPECT_STREQ("hello cxi", in);
}

TEST_P(MsgTest, SenddataDeliversRemoteCqData) {
    Pair p = make_pair();
    uint64_t v = 42, in = 0;
    int sctx = 0, rctx = 0;
    ASSERT_OK(fi_recv(p.b->ep(), &in, 8, nullptr, FI_ADDR_UNSPEC, &rctx));
    ASSERT_OK(fi_senddata(p.a->ep(), &v, 8, nullptr, 0xCAFEF00DULL, p.a2b, &sctx));
    Comp r = wait_comp(p.b->rx(), &rctx, "recv");
    wait_comp(p.a->tx(), &sctx, "senddata");
    EXPECT_EQ(FI_MSG | FI_RECV | FI_REMOTE_CQ_DATA, r.e.flags);
    EXPECT_EQ(0xCAFEF00DULL, r.e.data);
    EXPECT_EQ(42u, in);
}

TEST_P(MsgTest, SendvRecvvAndMsgApis) {
    Pair p = make_pair();
    std::vector<uint8_t> out = pattern(300, 5), in1(300), in2(300);
    int s1 = 0, s2 = 0, r1 = 0, r2 = 0;
    iovec riov{in1.data(), in1.size()}, siov{out.data(), out.size()};
    ASSERT_OK(fi_recvv(p.b->ep(), &riov, nullptr, 1, FI_ADDR_UNSPEC, &r1));
    ASSERT_OK(fi_sendv(p.a->ep(), &siov, nullptr, 1, p.a2b, &s1));
    wait_comp(p.a->tx(), &s1, "sendv");
    EXPECT_EQ(300u, wait_comp(p.b->rx(), &r1, "recvv").e.len);
    EXPECT_EQ(SIZE_MAX, mismatch(in1.data(), 300, 5));

    iovec riov2{in2.data(), in2.size()};
    fi_msg rmsg{&riov2, nullptr, 1, FI_ADDR_UNSPEC, &r2, 0};
    fi_msg smsg{&siov, nullptr, 1, p.a2b, &s2, 0x77};
    ASSERT_OK(fi_recvmsg(p.b->ep(), &rmsg, FI_COMPLETION));
    ASSERT_OK(fi_sendmsg(p.a->ep(), &smsg, FI_COMPLETION | FI_REMOTE_CQ_DATA));
    wait_comp(p.a->tx(), &s2, "sendmsg");
    Comp r = wait_comp(p.b->rx(), &r2, "recvmsg");
    EXPECT_EQ(FI_MSG | FI_RECV | FI_REMOTE_CQ_DATA, r.e.flags);
    EXPECT_EQ(0x77u, r.e.data);
    EXPECT_EQ(SIZE_MAX, mismatch(in2.data(), 300, 5));
}

TEST_P(MsgTest, InjectHasNoSendCompletion) {
    Pair p = make_pair();
    std::vector<uint8_t> out = pattern(kInjectSize, 8), in(kInjectSize);
    uint64_t d = 0;
    int r1 = 0, r2 = 0;
    ASSERT_OK(fi_recv(p.b->ep(), in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, &r1));
    ASSERT_OK(fi_recv(p.b->ep(), &d, sizeof(d), nullptr, FI_ADDR_UNSPEC, &r2));
    ASSERT_OK(fi_inject(p.a->ep(), out.data(), out.size(), p.a2b));
    std::fill(out.begin(), out.end(), 0);  // the buffer is reusable at once
    uint64_t v = 9;
    ASSERT_OK(fi_injectdata(p.a->ep(), &v, sizeof(v), 0xD5, p.a2b));
    v = 0;
    EXPECT_EQ(kInjectSize, wait_comp(p.b->rx(), &r1, "inject recv").e.len);
    Comp c = wait_comp(p.b->rx(), &r2, "injectdata recv");
    EXPECT_EQ(FI_MSG | FI_RECV | FI_REMOTE_CQ_DATA, c.e.flags);
    EXPECT_EQ(0xD5u, c.e.data);
    EXPECT_EQ(9u, d);
    EXPECT_EQ(SIZE_MAX, mismatch(in.data(), in.size(), 8));
    expect_quiet(p.a->tx(), "fi_inject / fi_injectdata");
}

TEST_P(MsgTest, ZeroByteMessagesThroughEveryApi) {
    Pair p = make_pair();
    int r[3], s[3];
    for (int i = 0; i < 3; i++)
        ASSERT_OK(fi_recv(p.b->ep(), nullptr, 0, nullptr, FI_ADDR_UNSPEC, &r[i]));
    iovec iov{nullptr, 0};
    fi_msg msg{&iov, nullptr, 1, p.a2b, &s[2], 0};
    ASSERT_OK(fi_send(p.a->ep(), nullptr, 0, nullptr, p.a2b, &s[0]));
    ASSERT_OK(fi_sendv(p.a->ep(), &iov, nullptr, 1, p.a2b, &s[1]));
    ASSERT_OK(fi_sendmsg(p.a->ep(), &msg, FI_COMPLETION));
    for (int i = 0; i < 3; i++) {
        wait_comp(p.a->tx(), &s[i], "zero-byte send");
        EXPECT_EQ(0u, wait_comp(p.b->rx(), &r[i], "zero-byte recv").e.len);
    }
}

TEST_P(MsgTest, SizesExpected) {
    Pair p = make_pair();
    for (size_t i = 0; i < kSizes.size(); i++) {
        SCOPED_TRACE(kSizes[i]);
        xfer(p, kSizes[i], false, static_cast<uint32_t>(i));
        if (HasFatalFailure()) return;
    }
}

TEST_P(MsgTest, SizesUnexpected) {
    Pair p = make_pair();
    for (size_t i = 0; i < kSizes.size(); i++) {
        SCOPED_TRACE(kSizes[i]);
        xfer(p, kSizes[i], true, static_cast<uint32_t>(i + 50));
        if (HasFatalFailure()) return;
    }
}

TEST_P(MsgTest, SelfLoopback) {
    fi_addr_t self;
    EndpointPtr ep = make_self(peer_domain(), self);
    for (size_t len : {size_t{0}, size_t{100}, kEagerMax, kRdzvSize})
        ping(*ep, self, *ep, len, 3);
}

void check_trunc(const ErrComp &e, const void *ctx, size_t buf_len, size_t msg_len) {
    EXPECT_EQ(FI_ETRUNC, e.e.err);
    EXPECT_EQ(ctx, e.e.op_context);
    EXPECT_EQ(buf_len, e.e.len) << "len = bytes delivered";
    EXPECT_EQ(msg_len - buf_len, e.e.olen) << "olen = bytes that did not fit";
    EXPECT_EQ(nullptr, e.e.buf);
    EXPECT_EQ(FI_MSG | FI_RECV, e.e.flags & (FI_MSG | FI_RECV | FI_TAGGED | FI_SEND));
}

TEST_P(MsgTest, TruncationReportsDeliveredAndOverflowLengths) {
    Pair p = make_pair();
    struct Case {
        size_t msg, buf;
        bool unexpected;
    } cases[] = {{1000, 512, false},
                 {1000, 512, true},
                 {kRdzvSize, 50000, false},
                 {kRdzvSize, 50000, true},
                 {kRdzvSize, 100, false}};
    for (const Case &c : cases) {
        SCOPED_TRACE(std::to_string(c.msg) + " into " + std::to_string(c.buf));
        std::vector<uint8_t> out = pattern(c.msg, 11), in(c.buf + 1, 0xEE);
        int sctx = 0, rctx = 0;
        auto recv = [&] {
            post(
                [&] {
                    return fi_recv(p.b->ep(), in.data(), c.buf, nullptr, FI_ADDR_UNSPEC, &rctx);
                },
                "fi_recv");
        };
        if (!c.unexpected) recv();
        post([&] { return fi_send(p.a->ep(), out.data(), c.msg, nullptr, p.a2b, &sctx); },
             "fi_send");
        if (c.unexpected) {
            wait_unexpected(*p.b, 1);
            recv();
        }
        ErrComp e = wait_err(p.b->rx(), &rctx, "truncated receive");
        wait_comp(p.a->tx(), &sctx, "send of truncated message");
        check_trunc(e, &rctx, c.buf, c.msg);
        EXPECT_EQ(SIZE_MAX, mismatch(in.data(), c.buf, 11)) << "delivered prefix";
        EXPECT_EQ(0xEE, in[c.buf]) << "wrote past the receive buffer";
    }
}

TEST_P(MsgTest, SendAfterSendOrderingUnexpected) {
    Pair p = make_pair();
    constexpr size_t kN = 24;
    std::vector<std::vector<uint8_t>> out(kN), in(kN);
    std::vector<int> sctx(kN), rctx(kN);
    for (size_t i = 0; i < kN; i++) {
        const size_t len = (i % 3 == 2) ? kRdzvSize : 100 + i;  // eager and rendezvous mixed
        out[i] = pattern(len, static_cast<uint32_t>(i));
        in[i].assign(kRdzvSize, 0);
        post([&] { return fi_send(p.a->ep(), out[i].data(), len, nullptr, p.a2b, &sctx[i]); },
             "fi_send");
    }
    wait_unexpected(*p.b, kN);
    for (size_t i = 0; i < kN; i++)
        post(
            [&] {
                return fi_recv(p.b->ep(), in[i].data(), in[i].size(), nullptr, FI_ADDR_UNSPEC,
                               &rctx[i]);
            },
            "fi_recv");
    for (size_t i = 0; i < kN; i++) {
        Comp r = wait_comp(p.b->rx(), &rctx[i], "ordered receive " + std::to_string(i));
        EXPECT_EQ(out[i].size(), r.e.len) << "receive " << i << " matched another message";
        EXPECT_EQ(SIZE_MAX, mismatch(in[i].data(), out[i].size(), static_cast<uint32_t>(i)))
            << "receive " << i;
    }
    for (size_t i = 0; i < kN; i++)
        wait_comp(p.a->tx(), &sctx[i], "ordered send");
}

TEST_P(MsgTest, SendAfterSendOrderingExpected) {
    Pair p = make_pair();
    constexpr uint32_t kN = 200;
    std::vector<uint32_t> in(kN, ~0u), out(kN);
    std::vector<int> sctx(kN), rctx(kN);
    for (uint32_t i = 0; i < kN; i++)
        post(
            [&] {
                return fi_recv(p.b->ep(), &in[i], sizeof(uint32_t), nullptr, FI_ADDR_UNSPEC,
                               &rctx[i]);
            },
            "fi_recv");
    for (uint32_t i = 0; i < kN; i++) {
        out[i] = i;
        post([&] { return fi_send(p.a->ep(), &out[i], 4, nullptr, p.a2b, &sctx[i]); }, "fi_send");
    }
    for (uint32_t i = 0; i < kN; i++) {
        wait_comp(p.b->rx(), &rctx[i], "receive");
        wait_comp(p.a->tx(), &sctx[i], "send");
        EXPECT_EQ(i, in[i]) << "message order";
    }
}

TEST_P(MsgTest, FiSourceReportsSenderAddress) {
    for (fi_av_type t : {FI_AV_TABLE, FI_AV_MAP}) {
        SCOPED_TRACE(t);
        EpOptions oa, ob;
        oa.av_type = ob.av_type = t;
        ob.caps = FI_MSG | FI_SOURCE;
        Pair p = make_pair(oa, ob);
        EndpointPtr c = make_ep("cxi0", oa);
        fi_addr_t c2b = c->insert(p.b->name());
        fi_addr_t b2c = p.b->insert(c->name());
        int r1 = 0, r2 = 0;
        char in1[4], in2[4];
        ASSERT_OK(fi_recv(p.b->ep(), in1, 4, nullptr, FI_ADDR_UNSPEC, &r1));
        ASSERT_OK(fi_recv(p.b->ep(), in2, 4, nullptr, FI_ADDR_UNSPEC, &r2));
        ASSERT_OK(fi_inject(p.a->ep(), "aaa", 4, p.a2b));
        Comp x = wait_comp(p.b->rx(), &r1, "recv from a");
        ASSERT_OK(fi_inject(c->ep(), "ccc", 4, c2b));
        Comp y = wait_comp(p.b->rx(), &r2, "recv from c");
        EXPECT_EQ(p.b2a, x.src);
        EXPECT_EQ(b2c, y.src);
        EXPECT_STREQ("aaa", in1);
        EXPECT_STREQ("ccc", in2);
    }
}

TEST_P(MsgTest, FiSourceUnknownSenderIsNotAvailable) {
    EpOptions ob;
    ob.caps = FI_MSG | FI_SOURCE;
    EndpointPtr a = make_ep("cxi0");
    EndpointPtr b = make_ep(peer_domain(), ob);
    fi_addr_t a2b = a->insert(b->name());  // b does not know a
    int rctx = 0;
    char in[4];
    ASSERT_OK(fi_recv(b->ep(), in, 4, nullptr, FI_ADDR_UNSPEC, &rctx));
    ASSERT_OK(fi_inject(a->ep(), "xyz", 4, a2b));
    Comp r = wait_comp(b->rx(), &rctx, "receive from unknown sender");
    EXPECT_EQ(FI_ADDR_NOTAVAIL, r.src);
}

TEST_P(MsgTest, FiSourceErrReportsUnknownSenderAddress) {
    EpOptions ob;
    ob.caps = FI_MSG | FI_SOURCE | FI_SOURCE_ERR;
    EndpointPtr a = make_ep("cxi0");
    EndpointPtr b = make_ep(peer_domain(), ob);
    fi_addr_t a2b = a->insert(b->name());
    int r1 = 0, r2 = 0;
    char in[4];
    ASSERT_OK(fi_recv(b->ep(), in, 4, nullptr, FI_ADDR_UNSPEC, &r1));
    ASSERT_OK(fi_inject(a->ep(), "one", 4, a2b));
    ErrComp e = wait_err(b->rx(), &r1, "receive from unknown sender");
    EXPECT_EQ(FI_EADDRNOTAVAIL, e.e.err);
    ASSERT_GE(e.err_data.size(), 4u) << "err_data carries the source address";
    const size_t n = std::min(e.err_data.size(), kAddrLen);
    EXPECT_EQ(0, std::memcmp(e.err_data.data(), a->name().data(), n));
    std::vector<uint8_t> addr(a->name().size(), 0);
    std::memcpy(addr.data(), e.err_data.data(), n);
    fi_addr_t b2a = b->insert(addr);
    ASSERT_OK(fi_recv(b->ep(), in, 4, nullptr, FI_ADDR_UNSPEC, &r2));
    ASSERT_OK(fi_inject(a->ep(), "two", 4, a2b));
    Comp r = wait_comp(b->rx(), &r2, "receive after inserting the source");
    EXPECT_EQ(b2a, r.src);
    EXPECT_STREQ("two", in);
}

// An endpoint that has polled for a long time with nothing arriving still hears the
// next message and its acknowledgement, also when no helper thread watches its socket
// (run again with FI_CXI_OFFLOAD=0).
TEST_P(MsgTest, QuietEndpointsStillHearTheNextMessage) {
    Pair p = make_pair();
    uint64_t out = 0x5157, in = 0;
    int sctx = 0, rctx = 0;
    ASSERT_OK(fi_recv(p.b->ep(), &in, sizeof(in), nullptr, FI_ADDR_UNSPEC, &rctx));
    for (int i = 0; i < 20000; i++) {  // well past the point where a socket counts as quiet
        ASSERT_EQ(0u, p.b->rx().poll());
        ASSERT_EQ(0u, p.a->tx().poll());
    }
    ASSERT_OK(fi_send(p.a->ep(), &out, sizeof(out), nullptr, p.a2b, &sctx));
    wait_comp(p.b->rx(), &rctx, "receive after a quiet spell");
    wait_comp(p.a->tx(), &sctx, "send after a quiet spell");
    EXPECT_EQ(out, in);
}

TEST_P(MsgTest, DirectedReceiveOnlyMatchesItsSource) {
    EpOptions ob;
    ob.caps = FI_MSG | FI_DIRECTED_RECV;
    Pair p = make_pair({}, ob);
    fi_addr_t fake = p.b->insert(encode_addr(0xABCDE, 300));
    char wrong[8] = {}, right[8] = {};
    int rw = 0, rr = 0;
    ASSERT_OK(fi_recv(p.b->ep(), wrong, sizeof(wrong), nullptr, fake, &rw));
    ASSERT_OK(fi_recv(p.b->ep(), right, sizeof(right), nullptr, p.b2a, &rr));
    ASSERT_OK(fi_inject(p.a->ep(), "direct", 7, p.a2b));
    wait_comp(p.b->rx(), &rr, "receive directed at a");
    EXPECT_STREQ("direct", right);
    EXPECT_STREQ("", wrong);
    ASSERT_OK(fi_cancel(&p.b->ep()->fid, &rw));
    EXPECT_EQ(FI_ECANCELED, wait_err(p.b->rx(), &rw, "cancel of unmatched receive").e.err);
}

TEST_P(MsgTest, SourceAddressIgnoredWithoutDirectedRecvCap) {
    Pair p = make_pair();
    fi_addr_t fake = p.b->insert(encode_addr(0xABCDE, 301));
    char in[8] = {};
    int rctx = 0;
    ASSERT_OK(fi_recv(p.b->ep(), in, sizeof(in), nullptr, fake, &rctx));
    ASSERT_OK(fi_inject(p.a->ep(), "any", 4, p.a2b));
    wait_comp(p.b->rx(), &rctx, "receive with an ignored source address");
    EXPECT_STREQ("any", in);
}

TEST_P(MsgTest, SymmetricAvUsesLogicalAddresses) {
    EpOptions o;
    o.av_flags = FI_SYMMETRIC;
    o.caps = FI_MSG | FI_SOURCE | FI_DIRECTED_RECV;
    EndpointPtr a = make_ep("cxi0", o);
    EndpointPtr b = make_ep(peer_domain(), o);
    for (Endpoint *e : {a.get(), b.get()}) {
        ASSERT_EQ(0u, e->insert(a->name()));
        ASSERT_EQ(1u, e->insert(b->name()));
        ASSERT_EQ(2u, e->insert(encode_addr(0xABCDE, 302)));
    }
    char wrong[8] = {}, right[8] = {};
    int rw = 0, rr = 0;
    ASSERT_OK(fi_recv(b->ep(), wrong, sizeof(wrong), nullptr, 2, &rw));
    ASSERT_OK(fi_recv(b->ep(), right, sizeof(right), nullptr, 0, &rr));
    ASSERT_OK(fi_inject(a->ep(), "sym", 4, 1));
    Comp r = wait_comp(b->rx(), &rr, "receive directed at logical address 0");
    EXPECT_EQ(0u, r.src);
    EXPECT_STREQ("sym", right);
    ASSERT_OK(fi_cancel(&b->ep()->fid, &rw));
    wait_err(b->rx(), &rw, "cancel");
}

CXIT_INSTANTIATE_TRANSPORTS(MsgTest);

}  // namespace

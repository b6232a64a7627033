// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// FI_EP_DGRAM data path over loopback: round trips with and without the
// 64-byte message prefix, completion fields, fi_cq_readfrom, truncation,
// size limits and receive ordering.
#include <cstring>
#include <vector>

#include "fixture.hpp"

using namespace usnict;

namespace {

constexpr uint64_t kPrefixMode = FI_LOCAL_MR | FI_MSG_PREFIX;

class DgramTest : public PairTest {
  protected:
    EpOpts prefix_opts() const {
        EpOpts o;
        o.mode = kPrefixMode;
        return o;
    }
    // One message a -> b of `payload` bytes (plus the prefix in prefix mode);
    // checks both completions and the data.
    void round_trip(size_t payload, size_t msg_no);
};

void DgramTest::round_trip(size_t payload, size_t msg_no) {
    const size_t pre = a_->prefix();
    std::vector<uint8_t> out(pre + payload), in(pre + max_msg() + 1, 0);
    fill_pattern(out.data() + pre, payload, msg_no);
    int sctx = 0, rctx = 0;
    recv(*b_, in.data(), in.size(), &rctx);
    send(*a_, out.data(), out.size(), &sctx);
    const Entry tx = wait_tx(*a_);
    EXPECT_EQ(tx.ctx, &sctx);
    EXPECT_EQ(tx.err, 0);
    EXPECT_EQ(tx.flags, FI_MSG | FI_SEND);
    const Entry rx = wait_rx(*b_);
    EXPECT_EQ(rx.ctx, &rctx);
    EXPECT_EQ(rx.err, 0);
    EXPECT_EQ(rx.flags, FI_MSG | FI_RECV);
    EXPECT_EQ(rx.len, pre + payload);
    EXPECT_EQ(check_pattern(in.data() + pre, payload, msg_no), payload);
}

// Blocks (bounded) until `cq` yields one entry through fi_cq_readfrom.
void *readfrom_one(fid_cq *cq, fi_addr_t *src) {
    Deadline d;
    for (;;) {
        fi_cq_entry e{};
        const long n = fi_cq_readfrom(cq, &e, 1, src);
        if (n == 1) return e.op_context;
        if (n != -FI_EAGAIN) fatal("fi_cq_readfrom returned " + rc_str(n));
        if (d.expired()) fatal("no completion for fi_cq_readfrom");
    }
}

TEST_P(DgramTest, RoundTripWithoutPrefix) {
    make_pair();
    ASSERT_EQ(a_->prefix(), 0u);
    ASSERT_EQ(a_->info->mode & FI_MSG_PREFIX, 0u);
    size_t n = 0;
    for (size_t len : {size_t{0}, size_t{1}, size_t{100}, kDgramInject, kDgramInject + 1,
                       size_t{4000}, max_msg()}) {
        SCOPED_TRACE(len);
        round_trip(len, n++);
    }
}

TEST_P(DgramTest, RoundTripWithPrefix) {
    make_pair(prefix_opts(), prefix_opts());
    ASSERT_EQ(a_->prefix(), kPrefix);
    ASSERT_NE(a_->info->mode & FI_MSG_PREFIX, 0u);
    // Limits count the payload only (fi_getinfo(3) on FI_MSG_PREFIX); lengths include it.
    ASSERT_EQ(a_->info->ep_attr->max_msg_size, max_msg());
    size_t n = 0;
    for (size_t len : {size_t{0}, size_t{1}, size_t{100}, kDgramInject, size_t{4000}, max_msg()}) {
        SCOPED_TRACE(len);
        round_trip(len, n++);
    }
}

TEST_P(DgramTest, BothDirections) {
    make_pair();
    round_trip(64, 1);
    std::swap(a_, b_);
    round_trip(64, 2);
}

TEST_P(DgramTest, ReceivesCompleteInPostingOrder) {
    make_pair();
    constexpr size_t kN = 4;
    std::vector<std::vector<uint8_t>> bufs(kN, std::vector<uint8_t>(2000));
    int ctx[kN];
    for (size_t i = 0; i < kN; i++)
        recv(*b_, bufs[i].data(), bufs[i].size(), &ctx[i]);
    for (size_t i = 0; i < kN; i++) {
        std::vector<uint8_t> out(100 + i * 300);
        fill_pattern(out.data(), out.size(), i);
        send(*a_, out.data(), out.size(), nullptr);
        wait_tx(*a_);
    }
    for (size_t i = 0; i < kN; i++) {
        const Entry rx = wait_rx(*b_);
        EXPECT_EQ(rx.ctx, &ctx[i]);
        EXPECT_EQ(rx.len, 100 + i * 300);
        EXPECT_EQ(check_pattern(bufs[i].data(), rx.len, i), rx.len);
    }
}

TEST_P(DgramTest, ReadFromGivesSourceHandle) {
    EpOpts o;
    o.format = FI_CQ_FORMAT_CONTEXT;
    make_pair(o, o);
    char in[256], out[32] = "from a";
    int rctx = 0, sctx = 0;
    ASSERT_OK(fi_recv(b_->ep.get(), in, sizeof(in), nullptr, FI_ADDR_UNSPEC, &rctx));
    ASSERT_OK(fi_send(a_->ep.get(), out, sizeof(out), nullptr, a_->peer, &sctx));
    fi_addr_t src = 12345;
    EXPECT_EQ(readfrom_one(a_->tx_cq.get(), &src), &sctx);
    EXPECT_EQ(src, FI_ADDR_NOTAVAIL) << "send entries carry no source";
    src = 12345;
    EXPECT_EQ(readfrom_one(b_->rx_cq.get(), &src), &rctx);
    EXPECT_EQ(src, b_->peer);

    // A sender that is not in b's AV.
    UdpSocket sock;
    ASSERT_EQ(sock.send_to(getname(b_->ep.fid()), out, sizeof(out)),
              static_cast<ssize_t>(sizeof(out)));
    ASSERT_OK(fi_recv(b_->ep.get(), in, sizeof(in), nullptr, FI_ADDR_UNSPEC, &rctx));
    src = 12345;
    EXPECT_EQ(readfrom_one(b_->rx_cq.get(), &src), &rctx);
    EXPECT_EQ(src, FI_ADDR_NOTAVAIL);
}

TEST_P(DgramTest, ReadFromWithoutAv) {
    EpOpts o;
    o.format = FI_CQ_FORMAT_CONTEXT;
    EpOpts no_av = o;
    no_av.av = false;
    make_pair(o, o);
    auto c = endpoint(Kind::dgram, no_av);
    const fi_addr_t a2c = av_insert(a_->av.get(), getname(c->ep.fid()));
    char in[64], out[16] = "to c";
    int rctx = 0;
    ASSERT_OK(fi_recv(c->ep.get(), in, sizeof(in), nullptr, FI_ADDR_UNSPEC, &rctx));
    ASSERT_OK(fi_send(a_->ep.get(), out, sizeof(out), nullptr, a2c, nullptr));
    fi_addr_t src = 12345;
    EXPECT_EQ(readfrom_one(c->rx_cq.get(), &src), &rctx);
    EXPECT_EQ(src, FI_ADDR_NOTAVAIL);
}

TEST_P(DgramTest, ReadFromOnMsgFormat) {
    make_pair();
    fi_cq_msg_entry e;
    fi_addr_t src;
    EXPECT_RC(-FI_ENOSYS, fi_cq_readfrom(b_->rx_cq.get(), &e, 1, &src));
}

TEST_P(DgramTest, Truncation) {
    make_pair();
    std::vector<uint8_t> out(100), small(10), big(200);
    fill_pattern(out.data(), out.size(), 7);
    int rctx = 0;
    ASSERT_OK(fi_recv(b_->ep.get(), small.data(), small.size(), nullptr, FI_ADDR_UNSPEC, &rctx));
    // Only b's receive CQ is read until the error is seen: the fixture's
    // progress() would take the error entry into b_->rx_done.
    ASSERT_OK(fi_send(a_->ep.get(), out.data(), out.size(), nullptr, a_->peer, nullptr));
    long rc;
    fi_cq_msg_entry e;
    Deadline d;
    while ((rc = fi_cq_read(b_->rx_cq.get(), &e, 1)) == -FI_EAGAIN && !d.expired()) {
    }
    ASSERT_RC(-FI_EAVAIL, rc);
    fi_cq_err_entry err;
    std::memset(&err, 0xab, sizeof(err));
    err.err_data = nullptr;
    err.err_data_size = 0;
    ASSERT_RC(1, fi_cq_readerr(b_->rx_cq.get(), &err, 0));
    EXPECT_EQ(err.op_context, &rctx);
    EXPECT_EQ(err.err, FI_ETRUNC);
    EXPECT_EQ(err.prov_errno, FI_ETRUNC);
    EXPECT_EQ(err.data, 0u) << "unset fields are zeroed";
    EXPECT_EQ(err.tag, 0u) << "unset fields are zeroed";
    EXPECT_EQ(check_pattern(small.data(), small.size(), 7), small.size());
    EXPECT_RC(-FI_EAGAIN, fi_cq_readerr(b_->rx_cq.get(), &err, 0));
    EXPECT_EQ(wait_tx(*a_).err, 0) << "the send itself succeeded";

    // The endpoint goes on working.
    recv(*b_, big.data(), big.size(), &rctx);
    send(*a_, out.data(), 50, nullptr);
    const Entry rx = wait_rx(*b_);
    EXPECT_EQ(rx.err, 0);
    EXPECT_EQ(rx.len, 50u);
}

TEST_P(DgramTest, SendAboveMaxMsgSize) {
    make_pair();
    const size_t max = a_->info->ep_attr->max_msg_size;
    std::vector<uint8_t> out(max + 1);
    EXPECT_RC(-FI_EMSGSIZE, fi_send(a_->ep.get(), out.data(), max + 1, nullptr, a_->peer, nullptr));
}

TEST_P(DgramTest, SendAboveMaxMsgSizeWithPrefix) {
    make_pair(prefix_opts(), prefix_opts());
    const size_t max = a_->info->ep_attr->max_msg_size;
    std::vector<uint8_t> out(kPrefix + max + 1);
    EXPECT_RC(-FI_EMSGSIZE,
              fi_send(a_->ep.get(), out.data(), out.size(), nullptr, a_->peer, nullptr));
}

TEST_P(DgramTest, PrefixedInjectLimitCountsThePayload) {
    make_pair(prefix_opts(), prefix_opts());
    std::vector<uint8_t> out(kPrefix + kDgramInject + 1), in(kPrefix + 2000);
    EXPECT_RC(-FI_ENOSPC, fi_inject(a_->ep.get(), out.data(), out.size(), a_->peer));
    fill_pattern(out.data() + kPrefix, kDgramInject, 5);
    recv(*b_, in.data(), in.size(), nullptr);
    ASSERT_OK(fi_inject(a_->ep.get(), out.data(), kPrefix + kDgramInject, a_->peer));
    const Entry rx = wait_rx(*b_);
    EXPECT_EQ(rx.len, kPrefix + kDgramInject);
    EXPECT_EQ(check_pattern(in.data() + kPrefix, kDgramInject, 5), kDgramInject);
}

TEST_P(DgramTest, InjectLimits) {
    make_pair();
    std::vector<uint8_t> out(kDgramInject + 1), in(2000);
    EXPECT_RC(-FI_ENOSPC, fi_inject(a_->ep.get(), out.data(), kDgramInject + 1, a_->peer));
    iovec iov{out.data(), kDgramInject + 1};
    fi_msg msg{};
    msg.msg_iov = &iov;
    msg.iov_count = 1;
    msg.addr = a_->peer;
    EXPECT_RC(-FI_ENOSPC, fi_sendmsg(a_->ep.get(), &msg, FI_INJECT));

    fill_pattern(out.data(), kDgramInject, 3);
    recv(*b_, in.data(), in.size(), nullptr);
    ASSERT_OK(fi_inject(a_->ep.get(), out.data(), kDgramInject, a_->peer));
    std::memset(out.data(), 0, out.size());  // the data was taken at post time
    const Entry rx = wait_rx(*b_);
    EXPECT_EQ(rx.len, kDgramInject);
    EXPECT_EQ(check_pattern(in.data(), kDgramInject, 3), kDgramInject);
}

TEST_P(DgramTest, IovCountAboveLimit) {
    make_pair();
    const size_t limit = a_->info->tx_attr->iov_limit;
    ASSERT_EQ(limit, 3u);
    std::vector<uint8_t> out(4 * 500);
    iovec iov[4];
    for (size_t i = 0; i < 4; i++)
        iov[i] = {out.data() + i * 500, 500};
    EXPECT_RC(-FI_ENOSPC, fi_sendv(a_->ep.get(), iov, nullptr, 4, a_->peer, nullptr));
}

TEST_P(DgramTest, SelectiveCompletionRefusedOnRecvCq) {
    auto e = bare_endpoint(Kind::dgram);
    Fid<fid_cq> cq = open_cq(FI_CQ_FORMAT_MSG);
    EXPECT_RC(-FI_EOPNOTSUPP, fi_ep_bind(e->ep.get(), cq.fid(), FI_RECV | FI_SELECTIVE_COMPLETION));
}

INSTANTIATE_TEST_SUITE_P(, DgramTest, ::testing::Values(Kind::dgram), kind_param_name);

}  // namespace

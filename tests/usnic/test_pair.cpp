// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Message traffic between two endpoints of one type (dgram, msg, rdm) in
// this process: round trips, streams of many messages of 0..200000 bytes in
// order with their content, messages sent before any receive is posted,
// scatter/gather, selective completion, inject and the unsupported op sets.
#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "fixture.hpp"

using namespace usnict;

namespace {

using ReliablePairTest = PairTest;

// One direction of traffic: n messages from `from` to `to`, sized by
// size_of(i), each with its own pattern; receives are posted `window` at a
// time. step() posts what it can and consumes completions.
class Stream {
  public:
    Stream(Endpoint &from, Endpoint &to, size_t n, std::vector<size_t> sizes, size_t window)
        : from_(from), to_(to), n_(n), sizes_(std::move(sizes)), window_(window), out_(n), in_(n) {}

    size_t size_of(size_t i) const { return sizes_[(i * 7 + 3) % sizes_.size()]; }
    bool done() const { return received_ == n_ && tx_done_ == n_; }

    // Returns whether anything moved.
    bool step() {
        bool moved = false;
        while (posted_ < n_ && posted_ - received_ < window_) {
            in_[posted_].assign(max_size() + 1, 0);
            const long rc = fi_recv(to_.ep.get(), in_[posted_].data(), in_[posted_].size(), nullptr,
                                    FI_ADDR_UNSPEC, &in_[posted_]);
            if (rc == -FI_EAGAIN) break;
            require_ok(rc, "fi_recv");
            posted_++;
            moved = true;
        }
        while (sent_ < n_ && sent_ - tx_done_ < window_) {
            out_[sent_].resize(size_of(sent_));
            fill_pattern(out_[sent_].data(), out_[sent_].size(), sent_);
            const long rc = fi_send(from_.ep.get(), out_[sent_].data(), out_[sent_].size(), nullptr,
                                    from_.peer, &out_[sent_]);
            if (rc == -FI_EAGAIN) break;
            require_ok(rc, "fi_send");
            sent_++;
            moved = true;
        }
        moved |= consume();
        return moved;
    }

  private:
    size_t max_size() const { return *std::max_element(sizes_.begin(), sizes_.end()); }
    bool consume() {
        bool moved = false;
        while (!to_.rx_done.empty()) {
            const Entry e = to_.rx_done.front();
            to_.rx_done.pop_front();
            const size_t i = received_++;
            EXPECT_EQ(e.err, 0) << "message " << i;
            EXPECT_EQ(e.ctx, &in_[i]) << "receives complete in order";
            EXPECT_EQ(e.flags, FI_MSG | FI_RECV);
            EXPECT_EQ(e.len, size_of(i)) << "message " << i << " arrived in order";
            EXPECT_EQ(check_pattern(in_[i].data(), size_of(i), i), size_of(i)) << "message " << i;
            in_[i] = {};
            moved = true;
        }
        while (!from_.tx_done.empty()) {
            const Entry e = from_.tx_done.front();
            from_.tx_done.pop_front();
            EXPECT_EQ(e.err, 0);
            EXPECT_EQ(e.flags, FI_MSG | FI_SEND);
            const auto *p = static_cast<const std::vector<uint8_t> *>(e.ctx);
            EXPECT_TRUE(p >= out_.data() && p < out_.data() + sent_) << "unknown send context";
            tx_done_++;
            moved = true;
        }
        return moved;
    }

    Endpoint &from_;
    Endpoint &to_;
    size_t n_;
    std::vector<size_t> sizes_;
    size_t window_;
    std::vector<std::vector<uint8_t>> out_, in_;
    size_t posted_ = 0, sent_ = 0, received_ = 0, tx_done_ = 0;
};

const std::vector<size_t> kBigSizes = {0,    1,     63,    64,    65,     1000,   1472,  4096,
                                       8972, 65507, 65536, 65537, 131072, 199999, 200000};

size_t window_of(const Endpoint &e) {
    return std::min<size_t>({e.info->tx_attr->size, e.info->rx_attr->size, 48});
}

TEST_P(PairTest, SmallRoundTripBothWays) {
    make_pair();
    for (int dir = 0; dir < 2; dir++) {
        Endpoint &from = dir ? *b_ : *a_, &to = dir ? *a_ : *b_;
        char out[48], in[64] = {};
        fill_pattern(out, sizeof(out), dir);
        int sctx = 0, rctx = 0;
        recv(to, in, sizeof(in), &rctx);
        send(from, out, sizeof(out), &sctx);
        const Entry rx = wait_rx(to);
        EXPECT_EQ(rx.ctx, &rctx);
        EXPECT_EQ(rx.flags, FI_MSG | FI_RECV);
        EXPECT_EQ(rx.len, sizeof(out));
        EXPECT_EQ(check_pattern(in, sizeof(out), dir), sizeof(out));
        const Entry tx = wait_tx(from);
        EXPECT_EQ(tx.ctx, &sctx);
        EXPECT_EQ(tx.flags, FI_MSG | FI_SEND);
    }
}

// FI_MSG_PREFIX on every endpoint type (beyond the seed for MSG and RDM): the payload
// travels after the prefix space, whose bytes count in the lengths passed and reported;
// a first buffer shorter than the prefix is refused.
TEST_P(PairTest, MessagePrefixRoundTrip) {
    EpOpts o;
    o.mode = FI_LOCAL_MR | FI_MSG_PREFIX;
    make_pair(o, o);
    ASSERT_NE(a_->info->mode & FI_MSG_PREFIX, 0u);
    ASSERT_EQ(a_->prefix(), kPrefix);
    const size_t pre = a_->prefix();
    size_t n = 0;
    for (size_t len : {size_t{0}, size_t{48}, size_t{5000}, std::min<size_t>(max_msg(), 100000)}) {
        SCOPED_TRACE(len);
        std::vector<uint8_t> out(pre + len), in(pre + len + 16, 0);
        fill_pattern(out.data() + pre, len, n);
        int sctx = 0, rctx = 0;
        recv(*b_, in.data(), in.size(), &rctx);
        send(*a_, out.data(), out.size(), &sctx);
        EXPECT_EQ(wait_tx(*a_).ctx, &sctx);
        const Entry rx = wait_rx(*b_);
        EXPECT_EQ(rx.ctx, &rctx);
        EXPECT_EQ(rx.err, 0);
        EXPECT_EQ(rx.len, pre + len);
        EXPECT_EQ(check_pattern(in.data() + pre, len, n), len);
        n++;
    }
    char short_buf[16] = {};
    EXPECT_RC(-FI_EINVAL,
              fi_send(a_->ep.get(), short_buf, sizeof(short_buf), nullptr, a_->peer, nullptr));
    EXPECT_RC(-FI_EINVAL, fi_recv(b_->ep.get(), short_buf, sizeof(short_buf), nullptr,
                                  FI_ADDR_UNSPEC, nullptr));
}

TEST_P(ReliablePairTest, ManyMessagesInOrder) {
    make_pair();
    Stream s(*a_, *b_, 120, kBigSizes, window_of(*a_));
    Deadline stall;
    while (!s.done()) {
        if (s.step()) stall = Deadline();
        if (stall.expired()) fatal("the stream stopped moving");
        progress();
    }
    EXPECT_TRUE(a_->rx_done.empty());
    EXPECT_TRUE(b_->tx_done.empty());
}

TEST_P(ReliablePairTest, ManyMessagesBothWaysAtOnce) {
    make_pair();
    Stream ab(*a_, *b_, 60, kBigSizes, window_of(*a_));
    Stream ba(*b_, *a_, 60, {0, 5, 64, 900, 3000, 70000, 150000}, window_of(*b_));
    Deadline stall;
    while (!ab.done() || !ba.done()) {
        const bool moved_ab = ab.step();
        const bool moved_ba = ba.step();
        if (moved_ab || moved_ba) stall = Deadline();
        if (stall.expired()) fatal("the streams stopped moving");
        progress();
    }
}

TEST_P(PairTest, SentBeforeAnyReceiveIsPosted) {
    make_pair();
    const std::vector<size_t> sizes =
        kind() == Kind::dgram ? std::vector<size_t>{0, 100, 950, 951, 5000, 9000, 1, 64}
                              : std::vector<size_t>{0, 100, 5000, 65536, 200000, 1, 64, 70000};
    const size_t n = sizes.size();
    std::vector<std::vector<uint8_t>> out(n), in(n);
    for (size_t i = 0; i < n; i++) {
        out[i].resize(sizes[i]);
        fill_pattern(out[i].data(), sizes[i], i + 40);
        send(*a_, out[i].data(), sizes[i], &out[i]);
    }
    for (int i = 0; i < 200; i++)
        progress();
    ASSERT_TRUE(b_->rx_done.empty()) << "a completion without a posted receive";
    for (size_t i = 0; i < n; i++) {
        in[i].assign(200001, 0);
        recv(*b_, in[i].data(), in[i].size(), &in[i]);
    }
    for (size_t i = 0; i < n; i++) {
        const Entry rx = wait_rx(*b_);
        EXPECT_EQ(rx.err, 0);
        EXPECT_EQ(rx.ctx, &in[i]);
        EXPECT_EQ(rx.len, sizes[i]);
        EXPECT_EQ(check_pattern(in[i].data(), sizes[i], i + 40), sizes[i]) << "message " << i;
    }
    for (size_t i = 0; i < n; i++)
        EXPECT_EQ(wait_tx(*a_).err, 0);
}

// Splits `total` into `n` unequal pieces of `buf`.
std::vector<iovec> split(uint8_t *buf, size_t total, size_t n, size_t skew) {
    std::vector<iovec> iov(n);
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = i + 1 == n ? total - off : std::min(total - off, total / n + (i * skew) % 97);
        iov[i] = {buf + off, len};
        off += len;
    }
    return iov;
}

TEST_P(PairTest, ScatterGather) {
    make_pair();
    const size_t ntx = std::min<size_t>(a_->info->tx_attr->iov_limit, 8);
    const size_t nrx = std::min<size_t>(b_->info->rx_attr->iov_limit, 8);
    ASSERT_GE(ntx, 2u);
    ASSERT_GE(nrx, 2u);
    const size_t total = kind() == Kind::dgram ? 3000 : 100000;
    for (int use_msg = 0; use_msg < 2; use_msg++) {
        SCOPED_TRACE(use_msg ? "sendmsg/recvmsg" : "sendv/recvv");
        std::vector<uint8_t> out(total), in(total + 16, 0);
        fill_pattern(out.data(), total, 50 + use_msg);
        std::vector<iovec> tiov = split(out.data(), total, ntx, 31);
        std::vector<iovec> riov = split(in.data(), total + 16, nrx, 57);
        int sctx = 0, rctx = 0;
        if (use_msg) {
            fi_msg rm{riov.data(), nullptr, riov.size(), FI_ADDR_UNSPEC, &rctx, 0};
            ASSERT_OK(fi_recvmsg(b_->ep.get(), &rm, 0));
            fi_msg sm{tiov.data(), nullptr, tiov.size(), a_->peer, &sctx, 0};
            ASSERT_OK(fi_sendmsg(a_->ep.get(), &sm, FI_COMPLETION));
        } else {
            ASSERT_OK(
                fi_recvv(b_->ep.get(), riov.data(), nullptr, riov.size(), FI_ADDR_UNSPEC, &rctx));
            ASSERT_OK(fi_sendv(a_->ep.get(), tiov.data(), nullptr, tiov.size(), a_->peer, &sctx));
        }
        const Entry rx = wait_rx(*b_);
        EXPECT_EQ(rx.ctx, &rctx);
        EXPECT_EQ(rx.err, 0);
        EXPECT_EQ(rx.len, total);
        EXPECT_EQ(check_pattern(in.data(), total, 50 + use_msg), total);
        EXPECT_EQ(wait_tx(*a_).ctx, &sctx);
    }
}

TEST_P(PairTest, SelectiveCompletion) {
    EpOpts oa;
    oa.tx_bind = FI_TRANSMIT | FI_SELECTIVE_COMPLETION;
    make_pair(oa, {});
    // Static: the last send never reports, so nothing says when a reliable endpoint is
    // done with its buffer (it resends from it until the peer acknowledges).
    static char out[32] = "selective";
    char in[3][64];
    int quiet = 0, loud = 0;
    for (auto &buf : in)
        recv(*b_, buf, sizeof(buf), nullptr);
    send(*a_, out, sizeof(out), &quiet);
    iovec iov{out, sizeof(out)};
    fi_msg msg{&iov, nullptr, 1, a_->peer, &loud, 0};
    ASSERT_OK(fi_sendmsg(a_->ep.get(), &msg, FI_COMPLETION));
    msg.context = &quiet;
    ASSERT_OK(fi_sendmsg(a_->ep.get(), &msg, 0));
    for (int i = 0; i < 3; i++)
        EXPECT_EQ(wait_rx(*b_).len, sizeof(out));
    // Only the FI_COMPLETION send reports; the others never do.
    EXPECT_EQ(wait_tx(*a_).ctx, &loud);
    for (int i = 0; i < 100; i++)
        progress();
    EXPECT_TRUE(a_->tx_done.empty()) << "a send without FI_COMPLETION completed";
}

TEST_P(PairTest, InjectNeverCompletes) {
    make_pair();
    const size_t limit = a_->info->tx_attr->inject_size;
    ASSERT_EQ(limit, kind() == Kind::dgram ? kDgramInject : kRudpInject);
    std::vector<uint8_t> out(limit), in(limit + 1);
    fill_pattern(out.data(), limit, 77);
    int marker = 0;
    recv(*b_, in.data(), in.size(), nullptr);
    recv(*b_, in.data(), in.size(), nullptr);
    ASSERT_OK(fi_inject(a_->ep.get(), out.data(), limit, a_->peer));
    send(*a_, out.data(), 1, &marker);
    const Entry first = wait_rx(*b_);
    EXPECT_EQ(first.len, limit);
    wait_rx(*b_);
    EXPECT_EQ(wait_tx(*a_).ctx, &marker) << "fi_inject generated a completion";
    for (int i = 0; i < 100; i++)
        progress();
    EXPECT_TRUE(a_->tx_done.empty());
}

// fi_rx_size_left is deprecated in the headers but part of the API.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
ssize_t rx_left(fid_ep *ep) {
    return fi_rx_size_left(ep);
}
#pragma GCC diagnostic pop

TEST_P(PairTest, ReceiveQueueFull) {
    make_pair();
    const size_t depth = b_->info->rx_attr->size;
    std::vector<uint8_t> in(depth * 8);
    for (size_t i = 0; i < depth; i++)
        ASSERT_OK(fi_recv(b_->ep.get(), &in[i * 8], 8, nullptr, FI_ADDR_UNSPEC, nullptr)) << i;
    EXPECT_EQ(rx_left(b_->ep.get()), 0);
    uint8_t extra[8];
    EXPECT_RC(-FI_EAGAIN, fi_recv(b_->ep.get(), extra, 8, nullptr, FI_ADDR_UNSPEC, nullptr));
    // One message frees one slot.
    char out[8] = "x";
    send(*a_, out, sizeof(out), nullptr);
    EXPECT_EQ(wait_rx(*b_).len, sizeof(out));
    EXPECT_EQ(rx_left(b_->ep.get()), 1);
    wait_tx(*a_);  // `out` is the send's until it completes (RDM: once acknowledged)
    b_.reset();    // the receives still posted name `in`, which goes first
}

// Without receives at the peer the sender must come to wait (-FI_EAGAIN)
// after a bounded number of messages, and nothing is lost: once receives are
// posted every message arrives, in order, and every send completes.
TEST_P(ReliablePairTest, SenderWaitsWithoutReceives) {
    make_pair();
    constexpr size_t kCap = 100000;
    std::vector<uint64_t> out;
    out.reserve(kCap);
    bool waiting = false;
    while (out.size() < kCap && !waiting) {
        out.push_back(out.size());
        long rc = fi_send(a_->ep.get(), &out.back(), 8, nullptr, a_->peer, nullptr);
        for (int i = 0; i < 100 && rc == -FI_EAGAIN; i++) {
            progress();
            rc = fi_send(a_->ep.get(), &out.back(), 8, nullptr, a_->peer, nullptr);
        }
        if (rc == -FI_EAGAIN) {
            out.pop_back();
            waiting = true;
        } else {
            ASSERT_OK(rc) << "send " << out.size();
        }
    }
    ASSERT_TRUE(waiting) << "the peer took " << kCap << " messages without a posted receive";
    EXPECT_GE(out.size(), a_->info->tx_attr->size);
    EXPECT_TRUE(b_->rx_done.empty());
    std::vector<uint64_t> in(out.size(), ~0ULL);
    size_t posted = 0, completed = 0;
    for (size_t got = 0; got < in.size(); got++) {
        while (posted < in.size() && posted - got < b_->info->rx_attr->size) {
            recv(*b_, &in[posted], 8, nullptr);
            posted++;
        }
        ASSERT_EQ(wait_rx(*b_).len, 8u);
        ASSERT_EQ(in[got], got) << "message " << got << " out of order";
        completed += a_->tx_done.size();
        a_->tx_done.clear();
    }
    for (; completed < out.size(); completed++)
        EXPECT_EQ(wait_tx(*a_).err, 0);
}

TEST_P(ReliablePairTest, InjectAboveLimit) {
    make_pair();
    std::vector<uint8_t> out(kRudpInject + 1);
    EXPECT_RC(-FI_EINVAL, fi_inject(a_->ep.get(), out.data(), kRudpInject + 1, a_->peer));
}

TEST_P(ReliablePairTest, Truncation) {
    make_pair();
    std::vector<uint8_t> out(5000), small(100), big(6000);
    fill_pattern(out.data(), out.size(), 11);
    int rctx = 0;
    recv(*b_, small.data(), small.size(), &rctx);
    send(*a_, out.data(), out.size(), nullptr);
    const Entry rx = wait_rx(*b_);
    EXPECT_EQ(rx.ctx, &rctx);
    EXPECT_EQ(rx.err, FI_ETRUNC);
    EXPECT_EQ(check_pattern(small.data(), small.size(), 11), small.size());
    wait_tx(*a_);
    // The connection goes on working.
    recv(*b_, big.data(), big.size(), nullptr);
    send(*a_, out.data(), out.size(), nullptr);
    const Entry next = wait_rx(*b_);
    EXPECT_EQ(next.err, 0);
    EXPECT_EQ(next.len, out.size());
    EXPECT_EQ(check_pattern(big.data(), out.size(), 11), out.size());
    wait_tx(*a_);  // `out` is the send's until it completes (RDM: once acknowledged)
}

TEST_P(PairTest, UnsupportedOperations) {
    make_pair();
    fid_ep *ep = a_->ep.get();
    uint64_t buf[4] = {};
    EXPECT_RC(-FI_ENOSYS, fi_write(ep, buf, 8, nullptr, a_->peer, 0, 0, nullptr));
    EXPECT_RC(-FI_ENOSYS, fi_read(ep, buf, 8, nullptr, a_->peer, 0, 0, nullptr));
    EXPECT_RC(-FI_ENOSYS, fi_inject_write(ep, buf, 8, a_->peer, 0, 0));
    EXPECT_RC(-FI_ENOSYS, fi_tsend(ep, buf, 8, nullptr, a_->peer, 1, nullptr));
    EXPECT_RC(-FI_ENOSYS, fi_trecv(ep, buf, 8, nullptr, FI_ADDR_UNSPEC, 1, 0, nullptr));
    EXPECT_RC(-FI_ENOSYS, fi_tinject(ep, buf, 8, a_->peer, 1));
    EXPECT_RC(-FI_ENOSYS,
              fi_atomic(ep, buf, 1, nullptr, a_->peer, 0, 0, FI_UINT64, FI_SUM, nullptr));
    EXPECT_RC(-FI_ENOSYS, fi_inject_atomic(ep, buf, 1, a_->peer, 0, 0, FI_UINT64, FI_SUM));
}

INSTANTIATE_TEST_SUITE_P(, PairTest, USNICT_ALL_KINDS, kind_param_name);
INSTANTIATE_TEST_SUITE_P(, ReliablePairTest, USNICT_RELIABLE_KINDS, kind_param_name);

}  // namespace

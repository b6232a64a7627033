// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Reliable messaging between two RDM endpoints, as both providers promise it: every size,
// every byte checked, posting order kept, messages that arrive before their receive kept,
// truncation reported, injected sends completing without an entry.
#include <algorithm>
#include <chrono>

#include "fixture.hpp"

namespace shared_test {
namespace {

void fill(std::vector<uint8_t> &b, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++)
        b[i] = static_cast<uint8_t>(i * 31 + seed);
}

bool intact(const std::vector<uint8_t> &b, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++)
        if (b[i] != static_cast<uint8_t>(i * 31 + seed)) return false;
    return true;
}

class SharedMsgTest : public SharedTest {
  protected:
    void SetUp() override {
        SharedTest::SetUp();
        if (IsSkipped() || HasFatalFailure()) return;
        connect_sides();
    }
    // One message from `from` to `to`, checked at both ends.
    void one_message(Side &from, Side &to, size_t n, unsigned seed) {
        Buffer src = buffer(from, n), dst = buffer(to, n);
        fill(src.bytes, n, seed);
        fi_context2 rctx, sctx;
        ASSERT_OK(fi_recv(to.ep.get(), dst.bytes.data(), n, dst.desc(), FI_ADDR_UNSPEC, &rctx));
        ASSERT_OK(fi_send(from.ep.get(), src.bytes.data(), n, src.desc(), from.peer, &sctx));
        fi_cq_msg_entry e;
        ASSERT_EQ(1, wait_cq(to, e)) << n << " bytes: no receive completion";
        EXPECT_EQ(&rctx, e.op_context);
        EXPECT_TRUE(e.flags & FI_RECV);
        EXPECT_EQ(n, e.len);
        EXPECT_TRUE(intact(dst.bytes, n, seed)) << n << " bytes arrived corrupted";
        ASSERT_EQ(1, wait_cq(from, e)) << n << " bytes: no send completion";
        EXPECT_EQ(&sctx, e.op_context);
        EXPECT_TRUE(e.flags & FI_SEND);
    }
    size_t max_msg() const {
        return std::min(a_.info->ep_attr->max_msg_size, b_.info->ep_attr->max_msg_size);
    }
};

TEST_P(SharedMsgTest, EverySizeBothWays) {
    for (size_t n : {1ul, 8ul, 64ul, 1000ul, 4096ul, 16384ul, 65536ul, 1ul << 20}) {
        if (n > max_msg()) break;
        one_message(a_, b_, n, static_cast<unsigned>(n));
        one_message(b_, a_, n, static_cast<unsigned>(n) + 1);
        if (HasFatalFailure()) return;
    }
}

TEST_P(SharedMsgTest, ReceivesCompleteInPostingOrder) {
    constexpr int kCount = 16;
    std::vector<Buffer> dst;
    std::vector<fi_context2> rctx(kCount), sctx(kCount);
    for (int i = 0; i < kCount; i++) {
        dst.push_back(buffer(b_, 8));
        ASSERT_OK(
            fi_recv(b_.ep.get(), dst[i].bytes.data(), 8, dst[i].desc(), FI_ADDR_UNSPEC, &rctx[i]));
    }
    std::vector<Buffer> src;
    for (int i = 0; i < kCount; i++) {
        src.push_back(buffer(a_, 8));
        fill(src[i].bytes, 8, static_cast<unsigned>(i));
        ASSERT_OK(fi_send(a_.ep.get(), src[i].bytes.data(), 8, src[i].desc(), a_.peer, &sctx[i]));
    }
    for (int i = 0; i < kCount; i++) {
        fi_cq_msg_entry e;
        ASSERT_EQ(1, wait_cq(b_, e));
        EXPECT_EQ(&rctx[i], e.op_context) << "receive " << i << " completed out of order";
        EXPECT_TRUE(intact(dst[i].bytes, 8, static_cast<unsigned>(i))) << "message " << i;
    }
    for (int i = 0; i < kCount; i++) {
        fi_cq_msg_entry e;
        ASSERT_EQ(1, wait_cq(a_, e));
    }
}

// Small sends posted right behind a large one (still waiting for window over a network)
// must neither overtake it nor be cut into it: each receive matches its own message.
TEST_P(SharedMsgTest, SmallSendsBehindALargeOneKeepTheirOrder) {
    const size_t big = std::min(max_msg(), size_t(1) << 20);
    const std::vector<size_t> sizes = {big, 8, 1, 3000, 64, 9000, 16};
    std::vector<Buffer> src, dst;
    std::vector<fi_context2> rctx(sizes.size()), sctx(sizes.size());
    for (size_t i = 0; i < sizes.size(); i++) {
        dst.push_back(buffer(b_, big));
        ASSERT_OK(fi_recv(b_.ep.get(), dst[i].bytes.data(), big, dst[i].desc(), FI_ADDR_UNSPEC,
                          &rctx[i]));
    }
    for (size_t i = 0; i < sizes.size(); i++) {
        src.push_back(buffer(a_, sizes[i]));
        fill(src[i].bytes, sizes[i], static_cast<unsigned>(i + 40));
        ssize_t rc;
        do {  // no progress between posts unless the queue is full
            rc = fi_send(a_.ep.get(), src[i].bytes.data(), sizes[i], src[i].desc(), a_.peer,
                         &sctx[i]);
            if (rc == -FI_EAGAIN) fi_cq_read(a_.cq.get(), nullptr, 0);
        } while (rc == -FI_EAGAIN);
        ASSERT_OK(rc);
    }
    // Matching keeps posting order; completions need not (a rendezvous receive completes
    // once its data is pulled, after the small ones behind it).
    std::vector<int> seen(sizes.size());
    for (size_t n = 0; n < sizes.size(); n++) {
        fi_cq_msg_entry e;
        ASSERT_EQ(1, wait_cq(b_, e)) << "completion " << n;
        auto *ctx = static_cast<fi_context2 *>(e.op_context);
        ASSERT_TRUE(ctx >= rctx.data() && ctx < rctx.data() + rctx.size()) << "a stray context";
        size_t i = size_t(ctx - rctx.data());
        EXPECT_EQ(1, ++seen[i]) << "receive " << i << " completed twice";
        EXPECT_EQ(sizes[i], e.len) << "receive " << i << " got another message";
        EXPECT_TRUE(intact(dst[i].bytes, sizes[i], static_cast<unsigned>(i + 40)))
            << "message " << i;
    }
    for (size_t i = 0; i < sizes.size(); i++) {
        fi_cq_msg_entry e;
        ASSERT_EQ(1, wait_cq(a_, e)) << "send completion " << i;
    }
}

TEST_P(SharedMsgTest, MessageSentBeforeItsReceiveIsKept) {
    Buffer src = buffer(a_, 100), dst = buffer(b_, 100);
    fill(src.bytes, 100, 7);
    fi_context2 sctx, rctx;
    ASSERT_OK(fi_send(a_.ep.get(), src.bytes.data(), 100, src.desc(), a_.peer, &sctx));
    // Let it travel (and be refused or stored) before any receive exists.
    fi_cq_msg_entry e;
    for (int i = 0; i < 1000; i++) {
        if (fi_cq_read(b_.cq.get(), &e, 1) == 1) b_.stash.push_back(e);
        if (fi_cq_read(a_.cq.get(), &e, 1) == 1) a_.stash.push_back(e);
    }
    EXPECT_TRUE(b_.stash.empty()) << "a completion on the receiver with no receive posted";
    ASSERT_OK(fi_recv(b_.ep.get(), dst.bytes.data(), 100, dst.desc(), FI_ADDR_UNSPEC, &rctx));
    ASSERT_EQ(1, wait_cq(b_, e));
    EXPECT_EQ(&rctx, e.op_context);
    EXPECT_TRUE(intact(dst.bytes, 100, 7));
    ASSERT_EQ(1, wait_cq(a_, e));
    EXPECT_EQ(&sctx, e.op_context);
}

TEST_P(SharedMsgTest, TruncationIsReportedWithWhatWasLeftOver) {
    Buffer src = buffer(a_, 64), dst = buffer(b_, 16);
    fill(src.bytes, 64, 3);
    fi_context2 sctx, rctx;
    ASSERT_OK(fi_recv(b_.ep.get(), dst.bytes.data(), 16, dst.desc(), FI_ADDR_UNSPEC, &rctx));
    ASSERT_OK(fi_send(a_.ep.get(), src.bytes.data(), 64, src.desc(), a_.peer, &sctx));
    fi_cq_msg_entry e;
    fi_cq_err_entry err{};
    ASSERT_RC(-FI_EAVAIL, wait_cq(b_, e, &err));
    EXPECT_EQ(FI_ETRUNC, err.err);
    EXPECT_EQ(&rctx, err.op_context);
    EXPECT_EQ(48u, err.olen) << "olen: the bytes that did not fit";
    ASSERT_EQ(1, wait_cq(a_, e)) << "the sender's side completes normally";
}

TEST_P(SharedMsgTest, InjectCompletesWithoutAnEntry) {
    size_t n = std::min<size_t>(8, a_.info->tx_attr->inject_size);
    ASSERT_GT(n, 0u);
    Buffer dst = buffer(b_, n);
    std::vector<uint8_t> src(n);
    fill(src, n, 9);
    fi_context2 rctx;
    ASSERT_OK(fi_recv(b_.ep.get(), dst.bytes.data(), n, dst.desc(), FI_ADDR_UNSPEC, &rctx));
    ASSERT_OK(fi_inject(a_.ep.get(), src.data(), n, a_.peer));
    std::fill(src.begin(), src.end(), 0);  // the buffer is ours again at once
    fi_cq_msg_entry e;
    ASSERT_EQ(1, wait_cq(b_, e));
    EXPECT_TRUE(intact(dst.bytes, n, 9));
    for (int i = 0; i < 1000; i++)
        if (fi_cq_read(a_.cq.get(), &e, 1) == 1) a_.stash.push_back(e);
    EXPECT_TRUE(a_.stash.empty()) << "fi_inject produced a completion entry";
}

// A CQ read hands out what is queued before progress runs again, but a CQ that never
// empties must still drive its endpoint. Here an endpoint sends to itself and reads one
// entry per send: over shared memory each send's completion is queued at once, so the CQ
// always holds one, and the receives must still complete during the loop, not after it.
TEST_P(SharedMsgTest, ACqThatNeverEmptiesStillDrivesItsEndpoint) {
    fi_addr_t self = FI_ADDR_NOTAVAIL;
    ASSERT_EQ(1, fi_av_insert(a_.av.get(), a_.name.data(), 1, &self, 0, nullptr));
    constexpr int kCount = 64;
    Buffer src = buffer(a_, 8), dst = buffer(a_, 8 * kCount);
    fill(src.bytes, 8, 5);
    std::vector<fi_context2> rctx(kCount), sctx(kCount);
    for (int i = 0; i < kCount; i++)
        ASSERT_OK(fi_recv(a_.ep.get(), dst.bytes.data() + 8 * i, 8, dst.desc(), FI_ADDR_UNSPEC,
                          &rctx[i]));
    int recvs = 0, sends = 0;
    auto read_one = [&] {
        fi_cq_msg_entry e;
        ssize_t rc = fi_cq_read(a_.cq.get(), &e, 1);
        if (rc == 1) (e.flags & FI_RECV ? recvs : sends)++;
        return rc;
    };
    for (int i = 0; i < kCount; i++) {
        ssize_t rc;
        while ((rc = fi_send(a_.ep.get(), src.bytes.data(), 8, src.desc(), self, &sctx[i])) ==
               -FI_EAGAIN)
            read_one();
        ASSERT_OK(rc);
        read_one();
    }
    const int during = recvs;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((recvs < kCount || sends < kCount) && std::chrono::steady_clock::now() < until) {
        ssize_t rc = read_one();
        ASSERT_TRUE(rc == 1 || rc == -FI_EAGAIN) << softnic_test::rc_str(rc);
    }
    EXPECT_EQ(kCount, recvs);
    EXPECT_EQ(kCount, sends);
    EXPECT_GE(during, kCount / 4) << "receives waited behind completions that were queued";
    for (int i = 0; i < kCount; i++)
        EXPECT_TRUE(std::equal(src.bytes.begin(), src.bytes.begin() + 8, dst.bytes.begin() + 8 * i))
            << "message " << i;
}

SHARED_INSTANTIATE(SharedMsgTest);

}  // namespace
}  // namespace shared_test

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// One-sided RMA (spec §6.2): write/read in every API form and size, offsets into the
// MR, inject writes, the target-side failures (unknown key, out of bounds, missing
// access) as FI_EIO error completions at the initiator, argument checks, and a target
// application that never calls in.
#include <rdma/fi_rma.h>

#include <chrono>
#include <cstring>

#include "one_sided.hpp"

using namespace cxit;

namespace {

class RmaTest : public OneSidedTest {};

TEST_P(RmaTest, WriteThenReadBackEverySize) {
    Pair &p = pair(opts());
    const size_t kMax = (1u << 20) + 3;
    uint64_t key = expose(p, kMax);
    for (size_t len :
         {size_t(0), size_t(1), size_t(64), size_t(4096), size_t(9000), size_t(65536), kMax}) {
        std::vector<uint8_t> out = pattern(len, uint32_t(len)), in(len, 0);
        Comp w = write(p, out, 0, key);
        EXPECT_EQ(FI_RMA | FI_WRITE, w.e.flags);
        ASSERT_TRUE(len == 0 || std::memcmp(target_.data(), out.data(), len) == 0)
            << "write of " << len;
        Comp r = read(p, in, 0, key);
        EXPECT_EQ(FI_RMA | FI_READ, r.e.flags);
        ASSERT_EQ(in, out) << "read of " << len;
    }
}

TEST_P(RmaTest, OffsetsAddressIntoTheRegion) {
    Pair &p = pair(opts());
    uint64_t key = expose(p, 4096);
    std::vector<uint8_t> out = pattern(100, 3), in(50);
    write(p, out, 1000, key);
    EXPECT_EQ(0xEE, target_[999]);
    EXPECT_EQ(0, std::memcmp(&target_[1000], out.data(), 100));
    EXPECT_EQ(0xEE, target_[1100]);
    read(p, in, 1025, key);
    EXPECT_EQ(0, std::memcmp(in.data(), out.data() + 25, 50));
    std::vector<uint8_t> last(1, 0x42);
    write(p, last, 4095, key);  // the last byte is inside
    EXPECT_EQ(0x42, target_[4095]);
}

TEST_P(RmaTest, VectorAndMsgForms) {
    Pair &p = pair(opts());
    uint64_t key = expose(p, 1024);
    std::vector<uint8_t> out = pattern(300, 9), in(300);
    iovec iov{out.data(), out.size()};
    int c1 = 0, c2 = 0, c3 = 0;
    post([&] { return fi_writev(p.a->ep(), &iov, nullptr, 1, p.a2b, 10, key, &c1); }, "writev");
    wait_comp(p.a->tx(), &c1, "writev");
    EXPECT_EQ(0, std::memcmp(&target_[10], out.data(), 300));
    iovec riov{in.data(), in.size()};
    fi_rma_iov rma{10, 300, key};
    fi_msg_rma msg{&riov, nullptr, 1, p.a2b, &rma, 1, &c2, 0};
    post([&] { return fi_readmsg(p.a->ep(), &msg, FI_COMPLETION); }, "readmsg");
    wait_comp(p.a->tx(), &c2, "readmsg");
    EXPECT_EQ(in, out);
    fi_rma_iov rma2{500, 300, key};
    fi_msg_rma wmsg{&iov, nullptr, 1, p.a2b, &rma2, 1, &c3, 0};
    post([&] { return fi_writemsg(p.a->ep(), &wmsg, FI_COMPLETION | FI_DELIVERY_COMPLETE); },
         "writemsg");
    wait_comp(p.a->tx(), &c3, "writemsg");
    EXPECT_EQ(0, std::memcmp(&target_[500], out.data(), 300));
}

// fi_inject_write: no completion entry, the buffer reusable at once, data delivered
// in order before a later write completes.
TEST_P(RmaTest, InjectWriteLandsWithoutACompletion) {
    Pair &p = pair(opts());
    uint64_t key = expose(p, 512);
    std::vector<uint8_t> buf = pattern(192, 5), copy = buf, more = pattern(8, 6);
    post([&] { return fi_inject_write(p.a->ep(), buf.data(), buf.size(), p.a2b, 0, key); },
         "inject_write");
    std::fill(buf.begin(), buf.end(), 0);  // the caller's buffer is free again
    write(p, more, 256, key);
    EXPECT_EQ(0, std::memcmp(target_.data(), copy.data(), copy.size()));
    p.a->tx().poll();
    EXPECT_EQ(0u, p.a->tx().ok_count());  // the write's entry (taken) was the only one
}

TEST_P(RmaTest, TargetFailuresAreEioAtTheInitiator) {
    Pair &p = pair(opts());
    uint64_t key = expose(p, 4096, FI_REMOTE_READ);  // no remote write
    std::vector<uint8_t> out = pattern(100, 1), in(100);
    expect_eio(
        p, [&](void *c) { return fi_write(p.a->ep(), out.data(), 100, nullptr, p.a2b, 0, key, c); },
        "write without FI_REMOTE_WRITE");
    expect_eio(
        p,
        [&](void *c) { return fi_read(p.a->ep(), in.data(), 100, nullptr, p.a2b, 4000, key, c); },
        "read past the end");
    expect_eio(
        p,
        [&](void *c) {
            return fi_read(p.a->ep(), in.data(), 100, nullptr, p.a2b, 0, key ^ 0x1234, c);
        },
        "read with an unknown key");
    EXPECT_EQ(std::vector<uint8_t>(4096, 0xEE), target_);
    read(p, in, 0, key);  // the endpoint still works
}

TEST_P(RmaTest, WriteOutOfBoundsAndBadKeyFailIncludingInject) {
    Pair &p = pair(opts());
    uint64_t key = expose(p, 4096, FI_REMOTE_WRITE);
    std::vector<uint8_t> out = pattern(100, 1), in(10);
    expect_eio(
        p,
        [&](void *c) { return fi_write(p.a->ep(), out.data(), 100, nullptr, p.a2b, 4050, key, c); },
        "write past the end");
    expect_eio(
        p, [&](void *c) { return fi_read(p.a->ep(), in.data(), 10, nullptr, p.a2b, 0, key, c); },
        "read without FI_REMOTE_READ");
    post([&] { return fi_inject_write(p.a->ep(), out.data(), 8, p.a2b, 0, key + 99); },
         "inject_write to an unknown key");
    ErrComp e = wait_err(p.a->tx(), nullptr, "inject_write error entry");
    EXPECT_EQ(FI_EIO, e.e.err);
    EXPECT_EQ(std::vector<uint8_t>(4096, 0xEE), target_);
}

// The hardware serves RMA without the target's help: b's application never polls
// (only a's CQ is read here, not every CQ as the wait helpers do).
TEST_P(RmaTest, TargetThatNeverCallsInIsServed) {
    Pair &p = pair(opts());
    uint64_t key = expose(p, 65536);
    std::vector<uint8_t> out = pattern(65536, 11), in(65536);
    auto served = [&](int *ctx) {
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (std::chrono::steady_clock::now() < deadline) {
            p.a->tx().poll();
            if (p.a->tx().take(ctx)) return true;
        }
        return false;
    };
    int c1 = 0, c2 = 0;
    ASSERT_OK(fi_write(p.a->ep(), out.data(), out.size(), nullptr, p.a2b, 0, key, &c1));
    ASSERT_TRUE(served(&c1)) << "write not served by the target's helper";
    ASSERT_OK(fi_read(p.a->ep(), in.data(), in.size(), nullptr, p.a2b, 0, key, &c2));
    ASSERT_TRUE(served(&c2)) << "read not served by the target's helper";
    EXPECT_EQ(in, out);
}

// FI_RMA_EVENT: the target's FI_REMOTE_WRITE / FI_REMOTE_READ counters and the MR's
// counter count successful remote operations; failed ones count nowhere.
TEST_P(RmaTest, RemoteCountersCountRemoteOperations) {
    EpOptions o = opts();
    o.caps |= FI_RMA_EVENT;
    Pair &p = pair(o);
    fid_domain *d = domain(peer_domain(), o);
    fi_cntr_attr attr{};
    attr.events = FI_CNTR_EVENTS_COMP;
    Fid<fid_cntr> rw, rr, mrc;
    ASSERT_OK(CXIT_OPEN(rw, fi_cntr_open(d, &attr, OUT, nullptr)));
    ASSERT_OK(CXIT_OPEN(rr, fi_cntr_open(d, &attr, OUT, nullptr)));
    ASSERT_OK(CXIT_OPEN(mrc, fi_cntr_open(d, &attr, OUT, nullptr)));
    ASSERT_OK(fi_ep_bind(p.b->ep(), &rw->fid, FI_REMOTE_WRITE));
    ASSERT_OK(fi_ep_bind(p.b->ep(), &rr->fid, FI_REMOTE_READ));
    target_.assign(256, 0);
    ASSERT_OK(CXIT_OPEN(mr_, fi_mr_reg(d, target_.data(), target_.size(), kRemote, 0, 0,
                                       FI_RMA_EVENT, OUT, nullptr)));
    ASSERT_OK(fi_mr_bind(mr_.get(), &p.b->ep()->fid, 0));
    ASSERT_OK(fi_mr_bind(mr_.get(), &mrc->fid, FI_REMOTE_WRITE));
    ASSERT_OK(fi_mr_enable(mr_.get()));
    uint64_t key = fi_mr_key(mr_.get());
    std::vector<uint8_t> out = pattern(64, 2), in(64);
    write(p, out, 0, key);
    write(p, out, 64, key);
    read(p, in, 0, key);
    expect_eio(
        p,
        [&](void *c) { return fi_write(p.a->ep(), out.data(), 64, nullptr, p.a2b, 250, key, c); },
        "write past the end");
    wait_until([&] { return fi_cntr_read(rw.get()) == 2 && fi_cntr_read(rr.get()) == 1; },
               "remote counters");
    EXPECT_EQ(2u, fi_cntr_read(mrc.get()));
    EXPECT_EQ(2u, fi_cntr_read(rw.get()));  // the failed write did not count
    mr_.reset();  // the MR and the endpoint go before the counters bound to them
    p_ = Pair{};
}

TEST_P(RmaTest, ArgumentChecks) {
    Pair &p = pair(opts());
    uint64_t key = expose(p, 4096);
    std::vector<uint8_t> buf(512);
    fid_ep *ep = p.a->ep();
    EXPECT_RC(-FI_EMSGSIZE, fi_inject_write(ep, buf.data(), 193, p.a2b, 0, key));
    EXPECT_RC(-FI_EINVAL, fi_write(ep, nullptr, 8, nullptr, p.a2b, 0, key, nullptr));
    iovec two[2] = {{buf.data(), 8}, {buf.data() + 8, 8}};
    EXPECT_RC(-FI_EINVAL, fi_readv(ep, two, nullptr, 2, p.a2b, 0, key, nullptr));
    fi_rma_iov rma[2] = {{0, 8, key}, {8, 8, key}};
    fi_msg_rma msg{two, nullptr, 1, p.a2b, rma, 2, nullptr, 0};
    EXPECT_RC(-FI_EINVAL, fi_writemsg(ep, &msg, 0));
    msg.rma_iov_count = 1;
    EXPECT_RC(-FI_EBADFLAGS, fi_writemsg(ep, &msg, FI_MULTI_RECV));
    EXPECT_RC(-FI_EBADFLAGS, fi_readmsg(ep, &msg, FI_INJECT));
}

TEST_P(RmaTest, ClientKeysAbove32BitsAreRejected) {
    Pair &p = pair(opts(false));
    uint64_t key = expose(p, 64, kRemote, false, 0x51);
    EXPECT_EQ(0x51u, key);
    std::vector<uint8_t> buf(8, 1);
    EXPECT_RC(-FI_EKEYREJECTED,
              fi_write(p.a->ep(), buf.data(), 8, nullptr, p.a2b, 0, 0x100000001ULL, nullptr));
    write(p, buf, 0, key);
    EXPECT_EQ(1, target_[7]);
}

TEST_P(RmaTest, EndpointWithoutRmaCapRefuses) {
    EpOptions o;
    o.caps = FI_MSG;
    Pair &p = pair(o);
    uint64_t v = 0;
    EXPECT_RC(-FI_EINVAL, fi_write(p.a->ep(), &v, 8, nullptr, p.a2b, 0, 1, nullptr));
}

}  // namespace

CXIT_INSTANTIATE_TRANSPORTS(RmaTest);

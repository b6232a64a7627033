// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// How one-sided operations travel, and the promises that hold either way: within a host
// writes and reads are a single copy between the address spaces (counted by softnic's
// counter 2526), between hosts they are packets; targets that count remote events are
// always served by packets; FI_ORDER_WAW across RMA and atomics and FI_FENCE hold (a
// fenced send waits for the read before it); a closed region is refused; more regions
// than the shared table holds still work.
#include <cassini_cntr_defs.h>
#include <rdma/fi_atomic.h>

#include <cstring>
#include <string>

#include "one_sided.hpp"

using namespace cxit;

namespace {

constexpr unsigned kSingleCopyRma = SOFTNIC_CNTR_SINGLE_COPY_RMA;  // <cassini_cntr_defs.h>
constexpr unsigned kLpeSuccess = C_CNTR_LPE_SUCCESS_CNTR;

class RmaPathTest : public OneSidedTest {
  protected:
    uint64_t caps() const override { return FI_MSG | FI_RMA | FI_ATOMIC | FI_FENCE; }
    uint64_t single_copies() { return hw(domain("cxi0", opts()), kSingleCopyRma); }
};

TEST_P(RmaPathTest, WithinAHostWritesAndReadsAreSingleCopy) {
    Pair &p = pair(opts());
    uint64_t key = expose(p, 1 << 20);
    fid_domain *target = domain(peer_domain(), opts());
    const uint64_t copies = single_copies();
    const uint64_t served = hw(target, kLpeSuccess);
    std::vector<uint8_t> big = pattern(1 << 20, 31), small = pattern(8, 32), back(65536);
    write(p, big, 0, key);
    write(p, small, 4096, key);
    read(p, back, 8192, key);
    EXPECT_EQ(0, std::memcmp(target_.data(), big.data(), 4096));
    EXPECT_EQ(0, std::memcmp(&target_[4096], small.data(), 8));
    EXPECT_EQ(0, std::memcmp(back.data(), &big[8192], back.size()));
    EXPECT_EQ(single_copy() ? 3u : 0u, single_copies() - copies);
    // The target NIC's telemetry counts the writes on either path.
    EXPECT_EQ(2u, hw(target, kLpeSuccess) - served);
}

TEST_P(RmaPathTest, TargetsThatCountEventsAreServedByPackets) {
    EpOptions o = opts();
    o.caps |= FI_RMA_EVENT;
    Pair &p = pair(o);
    fi_cntr_attr attr{};
    attr.events = FI_CNTR_EVENTS_COMP;
    Fid<fid_cntr> rw;
    ASSERT_OK(CXIT_OPEN(rw, fi_cntr_open(domain(peer_domain(), o), &attr, OUT, nullptr)));
    ASSERT_OK(fi_ep_bind(p.b->ep(), &rw->fid, FI_REMOTE_WRITE));
    uint64_t key = expose(p, 4096);
    const uint64_t copies = single_copies();
    write(p, pattern(4096, 5), 0, key);
    wait_until([&] { return fi_cntr_read(rw.get()) == 1; }, "remote write counted");
    EXPECT_EQ(0u, single_copies() - copies) << "an event-counting target was bypassed";
    EXPECT_EQ(pattern(4096, 5), target_);
    mr_.reset();
    p_ = Pair{};
}

// FI_ORDER_WAW (and FI_ORDER_ATOMIC_WAW): writes and atomics to one word, posted back
// to back, land in order. Any reordering changes the final value.
TEST_P(RmaPathTest, WritesAndAtomicsToOneWordLandInOrder) {
    Pair &p = pair(opts());
    uint64_t key = expose(p, 64);
    const int kOps = 200;
    std::vector<uint64_t> values(kOps);
    std::vector<int> ctx(kOps);
    const uint64_t one = 1;
    for (int i = 0; i < kOps; i++) {
        values[i] = uint64_t(i) * 10;
        if (i % 2 == 0)
            post(
                [&] { return fi_write(p.a->ep(), &values[i], 8, nullptr, p.a2b, 8, key, &ctx[i]); },
                "fi_write");
        else
            post(
                [&] {
                    return fi_atomic(p.a->ep(), &one, 1, nullptr, p.a2b, 8, key, FI_UINT64, FI_SUM,
                                     &ctx[i]);
                },
                "fi_atomic");
    }
    for (int i = 0; i < kOps; i++)
        wait_comp(p.a->tx(), &ctx[i], "operation " + std::to_string(i));
    uint64_t word = 0;
    std::memcpy(&word, &target_[8], 8);
    EXPECT_EQ(values[kOps - 2] + 1, word);
}

// FI_FENCE: a fenced read sees every write posted before it.
TEST_P(RmaPathTest, FencedReadSeesEarlierWrites) {
    Pair &p = pair(opts());
    const size_t len = 256 * 1024;
    uint64_t key = expose(p, len);
    for (uint32_t round = 0; round < 8; round++) {
        std::vector<uint8_t> out = pattern(len, 100 + round), in(len);
        int wctx = 0, rctx = 0;
        post([&] { return fi_write(p.a->ep(), out.data(), len, nullptr, p.a2b, 0, key, &wctx); },
             "fi_write");
        iovec iov{in.data(), len};
        fi_rma_iov rma{0, len, key};
        fi_msg_rma msg{&iov, nullptr, 1, p.a2b, &rma, 1, &rctx, 0};
        post([&] { return fi_readmsg(p.a->ep(), &msg, FI_FENCE | FI_COMPLETION); },
             "fi_readmsg FI_FENCE");
        wait_comp(p.a->tx(), &wctx, "write");
        wait_comp(p.a->tx(), &rctx, "fenced read");
        EXPECT_EQ(out, in) << "round " << round;
    }
}

// FI_FENCE on a send: the message leaves only once the read before it completed, so a
// target that reuses its memory as the message arrives cannot change what the read
// returns. 4 MiB is more than a window: over packets (between hosts, or within a host
// without single copy) the read's data is still streaming when the message could go.
// A one-packet send that skipped the queue failed this (udp and fallback.shm).
TEST_P(RmaPathTest, FencedSendWaitsForAnEarlierRead) {
    Pair &p = pair(opts());
    const size_t len = 4 << 20;
    uint64_t key = expose(p, len);
    for (uint32_t round = 0; round < 4; round++) {
        const std::vector<uint8_t> before = pattern(len, 40 + round);
        std::memcpy(target_.data(), before.data(), len);
        std::vector<uint8_t> in(len);
        uint64_t note = 42 + round, got = 0;
        int rctx = 0, sctx = 0, rxctx = 0;
        ASSERT_OK(fi_recv(p.b->ep(), &got, sizeof(got), nullptr, FI_ADDR_UNSPEC, &rxctx));
        post([&] { return fi_read(p.a->ep(), in.data(), len, nullptr, p.a2b, 0, key, &rctx); },
             "fi_read");
        iovec iov{&note, sizeof(note)};
        fi_msg msg{&iov, nullptr, 1, p.a2b, &sctx, 0};
        post([&] { return fi_sendmsg(p.a->ep(), &msg, FI_FENCE | FI_COMPLETION); },
             "fi_sendmsg FI_FENCE");
        wait_comp(p.b->rx(), &rxctx, "fenced message");
        std::memset(target_.data(), 0, len);  // the target reuses its memory at once
        wait_comp(p.a->tx(), &rctx, "read");
        wait_comp(p.a->tx(), &sctx, "fenced send");
        EXPECT_EQ(42u + round, got);
        EXPECT_EQ(before, in) << "round " << round;
    }
}

TEST_P(RmaPathTest, ClosedRegionIsRefused) {
    Pair &p = pair(opts());
    uint64_t key = expose(p, 4096);
    std::vector<uint8_t> out = pattern(4096, 9);
    write(p, out, 0, key);
    mr_.reset();
    target_.assign(4096, 0xEE);  // the same memory, no longer registered
    expect_eio(
        p,
        [&](void *c) { return fi_write(p.a->ep(), out.data(), 4096, nullptr, p.a2b, 0, key, c); },
        "write to a closed MR");
    std::vector<uint8_t> in(64);
    expect_eio(
        p, [&](void *c) { return fi_read(p.a->ep(), in.data(), 64, nullptr, p.a2b, 0, key, c); },
        "read from a closed MR");
    EXPECT_EQ(std::vector<uint8_t>(4096, 0xEE), target_);
}

// More MRs than the shared table has slots: the rest are reached by packets.
TEST_P(RmaPathTest, MoreRegionsThanTheTableHoldsAllWork) {
    Pair &p = pair(opts());
    const size_t kRegions = 1100, kLen = 64;
    std::vector<uint8_t> mem(kRegions * kLen, 0);
    std::vector<Fid<fid_mr>> mrs(kRegions);
    fid_domain *d = domain(peer_domain(), opts());
    for (size_t i = 0; i < kRegions; i++) {
        ASSERT_OK(
            CXIT_OPEN(mrs[i], fi_mr_reg(d, &mem[i * kLen], kLen, kRemote, 0, 0, 0, OUT, nullptr)));
        ASSERT_OK(fi_mr_bind(mrs[i].get(), &p.b->ep()->fid, 0));
        ASSERT_OK(fi_mr_enable(mrs[i].get()));
    }
    const uint64_t copies = single_copies();
    for (size_t i = 0; i < kRegions; i++)
        write(p, pattern(kLen, uint32_t(i)), 0, fi_mr_key(mrs[i].get()));
    for (size_t i = 0; i < kRegions; i++)
        ASSERT_EQ(0, std::memcmp(&mem[i * kLen], pattern(kLen, uint32_t(i)).data(), kLen))
            << "region " << i;
    uint64_t n = single_copies() - copies;
    if (single_copy()) {
        EXPECT_GE(n, 1000u);
        EXPECT_LT(n, kRegions);
    } else {
        EXPECT_EQ(0u, n);
    }
    mrs.clear();
}

CXIT_INSTANTIATE_TRANSPORTS(RmaPathTest);

}  // namespace

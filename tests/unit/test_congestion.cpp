// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A UDP channel's congestion window and slot ring, on their own: how the window grows,
// when it halves, how a timeout collapses it, that it stays between its floor and the
// flow-control window; that the ring keeps each slot under its sequence as it resizes.
#include <gtest/gtest.h>

#include "transport/udp/congestion.hpp"
#include "transport/udp/seq_ring.hpp"

using softnic::transport::udp::CongestionWindow;

TEST(CongestionWindow, SlowStartDoublesThenGrowsByOnePerWindow) {
    CongestionWindow w(256);
    EXPECT_EQ(w.packets(), CongestionWindow::kInitial);
    uint64_t una = 0;
    // Below the threshold (the whole window at first) each acknowledged packet adds one.
    for (int round = 0; round < 4; round++) {
        uint32_t n = w.packets();
        w.on_acked(n, una += n);
        EXPECT_EQ(w.packets(), std::min<uint32_t>(2 * n, 256));
    }
    EXPECT_EQ(w.packets(), 256u);
    w.on_acked(1000, una += 1000);
    EXPECT_EQ(w.packets(), 256u) << "never past the flow-control window";
}

TEST(CongestionWindow, ALossHalvesOncePerWindow) {
    CongestionWindow w(256);
    uint64_t una = 0, next = 0;
    while (w.packets() < 128) {
        uint32_t n = w.packets();
        next += n;
        w.on_acked(n, una = next);
    }
    ASSERT_EQ(w.packets(), 128u);
    next += 128;  // a window in flight, and losses found in it
    EXPECT_TRUE(w.on_loss(una, next));
    EXPECT_EQ(w.packets(), 64u);
    EXPECT_FALSE(w.on_loss(una + 10, next)) << "a second loss of the same window";
    EXPECT_EQ(w.packets(), 64u);
    w.on_acked(50, una + 50);  // still repairing: no growth
    EXPECT_EQ(w.packets(), 64u);
    una = next;  // repaired: additive increase, one packet per window acknowledged
    w.on_acked(64, una);
    EXPECT_EQ(w.packets(), 65u);
    w.on_acked(32, una += 32);
    EXPECT_EQ(w.packets(), 65u);
    EXPECT_TRUE(w.on_loss(una, una + 65)) << "a loss in a later window cuts again";
    EXPECT_EQ(w.packets(), 32u);
}

TEST(CongestionWindow, ATimeoutCollapsesItAndSlowStartRefillsHalf) {
    CongestionWindow w(256);
    uint64_t una = 0;
    for (int i = 0; i < 3; i++)
        w.on_acked(w.packets(), una += w.packets());
    ASSERT_EQ(w.packets(), 128u);
    uint64_t next = una + 128;
    w.on_timeout(next, true);
    EXPECT_EQ(w.packets(), CongestionWindow::kMin);
    w.on_timeout(next, false);  // backing off further: the mark stays at half the old window
    EXPECT_EQ(w.packets(), CongestionWindow::kMin);
    w.on_acked(100, una + 100);
    EXPECT_EQ(w.packets(), CongestionWindow::kMin)
        << "no growth before the lost window is repaired";
    una = next;
    while (w.packets() < 64) {
        uint32_t before = w.packets();
        w.on_acked(before, una += before);
        ASSERT_GT(w.packets(), before);
    }
    EXPECT_EQ(w.packets(), 64u) << "slow start stops at half the window the timeout found";
    w.on_acked(64, una += 64);
    EXPECT_EQ(w.packets(), 65u);
}

TEST(CongestionWindow, NeverBelowItsFloorNorAboveASmallWindow) {
    CongestionWindow tiny(1);
    EXPECT_GE(tiny.packets(), CongestionWindow::kMin);
    CongestionWindow w(8);
    EXPECT_EQ(w.packets(), 8u) << "a flow-control window below the initial one bounds it";
    uint64_t una = 0;
    for (int i = 0; i < 10; i++) {
        EXPECT_TRUE(w.on_loss(una, una + 8));
        una += 8;
        EXPECT_GE(w.packets(), CongestionWindow::kMin);
    }
    EXPECT_EQ(w.packets(), CongestionWindow::kMin);
}

// The slot ring under the window: sized by need, found by sequence.
using softnic::transport::udp::SeqRing;

TEST(SeqRing, GrowingKeepsEverySlotUnderItsSequence) {
    SeqRing<uint64_t> r(16, 256);
    EXPECT_EQ(r.size(), 16u);
    uint64_t lo = 1000;  // any start: sequences run on past the ring's size
    for (uint64_t s = lo; s < lo + 16; s++)
        r[s] = s;
    r.grow(lo, 40);
    EXPECT_EQ(r.size(), 64u) << "the next power of two";
    for (uint64_t s = lo; s < lo + 16; s++)
        EXPECT_EQ(r[s], s);
    r.grow(lo, 100000);
    EXPECT_EQ(r.size(), 256u) << "never past the window";
    for (uint64_t s = lo; s < lo + 16; s++)
        EXPECT_EQ(r[s], s);
}

TEST(SeqRing, ShrinkingKeepsTheFirstSlotsFromTheLowSequence) {
    SeqRing<uint64_t> r(16, 300);
    EXPECT_EQ(r.max(), 512u) << "a window that is no power of two gets a ring that is";
    r.grow(5, 200);
    ASSERT_TRUE(r.grown());
    for (uint64_t s = 5; s < 205; s++)
        r[s] = s;
    r.shrink(190);
    EXPECT_FALSE(r.grown());
    EXPECT_EQ(r.size(), 16u);
    for (uint64_t s = 190; s < 205; s++)
        EXPECT_EQ(r[s], s);
}

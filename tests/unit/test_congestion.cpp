// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A UDP channel's congestion window on its own: how it grows, that a receiver's mark
// halves it once per window, that it stays between its floor and the flow-control window.
#include <gtest/gtest.h>

#include "transport/udp/congestion.hpp"

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

TEST(CongestionWindow, AMarkHalvesItOncePerWindow) {
    CongestionWindow w(256);
    uint64_t una = 0, next = 0;
    while (w.packets() < 128) {
        uint32_t n = w.packets();
        next += n;
        w.on_acked(n, una = next);
    }
    ASSERT_EQ(w.packets(), 128u);
    next += 128;  // a window in flight, and the receiver marks its acknowledgements
    EXPECT_TRUE(w.on_congestion(una, next));
    EXPECT_EQ(w.packets(), 64u);
    EXPECT_FALSE(w.on_congestion(una + 10, next)) << "a second mark of the same window";
    EXPECT_EQ(w.packets(), 64u);
    w.on_acked(50, una + 50);  // the marked window is still out: no growth
    EXPECT_EQ(w.packets(), 64u);
    una = next;  // all acknowledged: additive increase, one packet per window
    w.on_acked(64, una);
    EXPECT_EQ(w.packets(), 65u);
    w.on_acked(32, una += 32);
    EXPECT_EQ(w.packets(), 65u);
    EXPECT_TRUE(w.on_congestion(una, una + 65)) << "a mark in a later window cuts again";
    EXPECT_EQ(w.packets(), 32u);
}

TEST(CongestionWindow, ATimeoutCollapsesItAndSlowStartRefillsHalf) {
    CongestionWindow w(256);
    uint64_t una = 0;
    for (int i = 0; i < 3; i++) {
        uint32_t n = w.packets();
        w.on_acked(n, una += n);
    }
    ASSERT_EQ(w.packets(), 128u);
    uint64_t next = una + 128;
    w.on_timeout(next, true);
    EXPECT_EQ(w.packets(), CongestionWindow::kMin);
    w.on_timeout(next, false);  // backing off further: the mark stays at half the old window
    EXPECT_EQ(w.packets(), CongestionWindow::kMin);
    EXPECT_FALSE(w.on_congestion(una, next)) << "the timed-out window is not cut again";
    while (w.packets() < 64) {  // slow start from the next acknowledgement on
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
        EXPECT_TRUE(w.on_congestion(una, una + 8));
        una += 8;
        EXPECT_GE(w.packets(), CongestionWindow::kMin);
    }
    EXPECT_EQ(w.packets(), CongestionWindow::kMin);
}

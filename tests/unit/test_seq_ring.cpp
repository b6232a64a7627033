// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The slot ring under a UDP channel's window, on its own: sized by need, each slot found
// by its sequence however the ring is resized.
#include <gtest/gtest.h>

#include "transport/udp/seq_ring.hpp"

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

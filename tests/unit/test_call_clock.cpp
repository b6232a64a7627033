// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The measuring build's call clock (common/call_clock.hpp): how it sorts CQ reads and
// what it reports. Its call sites are compiled out of this build; its tally is not.
#include <gtest/gtest.h>

#include <string>

#include "common/call_clock.hpp"

namespace softnic::call_clock {
namespace {

// A read that found entries; the first empty read after it ends a drain; the empty reads
// after that are a wait. An error (a negative return other than -FI_EAGAIN) counts as empty.
TEST(CallClock, SortsReadsByWhatTheyReturned) {
    Tally t;
    t.add_read(-11, 5, 0);  // nothing found yet: a wait
    t.add_read(1, 100, 0);
    t.add_read(-11, 20, 0);
    t.add_read(-11, 7, 0);
    t.add_read(-11, 9, 0);
    t.add_read(3, 80, 0);
    t.add_read(-259, 30, 0);  // -FI_EAVAIL right after entries: the drain's end all the same
    EXPECT_EQ(t.calls(Call::kReadFound), 2u);
    EXPECT_EQ(t.ticks(Call::kReadFound), 180u);
    EXPECT_EQ(t.calls(Call::kReadDrain), 2u);
    EXPECT_EQ(t.ticks(Call::kReadDrain), 50u);
    EXPECT_EQ(t.calls(Call::kReadIdle), 3u);
    EXPECT_EQ(t.ticks(Call::kReadIdle), 21u);
}

// One line per kind of call made, in ns per call once the clock's own ticks are taken off.
TEST(CallClock, ReportsEachCallMadeWithoutTheClocksOwnCost) {
    Tally t;
    t.add(Call::kInject, 300);
    t.add(Call::kInject, 340);
    t.add(Call::kRecv, 64);
    char buf[1024] = {};
    FILE *out = fmemopen(buf, sizeof(buf) - 1, "w");
    ASSERT_NE(out, nullptr);
    t.report(out, 2.0, 20);  // 2 ticks a ns; a reading costs 20 ticks
    fclose(out);
    const std::string s(buf);
    EXPECT_NE(s.find("inject"), std::string::npos) << s;
    EXPECT_NE(s.find("150.0 ns each"), std::string::npos) << s;  // (320 - 20) / 2
    EXPECT_NE(s.find("22.0 ns each"), std::string::npos) << s;   // (64 - 20) / 2
    EXPECT_EQ(s.find("send"), std::string::npos) << s;
    EXPECT_EQ(s.find("read"), std::string::npos) << s;
}

// The A/B split: blocks of kAbBlock messages, every other one "on"; the warm-up blocks
// are left out, and each half's time per message comes from its own blocks.
TEST(CallClock, SplitsARunIntoOffAndOnBlocks) {
    Tally t;
    constexpr uint64_t kB = Tally::kAbBlock;
    uint64_t at = 0;
    for (uint64_t block = 0; block < Tally::kAbWarm + 6; block++) {
        const bool on = block & 1;
        for (uint64_t m = 0; m < kB; m++) {
            EXPECT_EQ(on, t.ab_on()) << "block " << block << ", message " << m;
            at += on ? 90 : 100;  // the change under trial saves 10 %
            t.add_read(1, 5, at);
        }
    }
    EXPECT_DOUBLE_EQ(t.ab_ticks(false), 100.0);
    EXPECT_DOUBLE_EQ(t.ab_ticks(true), 90.0);
    char buf[1024] = {};
    FILE *out = fmemopen(buf, sizeof(buf) - 1, "w");
    ASSERT_NE(out, nullptr);
    t.report(out, 1.0, 0);
    fclose(out);
    EXPECT_NE(std::string(buf).find("on/off 0.9000"), std::string::npos) << buf;
    // A read of several entries may cross a boundary: the block it ends is counted whole.
    Tally u;
    u.add_read(int(kB) * 11 + 3, 1, 1000);
    EXPECT_TRUE(u.ab_on());
    EXPECT_DOUBLE_EQ(u.ab_ticks(false), 0.0);  // still within the warm-up
}

// The build that runs this test does not measure: the ops tables hold the calls
// themselves, not timed wrappers.
ssize_t plain_call(int x) {
    return x + 1;
}
TEST(CallClock, OffBuildsHandOutTheCallItself) {
    if (kOn) GTEST_SKIP() << "a measuring build";
    EXPECT_EQ((clocked<Call::kSend, plain_call>()), &plain_call);
}

// What a measuring build hands out instead, compiled here too: the call, counted.
TEST(CallClock, AWrappedEntryCallsThroughAndCounts) {
    const uint64_t sends = tally().calls(Call::kSend), reads = tally().calls(Call::kReadFound);
    EXPECT_EQ(8, (Clocked<Call::kSend, plain_call>::call(7)));
    EXPECT_EQ(sends + 1, tally().calls(Call::kSend));
    EXPECT_EQ(1, (Clocked<Call::kRead, plain_call>::call(0)));  // a read that found one
    EXPECT_EQ(reads + 1, tally().calls(Call::kReadFound));
}

}  // namespace
}  // namespace softnic::call_clock

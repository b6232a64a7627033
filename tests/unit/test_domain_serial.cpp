// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// DomainSerial (common/serial.hpp) on its own: an application thread that enters and
// leaves with plain stores, and a helper thread that comes in through membarrier(2),
// are never inside together, and each gets in. Then a CQ serialised by one, read by the
// application while the helper pushes into it.
#include <gtest/gtest.h>
#include <rdma/fi_eq.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "common/cq.hpp"
#include "common/serial.hpp"

using softnic::DomainSerial;

namespace {

// What both threads change inside: plain fields, so that two threads inside together
// leave them unequal (and a thread sanitizer sees the race).
struct Shared {
    uint64_t a = 0, b = 0;
    bool inside = false;
};

void touch(Shared &s, uint64_t by, std::atomic<int> &overlaps) {
    if (s.inside || s.a != s.b) overlaps.fetch_add(1);
    s.inside = true;
    s.a += by;
    s.b += by;
    s.inside = false;
}

}  // namespace

TEST(DomainSerial, TheHelperAndTheApplicationAreNeverInsideTogether) {
    if (!DomainSerial::available()) GTEST_SKIP() << "no membarrier(2) here";
    DomainSerial d;
    Shared s;
    std::atomic<int> overlaps{0};
    std::atomic<bool> done{false};
    std::atomic<uint64_t> helper_in{0}, helper_out{0};
    std::thread helper([&] {
        while (!done.load()) {
            if (d.helper_try_enter()) {
                touch(s, 1000, overlaps);
                d.helper_leave();
                helper_in++;
            } else {
                helper_out++;
            }
        }
    });
    constexpr uint64_t kCalls = 200000;
    for (uint64_t i = 0; i < kCalls; i++) {
        d.enter();
        if (i % 3 == 0) {  // nested, as a CQ read that progresses an engine
            d.enter();
            touch(s, 1, overlaps);
            d.leave();
        } else {
            touch(s, 1, overlaps);
        }
        d.leave();
        if (i % 5000 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    // Let the helper in at least once more, whatever the scheduler did.
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (helper_in == 0 && std::chrono::steady_clock::now() < end)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    done.store(true);
    helper.join();
    EXPECT_EQ(0, overlaps.load());
    EXPECT_GT(helper_in.load(), 0u) << "the helper never got in";
    EXPECT_EQ(s.a, kCalls + 1000 * helper_in.load());
    EXPECT_EQ(s.a, s.b);
    RecordProperty("helper_in", std::to_string(helper_in.load()));
    RecordProperty("helper_refused", std::to_string(helper_out.load()));
}

TEST(DomainSerial, TheHelperStaysOutWhileTheApplicationIsInside) {
    if (!DomainSerial::available()) GTEST_SKIP() << "no membarrier(2) here";
    DomainSerial d;
    d.enter();
    bool got = true;
    std::thread([&] { got = d.helper_try_enter(); }).join();
    EXPECT_FALSE(got) << "the helper came in while the application was inside";
    d.leave();
    std::thread([&] {
        got = d.helper_try_enter();
        if (got) d.helper_leave();
    }).join();
    EXPECT_TRUE(got) << "the helper was kept out of an empty domain";
}

// The application waits out a helper that is inside, then goes on.
TEST(DomainSerial, TheApplicationWaitsForTheHelperToLeave) {
    if (!DomainSerial::available()) GTEST_SKIP() << "no membarrier(2) here";
    DomainSerial d;
    std::atomic<bool> in{false}, release{false}, entered{false};
    std::thread helper([&] {
        ASSERT_TRUE(d.helper_try_enter());
        in.store(true);
        while (!release.load())
            std::this_thread::yield();
        EXPECT_FALSE(entered.load()) << "the application came in while the helper was inside";
        d.helper_leave();
    });
    while (!in.load())
        std::this_thread::yield();
    std::thread app([&] {
        d.enter();
        entered.store(true);
        d.leave();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(entered.load());
    release.store(true);
    helper.join();
    app.join();
    EXPECT_TRUE(entered.load());
}

// fi_cq_sread on a serialised CQ takes under the domain's serial, as fi_cq_read does:
// the helper's pushes take nothing else (Cq::push_locked). The helper pushes a numbered
// stream in bursts while the application takes it with sread; every entry must arrive
// once, in order. With sread on the CQ's spinlock instead (the bug of 478aeca's parent),
// the two raced on the ring's count: 8 runs of 8 failed, mostly with -FI_EAVAIL.
TEST(DomainSerial, AnSreadTakesWhatTheHelperPushesOnceAndInOrder) {
    if (!DomainSerial::available()) GTEST_SKIP() << "no membarrier(2) here";
    DomainSerial d;
    fi_cq_attr attr{};
    attr.format = FI_CQ_FORMAT_CONTEXT;
    attr.wait_obj = FI_WAIT_FD;
    softnic::Cq cq(FI_VERSION(1, 15), attr, 1024, nullptr, nullptr);
    cq.serialise_by(&d);
    constexpr uintptr_t kEntries = 400000;
    std::thread helper([&] {
        uintptr_t next = 1;
        while (next <= kEntries) {
            if (!d.helper_try_enter()) continue;  // the application is inside: again
            for (int k = 0; k < 32 && next <= kEntries; k++) {
                softnic::Completion c;
                c.op_context = reinterpret_cast<void *>(next++);
                cq.push(c);
            }
            d.helper_leave();
        }
    });
    uintptr_t want = 1, wrong = 0;
    ssize_t last = 0;
    while (want <= kEntries) {
        fi_cq_entry e[4];
        last = fi_cq_sread(cq.fid(), e, 4, nullptr, 10000);
        if (last <= 0) break;
        for (ssize_t i = 0; i < last; i++, want++)
            if (reinterpret_cast<uintptr_t>(e[i].op_context) != want) wrong++;
    }
    helper.join();
    EXPECT_GT(last, 0) << "sread returned " << last << " after " << want - 1 << " entries";
    EXPECT_EQ(kEntries + 1, want) << "entries taken";
    EXPECT_EQ(0u, wrong) << "entries out of order, repeated or garbled";
    fi_cq_entry extra;
    EXPECT_EQ(-FI_EAGAIN, fi_cq_read(cq.fid(), &extra, 1)) << "an entry left over";
}

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What the small-message fast paths remember between calls must never outlive what it
// was taken from: a send to an address that was removed, or removed and given to
// another peer, must not reach the old peer. And the fast paths hold at every threading
// level an application may ask for.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "fixture.hpp"

namespace shared_test {
namespace {

constexpr fi_threading kLevels[] = {FI_THREAD_SAFE, FI_THREAD_DOMAIN, FI_THREAD_COMPLETION,
                                    FI_THREAD_ENDPOINT};

class SharedFastPathTest : public SharedTest {
  protected:
    // One 8-byte message from `from` to `to` (its peer address `dest`), every byte and the
    // contexts checked.
    void eight_bytes(Side &from, Side &to, fi_addr_t dest, uint64_t value) {
        Buffer src = buffer(from, 8), dst = buffer(to, 8);
        std::memcpy(src.bytes.data(), &value, 8);
        fi_context2 rctx, sctx;
        ASSERT_OK(fi_recv(to.ep.get(), dst.bytes.data(), 8, dst.desc(), FI_ADDR_UNSPEC, &rctx));
        ASSERT_OK(fi_send(from.ep.get(), src.bytes.data(), 8, src.desc(), dest, &sctx));
        fi_cq_msg_entry e;
        ASSERT_EQ(1, wait_cq(to, e, nullptr, &from)) << "no receive completion";
        EXPECT_EQ(&rctx, e.op_context);
        EXPECT_EQ(8u, e.len);
        uint64_t got = 0;
        std::memcpy(&got, dst.bytes.data(), 8);
        EXPECT_EQ(value, got);
        // The send's completion may have come while the receive's was awaited: wait_cq
        // then finds it in from's stash.
        ASSERT_EQ(1, wait_cq(from, e, nullptr, &to)) << "no send completion";
        EXPECT_EQ(&sctx, e.op_context);
    }
    // x and y at threading `level`, each with the other in its AV. False when the
    // provider does not offer the level; a failure is recorded for the caller to stop on.
    bool open_pair(fi_threading level, Side &x, Side &y) {
        threading_ = level;
        fi_info *h = hints(GetParam().dom_a), *out = nullptr;
        int rc = fi_getinfo(FI_VERSION(1, 15), nullptr, nullptr, 0, h, &out);
        fi_freeinfo(h);
        if (rc == -FI_ENODATA) return false;
        EXPECT_EQ(0, rc) << fi_strerror(-rc);
        if (rc) return true;
        EXPECT_EQ(level, out->domain_attr->threading);
        fi_freeinfo(out);
        open_side(x, GetParam().dom_a);
        open_side(y, GetParam().dom_b);
        if (HasFailure()) return true;
        EXPECT_EQ(1, fi_av_insert(x.av.get(), y.name.data(), 1, &x.peer, 0, nullptr));
        EXPECT_EQ(1, fi_av_insert(y.av.get(), x.name.data(), 1, &y.peer, 0, nullptr));
        return true;
    }
    // Reads `s`'s CQ eight entries at a time, as a draining reader does, until `want`
    // entries came (their contexts, in order; reads_ counts the reads), driving `peer`'s
    // progress between reads; gives up after 10 s.
    std::vector<void *> drain_until(Side &s, size_t want, Side &peer) {
        std::vector<void *> got;
        reads_ = 0;
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (got.size() < want && std::chrono::steady_clock::now() < until) {
            fi_cq_msg_entry e[8];
            reads_++;
            ssize_t n = fi_cq_read(s.cq.get(), e, 8);
            if (n == -FI_EAGAIN) {
                fi_cq_read(peer.cq.get(), nullptr, 0);  // progress alone, no entry taken
                continue;
            }
            EXPECT_GT(n, 0) << fi_strerror(int(-n));
            if (n <= 0) break;
            for (ssize_t k = 0; k < n; k++)
                got.push_back(e[k].op_context);
        }
        return got;
    }
    int reads_ = 0;
    // body(level, x, y) on a fresh pair at each threading level the provider offers; at
    // least one must be.
    template <class Body>
    void for_each_level(Body body) {
        int levels = 0;
        for (fi_threading level : kLevels) {
            SCOPED_TRACE(fi_tostr(&level, FI_TYPE_THREADING));
            Side x, y;
            if (!open_pair(level, x, y)) continue;  // not offered at this level
            ASSERT_FALSE(HasFailure());
            body(level, x, y);
            if (HasFatalFailure()) return;
            levels++;
        }
        EXPECT_GE(levels, 1) << "no threading level offered";
    }
    // Reads `s`'s CQ for a while: how many entries arrived (none are expected).
    int stray_entries(Side &s) {
        int n = 0;
        for (int i = 0; i < 20000; i++) {
            fi_cq_msg_entry e;
            if (fi_cq_read(s.cq.get(), &e, 1) == 1) n++;
        }
        return n;
    }
};

// A run of sends to one peer, then its address is removed and another peer's inserted
// (the AV hands out the lowest free index again): the next sends reach the new peer, and
// the old one receives nothing more.
TEST_P(SharedFastPathTest, AnAddressGivenToAnotherPeerReachesTheNewOne) {
    Side c;
    open_side(c, GetParam().dom_b);
    ASSERT_FALSE(HasFatalFailure());
    connect_sides();
    fi_addr_t c_peer = FI_ADDR_NOTAVAIL;
    ASSERT_EQ(1, fi_av_insert(c.av.get(), a_.name.data(), 1, &c_peer, 0, nullptr));
    for (uint64_t i = 0; i < 16; i++) {
        eight_bytes(a_, b_, a_.peer, 0x1000 + i);
        if (HasFatalFailure()) return;
    }
    fi_addr_t old = a_.peer;
    ASSERT_OK(fi_av_remove(a_.av.get(), &old, 1, 0));
    fi_addr_t now = FI_ADDR_NOTAVAIL;
    ASSERT_EQ(1, fi_av_insert(a_.av.get(), c.name.data(), 1, &now, 0, nullptr));
    // b posts a receive that must stay unmatched.
    Buffer stray = buffer(b_, 8);
    fi_context2 bctx;
    ASSERT_OK(fi_recv(b_.ep.get(), stray.bytes.data(), 8, stray.desc(), FI_ADDR_UNSPEC, &bctx));
    for (uint64_t i = 0; i < 16; i++) {
        eight_bytes(a_, c, now, 0x2000 + i);
        if (HasFatalFailure()) return;
    }
    EXPECT_EQ(0, stray_entries(b_)) << "the old peer received a message sent to the new one";
    EXPECT_EQ(0, b_.ep.close()) << "b's receive names `stray`, which goes first";
}

// A send to an address that was removed fails; it does not reach the peer it named.
TEST_P(SharedFastPathTest, ASendToARemovedAddressReachesNobody) {
    connect_sides();
    for (uint64_t i = 0; i < 16; i++) {
        eight_bytes(a_, b_, a_.peer, 0x3000 + i);
        if (HasFatalFailure()) return;
    }
    fi_addr_t old = a_.peer;
    ASSERT_OK(fi_av_remove(a_.av.get(), &old, 1, 0));
    Buffer src = buffer(a_, 8), dst = buffer(b_, 8);
    fi_context2 rctx, sctx;
    ASSERT_OK(fi_recv(b_.ep.get(), dst.bytes.data(), 8, dst.desc(), FI_ADDR_UNSPEC, &rctx));
    ssize_t rc = fi_send(a_.ep.get(), src.bytes.data(), 8, src.desc(), old, &sctx);
    if (rc == 0) {  // accepted: it must then fail on the CQ, never arrive
        fi_cq_msg_entry e;
        fi_cq_err_entry err{};
        EXPECT_EQ(-FI_EAVAIL, wait_cq(a_, e, &err)) << "a send to a removed address succeeded";
    } else {
        EXPECT_LT(rc, 0);
    }
    EXPECT_EQ(0, stray_entries(b_)) << "a message sent to a removed address arrived";
    EXPECT_EQ(0, b_.ep.close()) << "b's receive names `dst`, which goes first";
}

// The 8-byte path at each threading level the provider offers: a ping-pong of checked
// messages both ways.
TEST_P(SharedFastPathTest, EightByteMessagesAtEveryThreadingLevel) {
    for_each_level([&](fi_threading level, Side &x, Side &y) {
        for (uint64_t i = 0; i < 64; i++) {
            eight_bytes(x, y, x.peer, uint64_t(level) * 1000 + i);
            eight_bytes(y, x, y.peer, uint64_t(level) * 1000 + i + 500);
            if (HasFatalFailure()) return;
        }
    });
}

// The drain ends at the reading thread's next receive post: Open MPI reads again at once,
// and is answered without a pass; MPICH reads once per progress call, posting its reply
// and its next receive in between, and every read of its progresses. Over shared memory,
// where a message is in the ring as fi_send returns.
TEST_P(SharedFastPathTest, AReceivePostedOnTheReadingThreadEndsTheDrain) {
    if (std::strcmp(GetParam().name, "cxi_shm") != 0) GTEST_SKIP() << "shared memory only";
    for_each_level([&](fi_threading, Side &x, Side &y) {
        Buffer xs = buffer(x, 8), yr = buffer(y, 24);
        int skipped = 0;
        for (uint64_t i = 0; i < 8; i++) {
            fi_context2 s1, s2, s3, r[3];
            for (int k = 0; k < 2; k++)
                ASSERT_OK(fi_recv(y.ep.get(), yr.bytes.data() + 8 * k, 8, yr.desc(), FI_ADDR_UNSPEC,
                                  &r[k]));
            ASSERT_OK(fi_send(x.ep.get(), xs.bytes.data(), 8, xs.desc(), x.peer, &s1));
            ASSERT_EQ(1u, drain_until(y, 1, x).size());  // ends short: 1 of 8
            // Another thread's send: this thread posted nothing, so its next read may be
            // answered without a pass, and the one after it finds the message.
            std::thread([&] {
                EXPECT_EQ(0, fi_send(x.ep.get(), xs.bytes.data(), 8, xs.desc(), x.peer, &s2));
            }).join();
            fi_cq_msg_entry e[8];
            ssize_t n = fi_cq_read(y.cq.get(), e, 8);
            if (n == -FI_EAGAIN) {
                skipped++;
                n = fi_cq_read(y.cq.get(), e, 8);
            }
            ASSERT_EQ(1, n) << fi_strerror(int(-n));
            EXPECT_EQ(&r[1], e[0].op_context);
            // A receive posted on this thread: the next read progresses and finds at once
            // the message already in the ring.
            ASSERT_OK(fi_send(x.ep.get(), xs.bytes.data(), 8, xs.desc(), x.peer, &s3));
            ASSERT_OK(
                fi_recv(y.ep.get(), yr.bytes.data() + 16, 8, yr.desc(), FI_ADDR_UNSPEC, &r[2]));
            n = fi_cq_read(y.cq.get(), e, 8);
            ASSERT_EQ(1, n) << "the read after a receive post skipped its pass: "
                            << fi_strerror(int(-n));
            EXPECT_EQ(&r[2], e[0].op_context);
            ASSERT_EQ(3u, drain_until(x, 3, y).size());
        }
        // The offload helper may queue a message before a read; it cannot do so every time.
        EXPECT_GT(skipped, 0) << "no read after a short one was answered without a pass";
        EXPECT_EQ(0, stray_entries(y));
    });
}

// Open MPI's mtl reads its CQ until a read finds nothing, asking for many entries at a
// time; the read after one that came back short may answer "nothing" without a progress
// pass (Cq::read's kDrainEnd). Whatever the level, every message arrives once and intact,
// an entry queued since is never held back, and only one read is ever answered so: over
// shared memory a message in the ring is found by the second read at the latest.
TEST_P(SharedFastPathTest, AReaderThatDrainsTheCqMissesNothing) {
    const bool shm = std::strcmp(GetParam().name, "cxi_shm") == 0;
    for_each_level([&](fi_threading, Side &x, Side &y) {
        Buffer xs = buffer(x, 8), xr = buffer(x, 8), ys = buffer(y, 8), yr = buffer(y, 16);
        for (uint64_t i = 0; i < 48; i++) {
            fi_context2 ping1, ping2, xrecv, ysend, r1, r2;
            ASSERT_OK(fi_recv(y.ep.get(), yr.bytes.data(), 8, yr.desc(), FI_ADDR_UNSPEC, &r1));
            ASSERT_OK(fi_recv(y.ep.get(), yr.bytes.data() + 8, 8, yr.desc(), FI_ADDR_UNSPEC, &r2));
            ASSERT_OK(fi_recv(x.ep.get(), xr.bytes.data(), 8, xr.desc(), FI_ADDR_UNSPEC, &xrecv));
            const uint64_t v1 = 0x5000 + i, v2 = 0x6000 + i, v3 = 0x7000 + i;
            std::memcpy(xs.bytes.data(), &v1, 8);
            ASSERT_OK(fi_send(x.ep.get(), xs.bytes.data(), 8, xs.desc(), x.peer, &ping1));
            std::vector<void *> got = drain_until(y, 1, x);  // ends short: 1 of 8
            ASSERT_EQ(1u, got.size());
            EXPECT_EQ(&r1, got[0]);
            // A message in y's ring after a short read: found by the next read but one at
            // the latest (over shared memory it is in the ring as fi_send returns).
            std::memcpy(xs.bytes.data(), &v2, 8);
            ASSERT_OK(fi_send(x.ep.get(), xs.bytes.data(), 8, xs.desc(), x.peer, &ping2));
            got = drain_until(y, 1, x);
            ASSERT_EQ(1u, got.size());
            EXPECT_EQ(&r2, got[0]);
            if (shm) {
                EXPECT_LE(reads_, 2) << "more than one read answered without progress";
            }
            // An entry queued after a short read: the next read returns it (over shared
            // memory a send completes as it is posted).
            std::memcpy(ys.bytes.data(), &v3, 8);
            ASSERT_OK(fi_send(y.ep.get(), ys.bytes.data(), 8, ys.desc(), y.peer, &ysend));
            got = drain_until(y, 1, x);
            ASSERT_EQ(1u, got.size());
            EXPECT_EQ(&ysend, got[0]);
            if (shm) {
                EXPECT_EQ(reads_, 1) << "a queued entry was held back";
            }
            got = drain_until(x, 3, y);
            ASSERT_EQ(3u, got.size());
            for (void *want : {static_cast<void *>(&ping1), static_cast<void *>(&ping2),
                               static_cast<void *>(&xrecv)})
                EXPECT_EQ(1, std::count(got.begin(), got.end(), want));
            uint64_t w[2], p = 0;
            std::memcpy(w, yr.bytes.data(), 16);
            std::memcpy(&p, xr.bytes.data(), 8);
            EXPECT_EQ(v1, w[0]);
            EXPECT_EQ(v2, w[1]);
            EXPECT_EQ(v3, p);
            if (HasFatalFailure()) return;
        }
        EXPECT_EQ(0, stray_entries(x));
        EXPECT_EQ(0, stray_entries(y));
    });
}

SHARED_INSTANTIATE(SharedFastPathTest);

}  // namespace
}  // namespace shared_test

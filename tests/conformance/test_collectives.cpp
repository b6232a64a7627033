// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// fi_collective(3) as fi_cxi(7) offers it: AV sets, fi_join_collective (FI_JOIN_COMPLETE
// on the EQ), barrier, broadcast, reduce and allreduce of up to 32 bytes, the op x
// datatype table, reduction errors, and a member that goes away. Two members, one on
// each of the transport's endpoints, over shared memory and UDP.
#include <cassini_cntr_defs.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_cxi_ext.h>
#include <rdma/fi_eq.h>

#include <array>
#include <cfenv>
#include <cmath>
#include <cstring>
#include <limits>

#include "fixture.hpp"

using namespace cxit;

namespace {

constexpr uint64_t kCollCaps = FI_MSG | FI_TAGGED | FI_COLLECTIVE;

std::vector<uint8_t> name_of(fid_ep *ep) {
    std::vector<uint8_t> a(8);
    size_t len = a.size();
    if (fi_getname(&ep->fid, a.data(), &len)) a.clear();
    a.resize(len);
    return a;
}

class CollTest : public TransportTest {
  protected:
    // One member of the group: its endpoint and joined group.
    struct Member {
        Endpoint *e = nullptr;
        CollGroup g;
        fi_addr_t self = FI_ADDR_NOTAVAIL, peer = FI_ADDR_NOTAVAIL;
        fi_addr_t group() const { return g.addr(); }
    };

    void SetUp() override {
        EpOptions o;
        o.caps = kCollCaps;
        p_ = make_pair(o, o);
        // The same order on both: a's endpoint is rank 0, b's rank 1.
        a_.e = p_.a.get();
        b_.e = p_.b.get();
        a_.self = a_.e->insert(name_of(a_.e->ep()));
        a_.peer = p_.a2b;
        b_.self = b_.e->insert(name_of(b_.e->ep()));
        b_.peer = p_.b2a;
        join_group(a_.g, fabric(), *a_.e, {a_.self, a_.peer}, &a_);
        join_group(b_.g, fabric(), *b_.e, {b_.peer, b_.self}, &b_);
    }

    // allreduce of `in_a` and `in_b` (count elements of dt); both results into `out_*`.
    void allreduce(const void *in_a, const void *in_b, void *out_a, void *out_b, size_t count,
                   fi_datatype dt, fi_op op) {
        int ca = 0, cb = 0;
        post(
            [&] {
                return fi_allreduce(a_.e->ep(), in_a, count, nullptr, out_a, nullptr, a_.group(),
                                    dt, op, 0, &ca);
            },
            "allreduce a");
        post(
            [&] {
                return fi_allreduce(b_.e->ep(), in_b, count, nullptr, out_b, nullptr, b_.group(),
                                    dt, op, 0, &cb);
            },
            "allreduce b");
        wait_comp(a_.e->tx(), &ca, "allreduce a");
        wait_comp(b_.e->tx(), &cb, "allreduce b");
    }

    Pair p_;  // declared first: the groups close before the endpoints
    Member a_, b_;
};

TEST_P(CollTest, BarrierCompletesOnBothOnlyOnceBothEntered) {
    int ca = 0, cb = 0;
    ASSERT_OK(fi_barrier(a_.e->ep(), a_.group(), &ca));
    progress_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(a_.e->tx().take(&ca)) << "the barrier completed with one member in it";
    ASSERT_OK(fi_barrier(b_.e->ep(), b_.group(), &cb));
    wait_comp(a_.e->tx(), &ca, "barrier a");
    Comp c = wait_comp(b_.e->tx(), &cb, "barrier b");
    EXPECT_TRUE(c.e.flags & FI_COLLECTIVE);
}

TEST_P(CollTest, BroadcastFromEitherRoot) {
    for (int root = 0; root < 2; root++) {
        uint64_t va[4] = {1, 2, 3, 4}, vb[4] = {9, 9, 9, 9};
        uint64_t *src = root ? vb : va, *dst = root ? va : vb;
        const uint64_t want[4] = {src[0], src[1], src[2], src[3]};
        fi_addr_t ra = root ? a_.peer : a_.self, rb = root ? b_.self : b_.peer;
        int ca = 0, cb = 0;
        post(
            [&] {
                return fi_broadcast(a_.e->ep(), va, 4, nullptr, a_.group(), ra, FI_UINT64, 0, &ca);
            },
            "broadcast a");
        post(
            [&] {
                return fi_broadcast(b_.e->ep(), vb, 4, nullptr, b_.group(), rb, FI_UINT64, 0, &cb);
            },
            "broadcast b");
        wait_comp(a_.e->tx(), &ca, "broadcast a");
        wait_comp(b_.e->tx(), &cb, "broadcast b");
        EXPECT_EQ(0, std::memcmp(dst, want, sizeof(want))) << "root " << root;
    }
}

TEST_P(CollTest, AllreduceIntegerAndFloatingOps) {
    int64_t ia[4] = {1, -5, 7, 100}, ib[4] = {2, 3, -9, 1}, ra[4], rb[4];
    allreduce(ia, ib, ra, rb, 4, FI_INT64, FI_SUM);
    const int64_t sum[4] = {3, -2, -2, 101};
    EXPECT_EQ(0, std::memcmp(ra, sum, sizeof(sum)));
    EXPECT_EQ(0, std::memcmp(rb, sum, sizeof(sum)));
    allreduce(ia, ib, ra, rb, 4, FI_INT64, FI_MIN);
    EXPECT_EQ(-5, ra[1]);
    EXPECT_EQ(-9, rb[2]);
    double da[4] = {1.5, NAN, -2, 8}, db[4] = {0.5, 3, -7, 1}, fa[4], fb[4];
    allreduce(da, db, fa, fb, 4, FI_DOUBLE, FI_MAX);  // NaN is ignored
    const double mx[4] = {1.5, 3, -2, 8};
    EXPECT_EQ(0, std::memcmp(fa, mx, sizeof(mx)));
    EXPECT_EQ(0, std::memcmp(fb, mx, sizeof(mx)));
    uint8_t ba[32], bb[32], xa[32], xb[32];
    for (int i = 0; i < 32; i++) {
        ba[i] = uint8_t(i * 7);
        bb[i] = uint8_t(0xA5 ^ i);
    }
    allreduce(ba, bb, xa, xb, 32, FI_UINT8, FI_BXOR);
    for (int i = 0; i < 32; i++)
        ASSERT_EQ(uint8_t(ba[i] ^ bb[i]), xa[i]) << i;
    EXPECT_EQ(0, std::memcmp(xa, xb, 32));
}

TEST_P(CollTest, MinMaxLocAndReproducibleSum) {
    cxip_coll_intminmax ia{5, 0, 5, 0}, ib{-3, 1, 2, 1}, ra{}, rb{};
    allreduce(&ia, &ib, &ra, &rb, 1, FI_INT64, fi_op(FI_CXI_MINMAXLOC));
    EXPECT_EQ(-3, ra.iminval);
    EXPECT_EQ(1u, ra.iminidx);
    EXPECT_EQ(5, ra.imaxval);
    EXPECT_EQ(0u, ra.imaxidx);
    EXPECT_EQ(0, std::memcmp(&ra, &rb, sizeof(ra)));
    double xa[2] = {1e16, 1.0}, xb[2] = {1.0, -1e16}, sa[2], sb[2];
    allreduce(xa, xb, sa, sb, 2, FI_DOUBLE, fi_op(FI_CXI_REPSUM));
    EXPECT_EQ(0, std::memcmp(sa, sb, sizeof(sa))) << "members got different bits";
    EXPECT_EQ(1e16 + 1.0, sa[0]);
}

// A double sum rounds as the callers' floating-point environment says when they call (as
// the hardware's opcode is chosen), whatever mode the progressing thread is in; members
// calling in different modes mismatch.
TEST_P(CollTest, DoubleSumRoundsInTheCallersMode) {
    const double one = 1.0, tiny = 0x1p-60, minus_one = -1.0, minus_tiny = -0x1p-60;
    double ra = 0, rb = 0;
    allreduce(&one, &tiny, &ra, &rb, 1, FI_DOUBLE, FI_SUM);
    EXPECT_EQ(1.0, ra);
    EXPECT_EQ(1.0, rb);
    struct Case {
        int mode;
        const double *a, *b;
        double expect;
    } cases[] = {{FE_UPWARD, &one, &tiny, std::nextafter(1.0, 2.0)},
                 {FE_TOWARDZERO, &one, &tiny, 1.0},
                 {FE_DOWNWARD, &minus_one, &minus_tiny, std::nextafter(-1.0, -2.0)},
                 {FE_TONEAREST, &minus_one, &minus_tiny, -1.0}};
    for (const Case &c : cases) {
        int ca = 0, cb = 0;
        ASSERT_EQ(0, fesetround(c.mode));
        post(
            [&] {
                return fi_allreduce(a_.e->ep(), c.a, 1, nullptr, &ra, nullptr, a_.group(),
                                    FI_DOUBLE, FI_SUM, 0, &ca);
            },
            "allreduce a");
        post(
            [&] {
                return fi_allreduce(b_.e->ep(), c.b, 1, nullptr, &rb, nullptr, b_.group(),
                                    FI_DOUBLE, FI_SUM, 0, &cb);
            },
            "allreduce b");
        fesetround(FE_TONEAREST);  // the fold happens while we wait, in this mode
        wait_comp(a_.e->tx(), &ca, "allreduce a");
        wait_comp(b_.e->tx(), &cb, "allreduce b");
        EXPECT_EQ(c.expect, ra) << c.mode;
        EXPECT_EQ(c.expect, rb) << c.mode;
    }
    int ca = 0, cb = 0;
    fesetround(FE_UPWARD);
    post(
        [&] {
            return fi_allreduce(a_.e->ep(), &one, 1, nullptr, &ra, nullptr, a_.group(), FI_DOUBLE,
                                FI_SUM, 0, &ca);
        },
        "allreduce a");
    fesetround(FE_TONEAREST);
    post(
        [&] {
            return fi_allreduce(b_.e->ep(), &tiny, 1, nullptr, &rb, nullptr, b_.group(), FI_DOUBLE,
                                FI_SUM, 0, &cb);
        },
        "allreduce b");
    EXPECT_EQ(FI_CXI_ERRNO_RED_OP_MISMATCH, wait_err(a_.e->tx(), &ca, "a").e.prov_errno);
    EXPECT_EQ(FI_CXI_ERRNO_RED_OP_MISMATCH, wait_err(b_.e->tx(), &cb, "b").e.prov_errno);
}

TEST_P(CollTest, ReduceDeliversAtTheRootOnly) {
    int64_t va = 40, vb = 2, ra = -1, rb = -1;
    int ca = 0, cb = 0;
    post(
        [&] {
            return fi_reduce(a_.e->ep(), &va, 1, nullptr, &ra, nullptr, a_.group(), a_.peer,
                             FI_INT64, FI_SUM, 0, &ca);
        },
        "reduce a");
    post(
        [&] {
            return fi_reduce(b_.e->ep(), &vb, 1, nullptr, &rb, nullptr, b_.group(), b_.self,
                             FI_INT64, FI_SUM, 0, &cb);
        },
        "reduce b");
    wait_comp(a_.e->tx(), &ca, "reduce a");
    wait_comp(b_.e->tx(), &cb, "reduce b");
    EXPECT_EQ(42, rb);
    EXPECT_EQ(-1, ra);
}

TEST_P(CollTest, UnreducedPairsAndOversizedCallsAreRefused) {
    int64_t v[8] = {}, r[8];
    EXPECT_RC(-FI_EOPNOTSUPP, fi_allreduce(a_.e->ep(), v, 1, nullptr, r, nullptr, a_.group(),
                                           FI_INT64, FI_PROD, 0, nullptr));
    EXPECT_RC(-FI_EOPNOTSUPP, fi_allreduce(a_.e->ep(), v, 1, nullptr, r, nullptr, a_.group(),
                                           FI_INT32, FI_SUM, 0, nullptr));
    EXPECT_RC(-FI_EINVAL, fi_allreduce(a_.e->ep(), v, 5, nullptr, r, nullptr, a_.group(), FI_INT64,
                                       FI_SUM, 0, nullptr));
    EXPECT_RC(-FI_EINVAL, fi_barrier(a_.e->ep(), 12345, nullptr));
    fi_collective_attr attr{};
    attr.op = FI_BOR;
    attr.datatype = FI_UINT16;
    EXPECT_OK(fi_query_collective(a_.e->domain(), FI_ALLREDUCE, &attr, 0));
    EXPECT_EQ(16u, attr.datatype_attr.count);
    attr.op = FI_SUM;
    EXPECT_RC(-FI_EOPNOTSUPP, fi_query_collective(a_.e->domain(), FI_ALLREDUCE, &attr, 0));
    EXPECT_RC(-FI_EOPNOTSUPP, fi_query_collective(a_.e->domain(), FI_ALLTOALL, &attr, 0));
}

TEST_P(CollTest, ReductionErrorsReachEveryMember) {
    int64_t big = std::numeric_limits<int64_t>::max(), one = 1, ra, rb;
    int ca = 0, cb = 0;
    post(
        [&] {
            return fi_allreduce(a_.e->ep(), &big, 1, nullptr, &ra, nullptr, a_.group(), FI_INT64,
                                FI_SUM, 0, &ca);
        },
        "allreduce a");
    post(
        [&] {
            return fi_allreduce(b_.e->ep(), &one, 1, nullptr, &rb, nullptr, b_.group(), FI_INT64,
                                FI_SUM, 0, &cb);
        },
        "allreduce b");
    EXPECT_EQ(FI_CXI_ERRNO_RED_INT_OVERFLOW, wait_err(a_.e->tx(), &ca, "a").e.prov_errno);
    EXPECT_EQ(FI_CXI_ERRNO_RED_INT_OVERFLOW, wait_err(b_.e->tx(), &cb, "b").e.prov_errno);
    // Members that disagree on the operation.
    post(
        [&] {
            return fi_allreduce(a_.e->ep(), &one, 1, nullptr, &ra, nullptr, a_.group(), FI_INT64,
                                FI_MIN, 0, &ca);
        },
        "allreduce a");
    post(
        [&] {
            return fi_allreduce(b_.e->ep(), &one, 1, nullptr, &rb, nullptr, b_.group(), FI_INT64,
                                FI_MAX, 0, &cb);
        },
        "allreduce b");
    EXPECT_EQ(FI_CXI_ERRNO_RED_OP_MISMATCH, wait_err(a_.e->tx(), &ca, "a").e.prov_errno);
    EXPECT_EQ(FI_CXI_ERRNO_RED_OP_MISMATCH, wait_err(b_.e->tx(), &cb, "b").e.prov_errno);
    // An infinity minus an infinity is invalid, for a sum as for a reproducible one.
    double pinf = INFINITY, ninf = -INFINITY, da, db;
    for (int op : {int(FI_SUM), int(FI_CXI_REPSUM)}) {
        post(
            [&] {
                return fi_allreduce(a_.e->ep(), &pinf, 1, nullptr, &da, nullptr, a_.group(),
                                    FI_DOUBLE, fi_op(op), 0, &ca);
            },
            "allreduce a");
        post(
            [&] {
                return fi_allreduce(b_.e->ep(), &ninf, 1, nullptr, &db, nullptr, b_.group(),
                                    FI_DOUBLE, fi_op(op), 0, &cb);
            },
            "allreduce b");
        EXPECT_EQ(FI_CXI_ERRNO_RED_FLT_INVALID, wait_err(a_.e->tx(), &ca, "a").e.prov_errno) << op;
        EXPECT_EQ(FI_CXI_ERRNO_RED_FLT_INVALID, wait_err(b_.e->tx(), &cb, "b").e.prov_errno) << op;
    }
}

TEST_P(CollTest, EightInFlightThenTheNinthWaits) {
    int64_t in[9], out[9];
    int ca[9], cb[9];
    for (int i = 0; i < 8; i++) {
        in[i] = i;
        ASSERT_OK(fi_allreduce(a_.e->ep(), &in[i], 1, nullptr, &out[i], nullptr, a_.group(),
                               FI_INT64, FI_SUM, 0, &ca[i]));
    }
    EXPECT_RC(-FI_EAGAIN, fi_allreduce(a_.e->ep(), &in[0], 1, nullptr, &out[8], nullptr, a_.group(),
                                       FI_INT64, FI_SUM, 0, &ca[8]));
    int64_t bin[8], bout[8];
    for (int i = 0; i < 8; i++) {
        bin[i] = 100 * i;
        post(
            [&] {
                return fi_allreduce(b_.e->ep(), &bin[i], 1, nullptr, &bout[i], nullptr, b_.group(),
                                    FI_INT64, FI_SUM, 0, &cb[i]);
            },
            "b");
    }
    for (int i = 0; i < 8; i++) {
        wait_comp(a_.e->tx(), &ca[i], "a");
        wait_comp(b_.e->tx(), &cb[i], "b");
        EXPECT_EQ(101 * i, out[i]);
        EXPECT_EQ(101 * i, bout[i]);
    }
}

// Within a host (with single-copy access) the contributions to allreduce and barrier
// travel through the board in the members' memory windows: softnic's counter 2524
// counts those read there; otherwise they are packets. Calls pipelined eight deep for
// more rounds than a board entry has cells, with broadcasts (which go through the root)
// between them, all come out right either way.
TEST_P(CollTest, PipelinedCallsWithinAHostGoThroughTheBoard) {
    EpOptions o;
    o.caps = kCollCaps;
    auto board_reads = [&] {
        uint64_t n = 0;
        for (const char *d : {"cxi0", peer_domain()}) {
            fi_cxi_dom_ops *ops = nullptr;
            EXPECT_OK(fi_open_ops(&domain(d, o)->fid, FI_CXI_DOM_OPS_6, 0,
                                  reinterpret_cast<void **>(&ops), nullptr));
            uint64_t v = 0;
            EXPECT_OK(ops->cntr_read(&domain(d, o)->fid, SOFTNIC_CNTR_COLL_BOARD, &v, nullptr));
            n += v;
            if (!std::strcmp(d, peer_domain())) break;  // the same domain twice over shm
        }
        return n;
    };
    const uint64_t before = board_reads();
    constexpr int kDepth = 8, kRounds = 6;  // 48 calls: three times a board entry's 16 cells
    for (int round = 0; round < kRounds; round++) {
        int64_t ia[kDepth], ib[kDepth], ra[kDepth], rb[kDepth];
        int ca[kDepth], cb[kDepth];
        for (int i = 0; i < kDepth; i++) {
            ia[i] = round * 1000 + i;
            ib[i] = -7 * i;
            post(
                [&] {
                    return fi_allreduce(a_.e->ep(), &ia[i], 1, nullptr, &ra[i], nullptr, a_.group(),
                                        FI_INT64, FI_SUM, 0, &ca[i]);
                },
                "allreduce a");
        }
        for (int i = 0; i < kDepth; i++)
            post(
                [&] {
                    return fi_allreduce(b_.e->ep(), &ib[i], 1, nullptr, &rb[i], nullptr, b_.group(),
                                        FI_INT64, FI_SUM, 0, &cb[i]);
                },
                "allreduce b");
        for (int i = 0; i < kDepth; i++) {
            wait_comp(a_.e->tx(), &ca[i], "allreduce a");
            wait_comp(b_.e->tx(), &cb[i], "allreduce b");
            ASSERT_EQ(ia[i] + ib[i], ra[i]) << "round " << round << " call " << i;
            ASSERT_EQ(ia[i] + ib[i], rb[i]) << "round " << round << " call " << i;
        }
        uint64_t va = uint64_t(round), vb = 0;
        int xa = 0, xb = 0;
        post(
            [&] {
                return fi_broadcast(a_.e->ep(), &va, 1, nullptr, a_.group(), a_.self, FI_UINT64, 0,
                                    &xa);
            },
            "broadcast a");
        post(
            [&] {
                return fi_broadcast(b_.e->ep(), &vb, 1, nullptr, b_.group(), b_.peer, FI_UINT64, 0,
                                    &xb);
            },
            "broadcast b");
        wait_comp(a_.e->tx(), &xa, "broadcast a");
        wait_comp(b_.e->tx(), &xb, "broadcast b");
        ASSERT_EQ(uint64_t(round), vb);
    }
    const uint64_t read = board_reads() - before;
    if (single_copy())
        EXPECT_GE(read, uint64_t(kDepth * (kRounds - 1)))
            << "few contributions went through the board";
    else
        EXPECT_EQ(0u, read) << "contributions read from a board between hosts";
}

TEST_P(CollTest, AMemberThatLeftFailsTheGroup) {
    b_.g.close();
    p_.b.reset();  // its endpoint closes: its ring or port goes away
    int ca = 0;
    ASSERT_OK(fi_barrier(a_.e->ep(), a_.group(), &ca));
    ErrComp e = wait_err(a_.e->tx(), &ca, "barrier with a member gone");
    EXPECT_EQ(FI_CXI_ERRNO_RED_MC_FAILURE, e.e.prov_errno);
    // Later calls fail at once.
    ASSERT_OK(fi_barrier(a_.e->ep(), a_.group(), &ca));
    EXPECT_EQ(FI_CXI_ERRNO_RED_MC_FAILURE, wait_err(a_.e->tx(), &ca, "barrier").e.prov_errno);
}

CXIT_INSTANTIATE_TRANSPORTS(CollTest);

// More than two members, within a NIC and across NICs at once: endpoints on cxi0 and
// cxi1 in turn (shared memory between those of one NIC, UDP to the others). Groups of 4
// exchange contributions directly, groups of 8 through the root.
class CollGroupTest : public CxiTest {
  protected:
    void open(size_t n) {
        EpOptions o;
        o.caps = kCollCaps;
        for (size_t i = 0; i < n; i++)
            eps_.push_back(make_ep(i % 2 ? "cxi1" : "cxi0", o));
        std::vector<std::vector<uint8_t>> names;
        for (auto &e : eps_)
            names.push_back(name_of(e->ep()));
        groups_ = std::vector<CollGroup>(n);
        addr_.assign(n, {});
        for (size_t i = 0; i < n; i++) {
            for (auto &name : names)
                addr_[i].push_back(eps_[i]->insert(name));
            join_group(groups_[i], fabric(), *eps_[i], addr_[i], nullptr, false);
        }
        ctx_.assign(n, 0);
    }

    // Every member calls `call(i)`; each waits for its completion.
    template <class Call>
    void all(const std::string &what, Call call) {
        for (size_t i = 0; i < eps_.size(); i++)
            post([&] { return call(i); }, what);
        for (size_t i = 0; i < eps_.size(); i++)
            wait_comp(eps_[i]->tx(), &ctx_[i], what + " " + std::to_string(i));
    }

    void TearDown() override {
        for (CollGroup &g : groups_)
            g.close();
    }

    std::vector<EndpointPtr> eps_;
    std::vector<CollGroup> groups_;
    std::vector<std::vector<fi_addr_t>> addr_;
    std::vector<int> ctx_;
};

TEST_F(CollGroupTest, FourMembersOverBothTransports) {
    open(4);
    const size_t n = eps_.size();
    std::vector<int64_t> in(n), out(n, 0);
    for (size_t i = 0; i < n; i++)
        in[i] = int64_t(i + 1) * 10;
    all("allreduce", [&](size_t i) {
        return fi_allreduce(eps_[i]->ep(), &in[i], 1, nullptr, &out[i], nullptr, groups_[i].addr(),
                            FI_INT64, FI_SUM, 0, &ctx_[i]);
    });
    for (size_t i = 0; i < n; i++)
        EXPECT_EQ(100, out[i]) << "member " << i;
    std::vector<uint32_t> word(n, 0);
    word[2] = 0xC0FFEE;
    all("broadcast", [&](size_t i) {
        return fi_broadcast(eps_[i]->ep(), &word[i], 1, nullptr, groups_[i].addr(), addr_[i][2],
                            FI_UINT32, 0, &ctx_[i]);
    });
    for (size_t i = 0; i < n; i++)
        EXPECT_EQ(0xC0FFEEu, word[i]) << "member " << i;
}

// Whatever the exchange, the result is the fold in rank order: a double sum that
// association would change (1e16 + 1 - 1e16 + 1 is 1 in rank order, 0 folded in pairs)
// comes out the same on every member, sums of every width are right, and one member with
// another op makes every member's call fail with OP_MISMATCH.
TEST_F(CollGroupTest, FourAndEightMembersFoldInRankOrder) {
    for (size_t n : {4, 8}) {
        SCOPED_TRACE(n);
        TearDown();
        groups_.clear();
        eps_.clear();
        open(n);
        std::vector<double> din(n), dout(n, -1);
        for (size_t i = 0; i < n; i++)
            din[i] = i % 2 ? 1.0 : (i % 4 ? -1e16 : 1e16);
        all("double sum", [&](size_t i) {
            return fi_allreduce(eps_[i]->ep(), &din[i], 1, nullptr, &dout[i], nullptr,
                                groups_[i].addr(), FI_DOUBLE, FI_SUM, 0, &ctx_[i]);
        });
        double expect = 0;
        for (double d : din)
            expect += d;
        for (size_t i = 0; i < n; i++)
            EXPECT_EQ(expect, dout[i]) << "member " << i;
        std::vector<std::array<int64_t, 4>> in(n), out(n);
        for (size_t i = 0; i < n; i++)
            in[i] = {int64_t(i), -int64_t(i) * 1000, int64_t(1) << i, 7};
        all("4-element sum", [&](size_t i) {
            return fi_allreduce(eps_[i]->ep(), in[i].data(), 4, nullptr, out[i].data(), nullptr,
                                groups_[i].addr(), FI_INT64, FI_SUM, 0, &ctx_[i]);
        });
        const int64_t s = int64_t(n * (n - 1) / 2);
        for (size_t i = 0; i < n; i++)
            EXPECT_EQ((std::array<int64_t, 4>{s, -1000 * s, (int64_t(1) << n) - 1, 7 * int64_t(n)}),
                      out[i])
                << "member " << i;
        all("barrier",
            [&](size_t i) { return fi_barrier(eps_[i]->ep(), groups_[i].addr(), &ctx_[i]); });
        std::vector<int64_t> one(n, 1), res(n);
        for (size_t i = 0; i < n; i++)
            post(
                [&] {
                    return fi_allreduce(eps_[i]->ep(), &one[i], 1, nullptr, &res[i], nullptr,
                                        groups_[i].addr(), FI_INT64, i == n - 1 ? FI_MAX : FI_SUM,
                                        0, &ctx_[i]);
                },
                "mismatched allreduce");
        for (size_t i = 0; i < n; i++)
            EXPECT_EQ(
                FI_CXI_ERRNO_RED_OP_MISMATCH,
                wait_err(eps_[i]->tx(), &ctx_[i], "mismatch " + std::to_string(i)).e.prov_errno)
                << "member " << i;
    }
}

// AV sets alone: membership in order, set algebra, argument checks.
class AvSetTest : public CxiTest {};

TEST_F(AvSetTest, SetAlgebraKeepsRankOrder) {
    EndpointPtr e = make_ep("cxi0");
    fi_addr_t a[4];
    for (uint32_t i = 0; i < 4; i++) {
        std::vector<uint8_t> addr(8, 0);
        uint32_t word = (0x12u << 9) | (10 + i);
        std::memcpy(addr.data(), &word, 4);
        a[i] = e->insert(addr);
    }
    fi_av_set_attr all{};
    all.start_addr = a[0];
    all.end_addr = a[3];
    all.stride = 1;
    Fid<fid_av_set> s1, s2;
    ASSERT_OK(CXIT_OPEN(s1, fi_av_set(e->av(), &all, OUT, nullptr)));
    fi_av_set_attr none{};
    none.start_addr = FI_ADDR_NOTAVAIL;
    ASSERT_OK(CXIT_OPEN(s2, fi_av_set(e->av(), &none, OUT, nullptr)));
    ASSERT_OK(fi_av_set_insert(s2.get(), a[2]));
    EXPECT_RC(-FI_EINVAL, fi_av_set_insert(s2.get(), a[2]));
    EXPECT_RC(-FI_EINVAL, fi_av_set_insert(s2.get(), 999));
    ASSERT_OK(fi_av_set_insert(s2.get(), a[0]));
    ASSERT_OK(fi_av_set_diff(s1.get(), s2.get()));       // s1 = {1, 3}
    ASSERT_OK(fi_av_set_union(s1.get(), s2.get()));      // s1 = {1, 3, 2, 0}
    ASSERT_OK(fi_av_set_intersect(s2.get(), s1.get()));  // s2 unchanged
    ASSERT_OK(fi_av_set_remove(s1.get(), a[3]));
    EXPECT_RC(-FI_EINVAL, fi_av_set_remove(s1.get(), a[3]));
    fi_addr_t c1 = 0, c2 = 0;
    ASSERT_OK(fi_av_set_addr(s1.get(), &c1));
    ASSERT_OK(fi_av_set_addr(s2.get(), &c2));
    EXPECT_NE(c1, c2);
    fi_av_set_attr bad{};
    bad.start_addr = a[3];
    bad.end_addr = a[0];
    fid_av_set *s3 = nullptr;
    EXPECT_RC(-FI_EINVAL, fi_av_set(e->av(), &bad, &s3, nullptr));
    EXPECT_RC(-FI_EINVAL, fi_av_set(e->av(), nullptr, &s3, nullptr));
}

}  // namespace

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Atomics (spec §6.4): the op x datatype table as fi_query_atomic and the valid calls
// report it, the arithmetic of every op family on the target's memory, the call forms
// (plain, ioc, msg, inject), completions and counters, the flag and argument rules
// (FI_CXI_UNRELIABLE, FI_CXI_HRP, the errata), FI_EIO for target-side failures, and
// the emulated NIC counters that restricted operations move (spec §6.5).
#include <cassini_cntr_defs.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cxi_ext.h>
#include <rdma/fi_rma.h>

#include <algorithm>
#include <complex>
#include <cstring>

#include "one_sided.hpp"

using namespace cxit;

namespace {

// No operation has this value in 1.x or 2.x (2.x gave FI_ATOMIC_OP_LAST's value to FI_DIFF).
constexpr fi_op kBadOp = static_cast<fi_op>(64);

// The names applications use, from the shipped <cassini_cntr_defs.h>.
constexpr unsigned kRestrictedPkt = C_CNTR_IXE_RX_PTL_RESTRICTED_PKT,
                   kPlecHits = C_CNTR_LPE_PLEC_HITS, kHrpAck = C_CNTR_HNI_HRP_ACK,
                   kUnrestrictedPkt = C_CNTR_IXE_RX_PTL_UNRESTRICTED_PKT;

// The table of spec §6.4, written out independently of the provider: bit d = datatype d.
uint16_t expected_mask(int kind, int op) {
    const uint16_t ints = 0x00ff, real = 0x03ff, all = 0x0fff;
    if (kind == 2) {
        switch (op) {
            case FI_CSWAP:
                return 0xcfff;
            case FI_CSWAP_NE:
                return all;
            case FI_CSWAP_LE:
            case FI_CSWAP_LT:
            case FI_CSWAP_GE:
            case FI_CSWAP_GT:
                return real;
            case FI_MSWAP:
                return ints;
            default:
                return 0;
        }
    }
    switch (op) {
        case FI_MIN:
        case FI_MAX:
            return real;
        case FI_SUM:
        case FI_ATOMIC_WRITE:
            return all;
        case FI_LOR:
        case FI_LAND:
        case FI_LXOR:
        case FI_BOR:
        case FI_BAND:
        case FI_BXOR:
            return ints;
        case FI_ATOMIC_READ:
            return kind == 1 ? all : 0;
        default:
            return 0;
    }
}

class AtomicTest : public OneSidedTest {
  protected:
    uint64_t caps() const override { return FI_MSG | FI_RMA | FI_ATOMIC; }

    // fi_atomic of one element at `off`; waits for its completion.
    template <class T>
    Comp amo(Pair &p, T operand, uint64_t off, uint64_t key, fi_datatype dt, fi_op op) {
        int ctx = 0;
        post(
            [&] {
                return fi_atomic(p.a->ep(), &operand, 1, nullptr, p.a2b, off, key, dt, op, &ctx);
            },
            "fi_atomic");
        return wait_comp(p.a->tx(), &ctx, "fi_atomic");
    }
    // fi_fetch_atomic; returns the previous value.
    template <class T>
    T fetch(Pair &p, T operand, uint64_t off, uint64_t key, fi_datatype dt, fi_op op,
            uint64_t *flags = nullptr) {
        int ctx = 0;
        T old{};
        post(
            [&] {
                return fi_fetch_atomic(p.a->ep(), &operand, 1, nullptr, &old, nullptr, p.a2b, off,
                                       key, dt, op, &ctx);
            },
            "fi_fetch_atomic");
        Comp c = wait_comp(p.a->tx(), &ctx, "fi_fetch_atomic");
        if (flags) *flags = c.e.flags;
        return old;
    }
    template <class T>
    T compare(Pair &p, T operand, T cmp, uint64_t off, uint64_t key, fi_datatype dt, fi_op op) {
        int ctx = 0;
        T old{};
        post(
            [&] {
                return fi_compare_atomic(p.a->ep(), &operand, 1, nullptr, &cmp, nullptr, &old,
                                         nullptr, p.a2b, off, key, dt, op, &ctx);
            },
            "fi_compare_atomic");
        Comp c = wait_comp(p.a->tx(), &ctx, "fi_compare_atomic");
        EXPECT_EQ(FI_ATOMIC | FI_READ, c.e.flags);
        return old;
    }
    // 11 FI_CXI_HRP writes to an optimized key count as restricted packets and optimized-MR
    // hits at the target and as HRP acks at the initiator.
    // One 8-byte write of `flags` to `key`, and the emulated counters it moved: a
    // restricted packet and an optimized-MR hit at the target, or an unrestricted
    // packet; an HRP ack at the initiator.
    void expect_counted_write(Pair &p, const EpOptions &o, uint64_t key, uint64_t flags,
                              bool restricted, bool hrp, const char *what) {
        fid_domain *target = domain(peer_domain(), o), *init = domain("cxi0", o);
        uint64_t r0 = hw(target, kRestrictedPkt), u0 = hw(target, kUnrestrictedPkt),
                 l0 = hw(target, kPlecHits), h0 = hw(init, kHrpAck);
        uint64_t v = 42;
        put<uint64_t>(0, 0);
        iovec iov{&v, 8};
        fi_rma_iov rma{0, 8, key};
        int ctx = 0;
        fi_msg_rma msg{&iov, nullptr, 1, p.a2b, &rma, 1, &ctx, 0};
        post([&] { return fi_writemsg(p.a->ep(), &msg, FI_COMPLETION | flags); }, what);
        wait_comp(p.a->tx(), &ctx, what);
        EXPECT_EQ(42u, at<uint64_t>(0)) << what;
        EXPECT_EQ(restricted ? 1u : 0u, hw(target, kRestrictedPkt) - r0) << what;
        EXPECT_EQ(restricted ? 0u : 1u, hw(target, kUnrestrictedPkt) - u0) << what;
        EXPECT_EQ(restricted ? 1u : 0u, hw(target, kPlecHits) - l0) << what;
        EXPECT_EQ(hrp ? 1u : 0u, hw(init, kHrpAck) - h0) << what;
    }
    void optimized_writes(bool prov_key) {
        Pair &p = pair(opts(prov_key));
        uint64_t key = expose(p, 64, kRemote, prov_key, 5);
        fid_domain *target = domain(peer_domain(), opts(prov_key)),
                   *init = domain("cxi0", opts(prov_key));
        uint64_t r0 = hw(target, kRestrictedPkt), l0 = hw(target, kPlecHits),
                 h0 = hw(init, kHrpAck);
        uint64_t v = 42;
        iovec iov{&v, 8};
        fi_rma_iov rma{0, 8, key};
        int ctx = 0;
        fi_msg_rma msg{&iov, nullptr, 1, p.a2b, &rma, 1, &ctx, 0};
        for (int i = 0; i < 11; i++) {
            post([&] { return fi_writemsg(p.a->ep(), &msg, FI_COMPLETION | FI_CXI_HRP); },
                 "writemsg");
            wait_comp(p.a->tx(), &ctx, "hrp write");
        }
        EXPECT_EQ(11u, hw(target, kRestrictedPkt) - r0);
        EXPECT_EQ(11u, hw(target, kPlecHits) - l0);
        EXPECT_EQ(11u, hw(init, kHrpAck) - h0);
        EXPECT_EQ(42u, at<uint64_t>(0));
    }
    template <class T>
    T at(uint64_t off) {
        T v;
        std::memcpy(&v, &target_[off], sizeof(T));
        return v;
    }
    template <class T>
    void put(uint64_t off, T v) {
        std::memcpy(&target_[off], &v, sizeof(T));
    }
};

TEST_P(AtomicTest, QueryReportsExactlyTheTable) {
    Pair &p = pair(opts());
    fid_domain *d = domain("cxi0", opts());
    const uint64_t qflags[3] = {0, FI_FETCH_ATOMIC, FI_COMPARE_ATOMIC};
    for (int kind = 0; kind < 3; kind++) {
        for (int op = FI_MIN; op < FI_ATOMIC_OP_LAST; op++) {
            for (int dt = FI_INT8; dt <= FI_UINT128; dt++) {
                bool want = expected_mask(kind, op) & (1u << dt);
                fi_atomic_attr attr{};
                int rc = fi_query_atomic(d, fi_datatype(dt), fi_op(op), &attr, qflags[kind]);
                size_t count = 7;
                int vrc =
                    kind == 0 ? fi_atomicvalid(p.a->ep(), fi_datatype(dt), fi_op(op), &count)
                    : kind == 1
                        ? fi_fetch_atomicvalid(p.a->ep(), fi_datatype(dt), fi_op(op), &count)
                        : fi_compare_atomicvalid(p.a->ep(), fi_datatype(dt), fi_op(op), &count);
                std::string what = "kind " + std::to_string(kind) + " op " + std::to_string(op) +
                                   " datatype " + std::to_string(dt);
                EXPECT_EQ(want ? 0 : -FI_EOPNOTSUPP, rc) << what;
                EXPECT_EQ(rc, vrc) << what;
                if (want) {
                    EXPECT_EQ(1u, attr.count) << what;
                    EXPECT_EQ(1u, count) << what;
                }
            }
        }
    }
    fi_atomic_attr attr{};
    EXPECT_EQ(4u, (fi_query_atomic(d, FI_INT32, FI_SUM, &attr, 0), attr.size));
    EXPECT_EQ(16u, (fi_query_atomic(d, FI_UINT128, FI_CSWAP, &attr, FI_COMPARE_ATOMIC), attr.size));
    EXPECT_RC(-FI_EINVAL, fi_query_atomic(d, FI_INT32, FI_SUM, nullptr, 0));
    EXPECT_RC(-FI_EINVAL,
              fi_query_atomic(d, FI_INT32, FI_SUM, &attr, FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC));
    EXPECT_RC(-FI_EINVAL, fi_query_atomic(d, FI_VOID, FI_SUM, &attr, 0));
    EXPECT_RC(-FI_EINVAL, fi_query_atomic(d, FI_INT32, kBadOp, &attr, 0));
    EXPECT_RC(-FI_EOPNOTSUPP, fi_query_atomic(d, FI_INT32, FI_SUM, &attr, FI_CXI_PCIE_AMO));
    EXPECT_RC(-FI_EOPNOTSUPP,
              fi_query_atomic(d, FI_INT64, FI_SUM, &attr, FI_FETCH_ATOMIC | FI_CXI_PCIE_AMO));
}

TEST_P(AtomicTest, IntegerOpsCompute) {
    Pair &p = pair(opts());
    uint64_t key = expose(p, 256);
    put<int32_t>(0, 5);
    EXPECT_EQ(5, fetch<int32_t>(p, 7, 0, key, FI_INT32, FI_SUM));
    EXPECT_EQ(12, at<int32_t>(0));
    put<int8_t>(8, -3);
    amo<int8_t>(p, -100, 8, key, FI_INT8, FI_MIN);
    EXPECT_EQ(-100, at<int8_t>(8));
    amo<int8_t>(p, 4, 8, key, FI_INT8, FI_MAX);
    EXPECT_EQ(4, at<int8_t>(8));
    put<uint8_t>(9, 250);
    amo<uint8_t>(p, 10, 9, key, FI_UINT8, FI_SUM);
    EXPECT_EQ(4, at<uint8_t>(9)) << "integer sums wrap";
    put<uint16_t>(16, 0x0ff0);
    amo<uint16_t>(p, 0x00ff, 16, key, FI_UINT16, FI_BOR);
    EXPECT_EQ(0x0fff, at<uint16_t>(16));
    amo<uint16_t>(p, 0x0f0f, 16, key, FI_UINT16, FI_BAND);
    EXPECT_EQ(0x0f0f, at<uint16_t>(16));
    amo<uint16_t>(p, 0xffff, 16, key, FI_UINT16, FI_BXOR);
    EXPECT_EQ(0xf0f0, at<uint16_t>(16));
    put<int16_t>(18, 0);
    amo<int16_t>(p, 9, 18, key, FI_INT16, FI_LOR);
    EXPECT_EQ(1, at<int16_t>(18));
    amo<int16_t>(p, 0, 18, key, FI_INT16, FI_LAND);
    EXPECT_EQ(0, at<int16_t>(18));
    amo<int16_t>(p, 3, 18, key, FI_INT16, FI_LXOR);
    EXPECT_EQ(1, at<int16_t>(18));
    put<uint64_t>(24, 77);
    EXPECT_EQ(77u, fetch<uint64_t>(p, 0, 24, key, FI_UINT64, FI_ATOMIC_READ));
    EXPECT_EQ(77u, fetch<uint64_t>(p, 99, 24, key, FI_UINT64, FI_ATOMIC_WRITE));
    EXPECT_EQ(99u, at<uint64_t>(24));
}

TEST_P(AtomicTest, CompareFamilyComputes) {
    Pair &p = pair(opts());
    uint64_t key = expose(p, 256);
    put<uint64_t>(0, 10);
    EXPECT_EQ(10u, compare<uint64_t>(p, 20, 11, 0, key, FI_UINT64, FI_CSWAP));
    EXPECT_EQ(10u, at<uint64_t>(0)) << "no swap when the comparand differs";
    EXPECT_EQ(10u, compare<uint64_t>(p, 20, 10, 0, key, FI_UINT64, FI_CSWAP));
    EXPECT_EQ(20u, at<uint64_t>(0));
    compare<uint64_t>(p, 30, 20, 0, key, FI_UINT64, FI_CSWAP_NE);
    EXPECT_EQ(20u, at<uint64_t>(0));
    compare<uint64_t>(p, 30, 21, 0, key, FI_UINT64, FI_CSWAP_NE);
    EXPECT_EQ(30u, at<uint64_t>(0));
    put<int32_t>(8, 5);  // each swaps when `comparand OP target` holds
    compare<int32_t>(p, 1, 6, 8, key, FI_INT32, FI_CSWAP_LE);
    EXPECT_EQ(5, at<int32_t>(8));
    compare<int32_t>(p, 1, 5, 8, key, FI_INT32, FI_CSWAP_LE);
    EXPECT_EQ(1, at<int32_t>(8));
    compare<int32_t>(p, 2, 1, 8, key, FI_INT32, FI_CSWAP_LT);
    EXPECT_EQ(1, at<int32_t>(8));
    compare<int32_t>(p, 2, 0, 8, key, FI_INT32, FI_CSWAP_LT);
    EXPECT_EQ(2, at<int32_t>(8));
    compare<int32_t>(p, 3, 2, 8, key, FI_INT32, FI_CSWAP_GE);
    EXPECT_EQ(3, at<int32_t>(8));
    compare<int32_t>(p, 4, 3, 8, key, FI_INT32, FI_CSWAP_GT);
    EXPECT_EQ(3, at<int32_t>(8));
    compare<int32_t>(p, 4, 9, 8, key, FI_INT32, FI_CSWAP_GT);
    EXPECT_EQ(4, at<int32_t>(8));
    put<uint32_t>(12, 0xaaaa5555);
    compare<uint32_t>(p, 0x12345678, 0xffff0000, 12, key, FI_UINT32, FI_MSWAP);
    EXPECT_EQ(0x12345555u, at<uint32_t>(12));
    unsigned __int128 big = (unsigned __int128)1 << 100, next = big + 1;
    put(32, big);
    EXPECT_TRUE(big == compare(p, next, big, 32, key, FI_UINT128, FI_CSWAP));
    EXPECT_TRUE(next == at<unsigned __int128>(32));
}

TEST_P(AtomicTest, FloatingAndComplexCompute) {
    Pair &p = pair(opts());
    uint64_t key = expose(p, 256);
    put<double>(0, 1.5);
    amo<double>(p, 2.25, 0, key, FI_DOUBLE, FI_SUM);
    EXPECT_EQ(3.75, at<double>(0));
    amo<double>(p, -1.0, 0, key, FI_DOUBLE, FI_MIN);
    EXPECT_EQ(-1.0, at<double>(0));
    put<float>(8, 2.0f);
    EXPECT_EQ(2.0f, fetch<float>(p, 8.0f, 8, key, FI_FLOAT, FI_MAX));
    EXPECT_EQ(8.0f, at<float>(8));
    EXPECT_EQ(8.0f, compare<float>(p, 1.0f, 8.0f, 8, key, FI_FLOAT, FI_CSWAP));
    EXPECT_EQ(1.0f, at<float>(8));
    using cf = std::complex<float>;
    using cd = std::complex<double>;
    put(16, cf(1, 2));
    amo(p, cf(3, 4), 16, key, FI_FLOAT_COMPLEX, FI_SUM);
    EXPECT_EQ(cf(4, 6), at<cf>(16));
    put(32, cd(1, -1));
    EXPECT_EQ(cd(1, -1), fetch(p, cd(), 32, key, FI_DOUBLE_COMPLEX, FI_ATOMIC_READ));
    EXPECT_EQ(cd(1, -1), compare(p, cd(5, 5), cd(1, -1), 32, key, FI_DOUBLE_COMPLEX, FI_CSWAP_NE));
    EXPECT_EQ(cd(1, -1), at<cd>(32)) << "equal: FI_CSWAP_NE does not swap";
}

// Completion flags, counters, the ioc and msg forms, inject without a completion.
TEST_P(AtomicTest, FormsCompletionsAndCounters) {
    EpOptions o = opts();
    Pair &p = pair(o);
    fi_cntr_attr ca{};
    Fid<fid_cntr> wc, rc;
    fid_domain *d = domain("cxi0", o);
    ASSERT_OK(CXIT_OPEN(wc, fi_cntr_open(d, &ca, OUT, nullptr)));
    ASSERT_OK(CXIT_OPEN(rc, fi_cntr_open(d, &ca, OUT, nullptr)));
    ASSERT_OK(fi_ep_bind(p.a->ep(), &wc->fid, FI_WRITE));
    ASSERT_OK(fi_ep_bind(p.a->ep(), &rc->fid, FI_READ));
    uint64_t key = expose(p, 64);
    put<uint64_t>(0, 0);
    Comp c = amo<uint64_t>(p, 1, 0, key, FI_UINT64, FI_SUM);
    EXPECT_EQ(FI_ATOMIC | FI_WRITE, c.e.flags);
    uint64_t flags = 0;
    fetch<uint64_t>(p, 1, 0, key, FI_UINT64, FI_SUM, &flags);
    EXPECT_EQ(FI_ATOMIC | FI_READ, flags);
    uint64_t one = 1, old = 0, cmp = 0;
    fi_ioc ioc{&one, 1}, res{&old, 1}, cmpv{&cmp, 1};
    int c1 = 0, c2 = 0, c3 = 0;
    post(
        [&] {
            return fi_atomicv(p.a->ep(), &ioc, nullptr, 1, p.a2b, 0, key, FI_UINT64, FI_SUM, &c1);
        },
        "fi_atomicv");
    wait_comp(p.a->tx(), &c1, "fi_atomicv");
    fi_rma_ioc rioc{0, 1, key};
    fi_msg_atomic msg{&ioc, nullptr, 1, p.a2b, &rioc, 1, FI_UINT64, FI_SUM, &c2, 0};
    post([&] { return fi_fetch_atomicmsg(p.a->ep(), &msg, &res, nullptr, 1, FI_COMPLETION); },
         "fi_fetch_atomicmsg");
    wait_comp(p.a->tx(), &c2, "fi_fetch_atomicmsg");
    EXPECT_EQ(3u, old);
    cmp = 4;
    msg.op = FI_CSWAP;
    msg.context = &c3;
    post(
        [&] {
            return fi_compare_atomicmsg(p.a->ep(), &msg, &cmpv, nullptr, 1, &res, nullptr, 1,
                                        FI_COMPLETION | FI_TRANSMIT_COMPLETE);
        },
        "fi_compare_atomicmsg");
    wait_comp(p.a->tx(), &c3, "fi_compare_atomicmsg");
    EXPECT_EQ(1u, at<uint64_t>(0));
    post([&] { return fi_inject_atomic(p.a->ep(), &one, 1, p.a2b, 0, key, FI_UINT64, FI_SUM); },
         "fi_inject_atomic");
    wait_cntr(wc.get(), 3, "write counter");  // atomic, atomicv, inject
    EXPECT_EQ(2u, at<uint64_t>(0));
    EXPECT_EQ(3u, fi_cntr_read(rc.get()));  // fetch, fetchmsg, compare
    p.a->tx().poll();
    EXPECT_EQ(0u, p.a->tx().ok_count()) << "inject made a completion entry";
    mr_.reset();
    p_ = Pair{};
}

TEST_P(AtomicTest, TargetFailuresAreEio) {
    Pair &p = pair(opts());
    uint64_t key = expose(p, 64, FI_REMOTE_READ);
    uint64_t v = 1, old = 0;
    auto atomic = [&](uint64_t off, uint64_t k) {
        return [&, off, k](void *c) {
            return fi_atomic(p.a->ep(), &v, 1, nullptr, p.a2b, off, k, FI_UINT64, FI_SUM, c);
        };
    };
    expect_eio(p, atomic(0, key), "atomic without FI_REMOTE_WRITE");
    expect_eio(p, atomic(0, key ^ 0x1234), "atomic with an unknown key");
    expect_eio(
        p,
        [&](void *c) {
            return fi_fetch_atomic(p.a->ep(), &v, 1, nullptr, &old, nullptr, p.a2b, 60, key,
                                   FI_UINT64, FI_ATOMIC_READ, c);
        },
        "fetch past the end");
    post([&] { return fi_inject_atomic(p.a->ep(), &v, 1, p.a2b, 0, key + 99, FI_UINT64, FI_SUM); },
         "inject to an unknown key");
    EXPECT_EQ(FI_EIO, wait_err(p.a->tx(), nullptr, "inject error entry").e.err);
    EXPECT_EQ(std::vector<uint8_t>(64, 0xEE), target_);
    EXPECT_EQ(0xEEEEEEEEEEEEEEEEull, fetch<uint64_t>(p, 0, 0, key, FI_UINT64, FI_ATOMIC_READ));
}

TEST_P(AtomicTest, ArgumentAndFlagRules) {
    Pair &p = pair(opts(false));
    uint64_t key = expose(p, 64, kRemote, false, 100);  // a standard (non-optimized) key
    fid_ep *ep = p.a->ep();
    uint64_t v = 1, old = 0, two[2] = {1, 2};
    EXPECT_RC(-FI_EINVAL,
              fi_atomic(ep, two, 2, nullptr, p.a2b, 0, key, FI_UINT64, FI_SUM, nullptr));
    EXPECT_RC(-FI_EINVAL, fi_atomic(ep, &v, 1, nullptr, p.a2b, 0, key, FI_VOID, FI_SUM, nullptr));
    EXPECT_RC(-FI_EINVAL, fi_atomic(ep, &v, 1, nullptr, p.a2b, 0, key, FI_UINT64, kBadOp, nullptr));
    EXPECT_RC(-FI_EOPNOTSUPP,
              fi_atomic(ep, &v, 1, nullptr, p.a2b, 0, key, FI_UINT64, FI_PROD, nullptr));
    EXPECT_RC(-FI_EOPNOTSUPP,
              fi_atomic(ep, &v, 1, nullptr, p.a2b, 0, key, FI_LONG_DOUBLE, FI_SUM, nullptr));
    EXPECT_RC(-FI_EOPNOTSUPP,
              fi_atomic(ep, &v, 1, nullptr, p.a2b, 0, key, FI_UINT64, FI_CSWAP, nullptr));
    EXPECT_RC(-FI_EINVAL,
              fi_atomic(ep, nullptr, 1, nullptr, p.a2b, 0, key, FI_UINT64, FI_SUM, nullptr));
    EXPECT_RC(-FI_EINVAL, fi_fetch_atomic(ep, &v, 1, nullptr, nullptr, nullptr, p.a2b, 0, key,
                                          FI_UINT64, FI_SUM, nullptr));
    EXPECT_RC(-FI_EKEYREJECTED,
              fi_atomic(ep, &v, 1, nullptr, p.a2b, 0, 0x100000001ULL, FI_UINT64, FI_SUM, nullptr));
    fi_ioc ioc{&v, 1}, res{&old, 1};
    fi_rma_ioc rioc{0, 1, key};
    fi_msg_atomic msg{&ioc, nullptr, 1, p.a2b, &rioc, 1, FI_UINT64, FI_SUM, nullptr, 0};
    EXPECT_RC(-FI_EBADFLAGS, fi_atomicmsg(ep, &msg, FI_MULTI_RECV));
    EXPECT_RC(-FI_EINVAL, fi_atomicmsg(ep, &msg, FI_CXI_HRP)) << "HRP needs UNRELIABLE";
    EXPECT_RC(-FI_EBADFLAGS, fi_fetch_atomicmsg(ep, &msg, &res, nullptr, 1, FI_CXI_HRP));
    EXPECT_RC(-FI_EOPNOTSUPP, fi_fetch_atomicmsg(ep, &msg, &res, nullptr, 1, FI_CXI_PCIE_AMO));
    msg.op = FI_CSWAP;
    EXPECT_RC(-FI_EBADFLAGS,
              fi_compare_atomicmsg(ep, &msg, &ioc, nullptr, 1, &res, nullptr, 1, FI_CXI_HRP));
    msg.rma_iov_count = 2;
    msg.op = FI_SUM;
    EXPECT_RC(-FI_EINVAL, fi_atomicmsg(ep, &msg, 0));
    msg.rma_iov_count = 1;
    // A standard key takes inject atomics too (upstream's std_mr_inject).
    post([&] { return fi_inject_atomic(ep, &v, 1, p.a2b, 0, key, FI_UINT64, FI_ATOMIC_WRITE); },
         "fi_inject_atomic");
    wait_until([&] { return at<uint64_t>(0) == 1; }, "inject to key 100");
}

// A target MR that generates events takes no unreliable atomics and no delivery- or
// match-complete fetching ones (upstream cxip_atomic.c). A client key cannot say whether
// its MR does, so FI_RMA_EVENT on the endpoint stands for it; a provider key says it
// itself (an MR registered with FI_RMA_EVENT), whatever the endpoint's caps.
TEST_P(AtomicTest, EventTargetsRefuseRestrictedAtomics) {
    for (bool prov_key : {false, true}) {
        SCOPED_TRACE(prov_key ? "provider key" : "client key");
        EpOptions o = opts(prov_key);
        o.caps |= FI_RMA_EVENT;
        Pair &p = pair(o);
        target_.assign(64, 0);
        fid_domain *d = domain(peer_domain(), o);
        for (uint64_t mr_flags : {uint64_t(FI_RMA_EVENT), uint64_t(0)}) {
            mr_.close();
            ASSERT_OK(CXIT_OPEN(
                mr_, fi_mr_reg(d, target_.data(), 64, kRemote, 0, 9, mr_flags, OUT, nullptr)));
            ASSERT_OK(fi_mr_bind(mr_.get(), &p.b->ep()->fid, 0));
            ASSERT_OK(fi_mr_enable(mr_.get()));
            uint64_t v = 1, old = 0;
            fi_ioc ioc{&v, 1}, res{&old, 1};
            fi_rma_ioc rioc{0, 1, fi_mr_key(mr_.get())};
            fi_msg_atomic msg{&ioc, nullptr, 1, p.a2b, &rioc, 1, FI_UINT64, FI_SUM, nullptr, 0};
            if (prov_key && !mr_flags) {  // the key says: no events
                post(
                    [&] {
                        return fi_fetch_atomicmsg(p.a->ep(), &msg, &res, nullptr, 1,
                                                  FI_DELIVERY_COMPLETE | FI_COMPLETION);
                    },
                    "delivery-complete fetch to an MR without events");
                wait_comp(p.a->tx(), nullptr, "delivery-complete fetch");
                continue;
            }
            EXPECT_RC(-FI_EINVAL, fi_atomicmsg(p.a->ep(), &msg, FI_CXI_UNRELIABLE));
            EXPECT_RC(-FI_EINVAL,
                      fi_fetch_atomicmsg(p.a->ep(), &msg, &res, nullptr, 1, FI_DELIVERY_COMPLETE));
            EXPECT_RC(-FI_EINVAL,
                      fi_fetch_atomicmsg(p.a->ep(), &msg, &res, nullptr, 1, FI_MATCH_COMPLETE));
            msg.op = FI_CSWAP;
            EXPECT_RC(-FI_EINVAL, fi_compare_atomicmsg(p.a->ep(), &msg, &ioc, nullptr, 1, &res,
                                                       nullptr, 1, FI_DELIVERY_COMPLETE));
        }
        mr_.close();
    }
}

// upstream amo_opt/hrp: restricted (unreliable) atomics and high-rate puts as the
// emulated NIC counts them. Restricted packets count at the target, HRP acks at the
// initiator.
TEST_P(AtomicTest, RestrictedAtomicsMoveTheNicCounters) {
    Pair &p = pair(opts(false));
    uint64_t key = expose(p, 64, kRemote, false, 3);
    put<uint64_t>(0, 0);
    fid_domain *target = domain(peer_domain(), opts(false)), *init = domain("cxi0", opts(false));
    uint64_t r0 = hw(target, kRestrictedPkt), h0 = hw(init, kHrpAck);
    uint64_t v = 1, old = 0;
    fi_ioc ioc{&v, 1}, res{&old, 1};
    fi_rma_ioc rioc{0, 1, key};
    int ctx = 0;
    fi_msg_atomic msg{&ioc, nullptr, 1, p.a2b, &rioc, 1, FI_UINT64, FI_SUM, &ctx, 0};
    auto run = [&](const char *what, const std::function<ssize_t()> &call) {
        post(call, what);
        wait_comp(p.a->tx(), &ctx, what);
    };
    run("unreliable",
        [&] { return fi_atomicmsg(p.a->ep(), &msg, FI_COMPLETION | FI_CXI_UNRELIABLE); });
    EXPECT_RC(-FI_EINVAL, fi_atomicmsg(p.a->ep(), &msg, FI_CXI_HRP));
    run("unreliable hrp", [&] {
        return fi_atomicmsg(p.a->ep(), &msg, FI_COMPLETION | FI_CXI_UNRELIABLE | FI_CXI_HRP);
    });
    run("reliable", [&] { return fi_atomicmsg(p.a->ep(), &msg, FI_COMPLETION); });
    EXPECT_RC(-FI_EBADFLAGS, fi_fetch_atomicmsg(p.a->ep(), &msg, &res, nullptr, 1,
                                                FI_CXI_UNRELIABLE | FI_CXI_HRP));
    // The page says unreliable fetching AMOs are not supported; upstream's code carries
    // them (as restricted packets to an optimized key), and so does softnic.
    run("unreliable fetch", [&] {
        return fi_fetch_atomicmsg(p.a->ep(), &msg, &res, nullptr, 1,
                                  FI_COMPLETION | FI_CXI_UNRELIABLE);
    });
    EXPECT_EQ(3u, old) << "the value before the fetch-add";
    msg.op = FI_CSWAP;
    EXPECT_RC(-FI_EBADFLAGS, fi_compare_atomicmsg(p.a->ep(), &msg, &ioc, nullptr, 1, &res, nullptr,
                                                  1, FI_CXI_UNRELIABLE | FI_CXI_HRP));
    uint64_t cmp = 4, swap = 7;
    fi_ioc cmpv{&cmp, 1}, swapv{&swap, 1};
    msg.msg_iov = &swapv;
    run("unreliable compare", [&] {
        return fi_compare_atomicmsg(p.a->ep(), &msg, &cmpv, nullptr, 1, &res, nullptr, 1,
                                    FI_COMPLETION | FI_CXI_UNRELIABLE);
    });
    EXPECT_EQ(4u, old);
    EXPECT_EQ(4u, hw(target, kRestrictedPkt) - r0);
    EXPECT_EQ(1u, hw(init, kHrpAck) - h0);
    EXPECT_EQ(7u, at<uint64_t>(0)) << "every accepted one landed once";
}

// "Unreliable AMOs must target an optimized MR": upstream's code does not refuse one to a
// standard key, it carries it reliably on the unrestricted path. Client key 3 is
// optimized, 200 is not.
TEST_P(AtomicTest, UnreliableAtomicsToAStandardKeyAreCarriedReliably) {
    Pair &p = pair(opts(false));
    fid_domain *target = domain(peer_domain(), opts(false));
    uint64_t v = 1;
    fi_ioc ioc{&v, 1};
    int ctx = 0;
    for (uint64_t key : {200ULL, 3ULL}) {
        uint64_t k = expose(p, 64, kRemote, false, key);
        put<uint64_t>(0, 0);
        uint64_t r0 = hw(target, kRestrictedPkt), u0 = hw(target, kUnrestrictedPkt);
        fi_rma_ioc rioc{0, 1, k};
        fi_msg_atomic msg{&ioc, nullptr, 1, p.a2b, &rioc, 1, FI_UINT64, FI_SUM, &ctx, 0};
        post([&] { return fi_atomicmsg(p.a->ep(), &msg, FI_COMPLETION | FI_CXI_UNRELIABLE); },
             "unreliable atomic");
        wait_comp(p.a->tx(), &ctx, "unreliable atomic");
        EXPECT_EQ(1u, at<uint64_t>(0)) << "key " << key;
        bool restricted = key < 100;
        EXPECT_EQ(restricted ? 1u : 0u, hw(target, kRestrictedPkt) - r0) << "key " << key;
        EXPECT_EQ(restricted ? 0u : 1u, hw(target, kUnrestrictedPkt) - u0) << "key " << key;
    }
}

// ERRATA as upstream's code applies it: fetching and compare AMOs may be delivery or match
// complete when the target generates no events (OpenSHMEM's FI_MSWAP under the endpoint's
// default FI_DELIVERY_COMPLETE depends on it); they complete once the value is back.
TEST_P(AtomicTest, FetchingAtomicsAreDeliveryAndMatchCompleteWithoutTargetEvents) {
    Pair &p = pair(opts());
    uint64_t key = expose(p, 64);
    put<uint64_t>(0, 5);
    uint64_t v = 1, old = 0, cmp = 0;
    fi_ioc ioc{&v, 1}, res{&old, 1}, cmpv{&cmp, 1};
    fi_rma_ioc rioc{0, 1, key};
    int ctx = 0;
    fi_msg_atomic msg{&ioc, nullptr, 1, p.a2b, &rioc, 1, FI_UINT64, FI_SUM, &ctx, 0};
    uint64_t expect = 5;
    for (uint64_t level : {FI_DELIVERY_COMPLETE, FI_MATCH_COMPLETE}) {
        msg.op = FI_SUM;
        post(
            [&] {
                return fi_fetch_atomicmsg(p.a->ep(), &msg, &res, nullptr, 1, level | FI_COMPLETION);
            },
            "delivery-complete fetch");
        wait_comp(p.a->tx(), &ctx, "fetch");
        EXPECT_EQ(expect++, old);
        msg.op = FI_MSWAP;  // mask 0: nothing changes, the old value comes back
        post(
            [&] {
                return fi_compare_atomicmsg(p.a->ep(), &msg, &cmpv, nullptr, 1, &res, nullptr, 1,
                                            level | FI_COMPLETION);
            },
            "delivery-complete mswap");
        wait_comp(p.a->tx(), &ctx, "mswap");
        EXPECT_EQ(expect, old);
    }
    EXPECT_EQ(7u, at<uint64_t>(0));
}

// FI_INJECT on fetching and compare AMOs (OpenSHMEM with FI_MR_ENDPOINT sends every swap,
// compare-swap and fetch-op this way): the operand and comparand may be reused as soon as
// the call returns; the completion still comes, with the value fetched.
TEST_P(AtomicTest, FetchingAtomicsTakeFiInject) {
    Pair &p = pair(opts());
    uint64_t key = expose(p, 64);
    put<uint64_t>(0, 10);
    uint64_t v = 3, old = 0, cmp = 13;
    fi_ioc ioc{&v, 1}, res{&old, 1}, cmpv{&cmp, 1};
    fi_rma_ioc rioc{0, 1, key};
    int ctx = 0;
    fi_msg_atomic msg{&ioc, nullptr, 1, p.a2b, &rioc, 1, FI_UINT64, FI_SUM, &ctx, 0};
    post(
        [&] {
            return fi_fetch_atomicmsg(p.a->ep(), &msg, &res, nullptr, 1, FI_INJECT | FI_COMPLETION);
        },
        "inject fetch-add");
    v = 1000;  // too late to change what was sent
    wait_comp(p.a->tx(), &ctx, "inject fetch-add");
    EXPECT_EQ(10u, old);
    msg.op = FI_CSWAP;
    v = 42;
    post(
        [&] {
            return fi_compare_atomicmsg(p.a->ep(), &msg, &cmpv, nullptr, 1, &res, nullptr, 1,
                                        FI_INJECT | FI_COMPLETION | FI_DELIVERY_COMPLETE);
        },
        "inject compare-swap");
    v = 1000;
    cmp = 1000;
    wait_comp(p.a->tx(), &ctx, "inject compare-swap");
    EXPECT_EQ(13u, old);
    EXPECT_EQ(42u, at<uint64_t>(0));
}

// FI_ATOMIC_READ has no operand: fi_fetch_atomicmsg takes it without a msg_iov, and the
// valid calls take a NULL count (both as upstream's code does).
TEST_P(AtomicTest, AtomicReadNeedsNoOperand) {
    Pair &p = pair(opts());
    uint64_t key = expose(p, 64);
    put<uint64_t>(0, 77);
    uint64_t old = 0;
    fi_ioc res{&old, 1};
    fi_rma_ioc rioc{0, 1, key};
    int ctx = 0;
    fi_msg_atomic msg{nullptr, nullptr, 0, p.a2b, &rioc, 1, FI_UINT64, FI_ATOMIC_READ, &ctx, 0};
    post([&] { return fi_fetch_atomicmsg(p.a->ep(), &msg, &res, nullptr, 1, FI_COMPLETION); },
         "atomic read without an operand");
    wait_comp(p.a->tx(), &ctx, "atomic read");
    EXPECT_EQ(77u, old);
    EXPECT_OK(fi_fetch_atomicvalid(p.a->ep(), FI_UINT64, FI_ATOMIC_READ, nullptr));
    EXPECT_RC(-FI_EOPNOTSUPP, fi_atomicvalid(p.a->ep(), FI_UINT64, FI_ATOMIC_READ, nullptr));
}

// upstream rma_opt/opt_write and rma_opt_hrp/hrp: writes to an optimized key are
// restricted packets and hit the optimized-MR cache; with FI_CXI_HRP each is acked.
// fi_cxi(7) "Optimized RMA": a write is a restricted packet, and an optimized-MR cache
// hit, only when it targets an optimized MR, the target needs no events and no
// write-after-write ordering was asked for; HRP acks come only with FI_CXI_HRP on such a
// write. Each condition both ways (target events: the next test).
TEST_P(AtomicTest, RestrictedWritesMeetEveryCondition) {
    Pair &p = pair(opts(false));
    struct Case {
        const char *what;
        uint64_t key, order, flags;
        bool restricted, hrp;
    } cases[] = {
        {"optimized key", 5, 0, 0, true, false},
        {"standard key", 200, 0, 0, false, false},
        {"RMA WAW ordering", 5, FI_ORDER_RMA_WAW, 0, false, false},
        {"WAW ordering", 5, FI_ORDER_WAW, 0, false, false},
        {"HRP", 5, 0, FI_CXI_HRP, true, true},
        {"HRP to a standard key", 200, 0, FI_CXI_HRP, false, false},
    };
    for (const Case &c : cases) {
        uint64_t key = expose(p, 64, kRemote, false, c.key);
        uint64_t order = c.order;
        ASSERT_OK(fi_set_val(&p.a->ep()->fid, FI_OPT_CXI_SET_MSG_ORDER, &order));
        expect_counted_write(p, opts(false), key, c.flags, c.restricted, c.hrp, c.what);
    }
}

// A target that counts remote writes (FI_RMA_EVENT) is never written with restricted
// packets and has no optimized-MR cache hits, even from an optimized key.
TEST_P(AtomicTest, TargetEventsMakeWritesUnrestricted) {
    EpOptions o = opts(false);
    o.caps |= FI_RMA_EVENT;
    Pair &p = pair(o);
    uint64_t key = expose(p, 64, kRemote, false, 5);
    expect_counted_write(p, o, key, FI_CXI_HRP, false, false, "write to an FI_RMA_EVENT target");
}

TEST_P(AtomicTest, OptimizedKeyWritesMoveTheNicCounters) {
    optimized_writes(false);  // client key 5
}

TEST_P(AtomicTest, OptimizedProviderKeyWritesMoveTheNicCounters) {
    optimized_writes(true);  // one of the first 92 MR ids
}

// Many fetch-adds in flight on one word: every increment lands exactly once and every
// fetched value is distinct. (Several processes at once: test_multiproc.)
TEST_P(AtomicTest, ManyFetchAddsInFlightEachSeeADistinctValue) {
    Pair &p = pair(opts());
    uint64_t key = expose(p, 64);
    put<uint64_t>(0, 0);
    const int kOps = 2000;
    std::vector<uint64_t> seen(kOps);
    std::vector<int> ctx(kOps);
    for (int i = 0; i < kOps; i++) {
        uint64_t one = 1;
        post(
            [&] {
                return fi_fetch_atomic(p.a->ep(), &one, 1, nullptr, &seen[i], nullptr, p.a2b, 0,
                                       key, FI_UINT64, FI_SUM, &ctx[i]);
            },
            "fi_fetch_atomic");
        if (i % 64 == 63) progress_all();
    }
    for (int i = 0; i < kOps; i++)
        wait_comp(p.a->tx(), &ctx[i], "fetch-add");
    EXPECT_EQ(uint64_t(kOps), at<uint64_t>(0));
    std::sort(seen.begin(), seen.end());
    for (int i = 0; i < kOps; i++)
        ASSERT_EQ(uint64_t(i), seen[i]) << "a value fetched twice";
}

TEST_P(AtomicTest, EndpointWithoutAtomicCapRefuses) {
    EpOptions o;
    o.caps = FI_MSG | FI_RMA;
    Pair &p = pair(o);
    uint64_t v = 0;
    EXPECT_RC(-FI_EINVAL,
              fi_atomic(p.a->ep(), &v, 1, nullptr, p.a2b, 0, 1, FI_UINT64, FI_SUM, nullptr));
}

}  // namespace

CXIT_INSTANTIATE_TRANSPORTS(AtomicTest);

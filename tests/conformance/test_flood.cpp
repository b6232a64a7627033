// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Two endpoints that flood each other with one-sided requests (MPICH's rma/test5: each
// rank issues 2,000 one-int MPI_Get to the other) at the default sizes, each posting far
// more than its transmit queue holds. Every request completes, with the right value: an
// endpoint answers what it owes without waiting behind its own requests.
#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "one_sided.hpp"

using namespace cxit;

namespace {

constexpr size_t kPerSide = 4096;  // four times the default transmit queue

class FloodTest : public OneSidedTest {
  protected:
    // FI_RMA_EVENT: within a host the reads take the packet path (a target that counts
    // events is never read by a single copy), where the queues can fill.
    uint64_t caps() const override { return FI_MSG | FI_RMA | FI_ATOMIC | FI_RMA_EVENT; }

    // An MR of 64 bytes on a's side as well, for b to target; returns its key.
    uint64_t expose_a(Pair &p) {
        mine_.assign(64, 0);
        fid_domain *d = domain("cxi0", opts());
        EXPECT_OK(CXIT_OPEN(
            mine_mr_, fi_mr_reg(d, mine_.data(), mine_.size(), kRemote, 0, 11, 0, OUT, nullptr)));
        EXPECT_OK(fi_mr_bind(mine_mr_.get(), &p.a->ep()->fid, 0));
        EXPECT_OK(fi_mr_enable(mine_mr_.get()));
        return fi_mr_key(mine_mr_.get());
    }

    // Both sides post `issue(side, i)` kPerSide times, as fast as their queues take them,
    // and poll both CQs in between; fails if completions stop coming for kTimeout.
    void flood(Pair &p, const std::function<ssize_t(int side, size_t i)> &issue) {
        size_t posted[2] = {0, 0};
        Endpoint *ep[2] = {p.a.get(), p.b.get()};
        auto last = std::chrono::steady_clock::now();
        size_t seen = 0;
        while (ep[0]->tx().ok_count() < kPerSide || ep[1]->tx().ok_count() < kPerSide) {
            for (int s = 0; s < 2; s++) {
                while (posted[s] < kPerSide) {
                    ssize_t rc = issue(s, posted[s]);
                    if (rc == -FI_EAGAIN) break;
                    ASSERT_RC(0, rc) << "side " << s << ", request " << posted[s];
                    posted[s]++;
                }
                ep[s]->tx().poll();
            }
            ASSERT_EQ(0u, ep[0]->tx().err_count() + ep[1]->tx().err_count())
                << ep[0]->tx().describe_errors() << ep[1]->tx().describe_errors();
            size_t now = ep[0]->tx().ok_count() + ep[1]->tx().ok_count();
            if (now != seen) {
                seen = now;
                last = std::chrono::steady_clock::now();
            }
            ASSERT_LT(std::chrono::steady_clock::now() - last, kTimeout)
                << "stuck: " << ep[0]->tx().ok_count() << " and " << ep[1]->tx().ok_count()
                << " of " << kPerSide << " completed (posted " << posted[0] << ", " << posted[1]
                << ")";
        }
    }

    std::vector<uint8_t> mine_;
    Fid<fid_mr> mine_mr_;
};

TEST_P(FloodTest, ReadsBothWaysAllComplete) {
    Pair &p = pair(opts());
    uint64_t key_b = expose(p, 64), key_a = expose_a(p);
    std::memset(target_.data(), 0xB0, 64);
    std::memset(mine_.data(), 0xA0, 64);
    std::vector<uint32_t> got[2] = {std::vector<uint32_t>(kPerSide),
                                    std::vector<uint32_t>(kPerSide)};
    flood(p, [&](int s, size_t i) {
        Endpoint &from = s ? *p.b : *p.a;
        return fi_read(from.ep(), &got[s][i], sizeof(uint32_t), nullptr, s ? p.b2a : p.a2b,
                       (i % 16) * 4, s ? key_a : key_b, nullptr);
    });
    for (size_t i = 0; i < kPerSide; i++) {
        ASSERT_EQ(0xB0B0B0B0u, got[0][i]) << "a's read " << i;
        ASSERT_EQ(0xA0A0A0A0u, got[1][i]) << "b's read " << i;
    }
}

TEST_P(FloodTest, FetchingAtomicsBothWaysAllComplete) {
    Pair &p = pair(opts());
    uint64_t key_b = expose(p, 64), key_a = expose_a(p);
    std::memset(target_.data(), 0, 8);
    std::vector<uint64_t> old[2] = {std::vector<uint64_t>(kPerSide),
                                    std::vector<uint64_t>(kPerSide)};
    const uint64_t one = 1;
    flood(p, [&](int s, size_t i) {
        Endpoint &from = s ? *p.b : *p.a;
        return fi_fetch_atomic(from.ep(), &one, 1, nullptr, &old[s][i], nullptr, s ? p.b2a : p.a2b,
                               0, s ? key_a : key_b, FI_UINT64, FI_SUM, nullptr);
    });
    uint64_t a_total = 0, b_total = 0;
    std::memcpy(&a_total, mine_.data(), sizeof(a_total));
    std::memcpy(&b_total, target_.data(), sizeof(b_total));
    EXPECT_EQ(kPerSide, b_total) << "b's counter: every add of a applied once";
    EXPECT_EQ(kPerSide, a_total) << "a's counter: every add of b applied once";
    // Each side saw every value from 0 to kPerSide-1 exactly once.
    for (auto &v : old) {
        std::sort(v.begin(), v.end());
        for (size_t i = 0; i < kPerSide; i++)
            ASSERT_EQ(i, v[i]);
    }
}

CXIT_INSTANTIATE_TRANSPORTS(FloodTest);

}  // namespace

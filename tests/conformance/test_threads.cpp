// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Thread safety (seed: "Data transfer and control interfaces are always
// considered thread-safe"): concurrent senders on one endpoint, concurrent
// readers of one CQ, concurrent object creation, AV inserts, counter adds,
// and two threads ping-ponging.
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "fixture.hpp"

using namespace cxit;

namespace {

constexpr int kThreads = 4;

class ThreadsTest : public TransportTest {};

TEST_P(ThreadsTest, ConcurrentSendersOnOneEndpoint) {
    Pair p = make_pair();
    constexpr uint64_t kPer = 100;
    const uint64_t total = kThreads * kPer;
    std::vector<uint64_t> in(total, 0);
    std::vector<int> rctx(total);
    for (uint64_t k = 0; k < total; k++)
        ASSERT_OK(fi_trecv(p.b->ep(), &in[k], 8, nullptr, FI_ADDR_UNSPEC, k, 0, &rctx[k]));
    {
        std::vector<std::jthread> ts;
        for (uint64_t t = 0; t < kThreads; t++) {
            ts.emplace_back([&, t] {
                guarded([&] {
                    std::vector<uint64_t> out(kPer);
                    std::vector<int> sctx(kPer);
                    for (uint64_t i = 0; i < kPer; i++) {
                        const uint64_t tag = t * kPer + i;
                        out[i] = tag * 3 + 1;
                        post(
                            [&] {
                                return fi_tsend(p.a->ep(), &out[i], 8, nullptr, p.a2b, tag,
                                                &sctx[i]);
                            },
                            "fi_tsend");
                    }
                    for (uint64_t i = 0; i < kPer; i++)
                        wait_comp(p.a->tx(), &sctx[i], "threaded send");
                });
            });
        }
    }
    for (uint64_t k = 0; k < total; k++) {
        Comp c = wait_comp(p.b->rx(), &rctx[k], "receive " + std::to_string(k));
        EXPECT_EQ(k, c.e.tag);
        EXPECT_EQ(k * 3 + 1, in[k]);
    }
}

TEST_P(ThreadsTest, ConcurrentReadersOfOneCq) {
    Pair p = make_pair();
    constexpr int kMsgs = 400;
    std::vector<int> rctx(kMsgs);
    for (int k = 0; k < kMsgs; k++)
        ASSERT_OK(fi_recv(p.b->ep(), nullptr, 0, nullptr, FI_ADDR_UNSPEC, &rctx[k]));
    std::mutex mu;
    std::multiset<void *> seen;
    std::atomic<int> got{0};
    {
        std::vector<std::jthread> readers;
        for (int t = 0; t < 2; t++) {
            readers.emplace_back([&] {
                guarded([&] {
                    const auto deadline = std::chrono::steady_clock::now() + kTimeout;
                    while (got.load() < kMsgs && std::chrono::steady_clock::now() < deadline) {
                        fi_cq_tagged_entry e[8];
                        ssize_t n = fi_cq_read(p.b->rx().get(), e, 8);
                        if (n == -FI_EAGAIN) continue;
                        if (n < 0) CXIT_FAIL("fi_cq_read: " + rc_str(n));
                        std::lock_guard<std::mutex> lk(mu);
                        for (ssize_t i = 0; i < n; i++)
                            seen.insert(e[i].op_context);
                        got += static_cast<int>(n);
                    }
                });
            });
        }
        for (int k = 0; k < kMsgs; k++) {
            for (;;) {
                ssize_t rc = fi_inject(p.a->ep(), nullptr, 0, p.a2b);
                if (rc == 0) break;
                ASSERT_EQ(-FI_EAGAIN, rc) << rc_str(rc);
                fi_cq_tagged_entry e;
                EXPECT_RC(-FI_EAGAIN, fi_cq_read(p.a->tx().get(), &e, 1));
            }
        }
    }
    ASSERT_EQ(kMsgs, got.load());
    std::set<void *> unique(seen.begin(), seen.end());
    EXPECT_EQ(static_cast<size_t>(kMsgs), unique.size()) << "a completion was read twice";
    EXPECT_EQ(static_cast<size_t>(kMsgs), seen.size());
}

TEST_P(ThreadsTest, ConcurrentEndpointLifecycles) {
    fid_domain *d = domain(peer_domain());
    InfoPtr info = get_info(EpOptions{}, peer_domain());
    std::vector<std::jthread> ts;
    for (int t = 0; t < kThreads; t++) {
        ts.emplace_back([&] {
            guarded([&] {
                for (int round = 0; round < 10; round++) {
                    fi_av_attr aa{};
                    aa.type = FI_AV_TABLE;
                    fi_cq_attr ca{};
                    ca.format = FI_CQ_FORMAT_TAGGED;
                    Fid<fid_av> av;
                    Fid<fid_cq> cq;
                    Fid<fid_ep> ep;
                    CXIT_CHECK(fi_av_open(d, &aa, av.out(), nullptr));
                    CXIT_CHECK(fi_cq_open(d, &ca, cq.out(), nullptr));
                    CXIT_CHECK(fi_endpoint(d, info.get(), ep.out(), nullptr));
                    CXIT_CHECK(fi_ep_bind(ep.get(), &av->fid, 0));
                    CXIT_CHECK(fi_ep_bind(ep.get(), &cq->fid, FI_TRANSMIT | FI_RECV));
                    CXIT_CHECK(fi_enable(ep.get()));
                    EXPECT_EQ(kAddrLen, get_name(&ep->fid).size());
                    EXPECT_OK(ep.close());
                    EXPECT_OK(cq.close());
                    EXPECT_OK(av.close());
                }
            });
        });
    }
}

TEST_P(ThreadsTest, ConcurrentAvInserts) {
    fi_av_attr aa{};
    aa.type = FI_AV_TABLE;
    Fid<fid_av> av;
    ASSERT_OK(fi_av_open(domain("cxi0"), &aa, av.out(), nullptr));
    constexpr uint32_t kPer = 100;
    std::vector<std::vector<fi_addr_t>> fa(kThreads);
    {
        std::vector<std::jthread> ts;
        for (uint32_t t = 0; t < kThreads; t++) {
            ts.emplace_back([&, t] {
                guarded([&] {
                    for (uint32_t i = 0; i < kPer; i++) {
                        auto a = encode_addr(0x10000 + t, i);
                        fi_addr_t x = FI_ADDR_NOTAVAIL;
                        ASSERT_EQ(1, fi_av_insert(av.get(), a.data(), 1, &x, 0, nullptr));
                        fa[t].push_back(x);
                    }
                });
            });
        }
    }
    std::set<fi_addr_t> all;
    for (uint32_t t = 0; t < kThreads; t++) {
        ASSERT_EQ(kPer, fa[t].size());
        for (uint32_t i = 0; i < kPer; i++) {
            all.insert(fa[t][i]);
            uint8_t got[16];
            size_t len = sizeof(got);
            ASSERT_OK(fi_av_lookup(av.get(), fa[t][i], got, &len));
            CxiAddr x = decode_addr(got);
            EXPECT_EQ(0x10000 + t, x.nic);
            EXPECT_EQ(i, x.pid);
        }
    }
    EXPECT_EQ(kThreads * kPer, all.size());
}

TEST_P(ThreadsTest, ConcurrentCounterAdds) {
    fi_cntr_attr ca{};
    ca.wait_obj = FI_WAIT_UNSPEC;
    Fid<fid_cntr> c;
    ASSERT_OK(fi_cntr_open(domain("cxi0"), &ca, c.out(), nullptr));
    {
        std::vector<std::jthread> ts;
        for (int t = 0; t < kThreads; t++)
            ts.emplace_back([&] {
                for (int i = 0; i < 1000; i++)
                    EXPECT_OK(fi_cntr_add(c.get(), 1));
            });
    }
    EXPECT_EQ(kThreads * 1000u, fi_cntr_read(c.get()));
}

TEST_P(ThreadsTest, TwoThreadsPingPong) {
    Pair p = make_pair();
    constexpr int kRounds = 200;
    auto side = [&](Endpoint &me, fi_addr_t peer, bool starts) {
        guarded([&] {
            uint32_t in = 0, out = 0;
            for (int r = 0; r < kRounds; r++) {
                int rctx = 0, sctx = 0;
                post([&] { return fi_recv(me.ep(), &in, 4, nullptr, FI_ADDR_UNSPEC, &rctx); },
                     "fi_recv");
                if (starts) {
                    out = static_cast<uint32_t>(r);
                    post([&] { return fi_send(me.ep(), &out, 4, nullptr, peer, &sctx); },
                         "fi_send");
                    wait_comp(me.tx(), &sctx, "ping");
                }
                wait_comp(me.rx(), &rctx, "pong");
                EXPECT_EQ(static_cast<uint32_t>(r), in);
                if (!starts) {
                    out = in;
                    post([&] { return fi_send(me.ep(), &out, 4, nullptr, peer, &sctx); },
                         "fi_send");
                    wait_comp(me.tx(), &sctx, "pong");
                }
            }
        });
    };
    std::jthread ta([&] { side(*p.a, p.a2b, true); });
    std::jthread tb([&] { side(*p.b, p.b2a, false); });
}

CXIT_INSTANTIATE_TRANSPORTS(ThreadsTest);

}  // namespace

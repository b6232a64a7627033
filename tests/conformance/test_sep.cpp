// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Scalable endpoints with the seed's semantics (fi_cxi(7) "Scalable
// Endpoints", spec §2.4 [seed]): one PID per TX/RX context pair starting at
// the base PID; fi_rx_addr(addr, i, rx_ctx_bits) targets RX context i.
//
// Setup order used here: fi_scalable_ep, bind the AV, create the contexts,
// bind a CQ to each, enable the contexts, then enable the SEP.
#include "fixture.hpp"

using namespace cxit;

namespace {

constexpr int kCtx = 4;
constexpr int kCtxBits = 2;

struct Sep {
    Fid<fid_av> av;
    std::vector<std::unique_ptr<Cq>> txcq, rxcq;
    Fid<fid_ep> sep;  // closed after the contexts below
    std::vector<Fid<fid_ep>> tx, rx;
    std::vector<uint8_t> name;
};

class SepTest : public TransportTest {
  protected:
    // Builds a SEP with `n` context pairs; returns the first failing rc.
    long build(Sep &s, EpOptions o, int n, const char *service = nullptr) {
        o.src_service = service;
        InfoPtr info = get_info(o, "cxi0");
        info->ep_attr->tx_ctx_cnt = static_cast<size_t>(n);
        info->ep_attr->rx_ctx_cnt = static_cast<size_t>(n);
        fid_domain *d = domain("cxi0", o);
        long rc = CXIT_OPEN(s.sep, fi_scalable_ep(d, info.get(), OUT, nullptr));
        if (rc) return rc;
        fi_av_attr aa{};
        aa.type = FI_AV_TABLE;
        aa.flags = o.av_flags;
        aa.rx_ctx_bits = kCtxBits;
        CXIT_CHECK(fi_av_open(d, &aa, s.av.out(), nullptr));
        if ((rc = fi_scalable_ep_bind(s.sep.get(), &s.av->fid, 0))) return rc;
        fi_cq_attr ca{};
        ca.format = FI_CQ_FORMAT_TAGGED;
        s.tx.resize(n);
        s.rx.resize(n);
        for (int i = 0; i < n; i++) {
            if ((rc = CXIT_OPEN(s.tx[i], fi_tx_context(s.sep.get(), i, nullptr, OUT, nullptr))))
                return rc;
            if ((rc = CXIT_OPEN(s.rx[i], fi_rx_context(s.sep.get(), i, nullptr, OUT, nullptr))))
                return rc;
            s.txcq.push_back(std::make_unique<Cq>(d, ca, false));
            s.rxcq.push_back(std::make_unique<Cq>(d, ca, false));
            if ((rc = fi_ep_bind(s.tx[i].get(), &s.txcq[i]->get()->fid, FI_TRANSMIT))) return rc;
            if ((rc = fi_ep_bind(s.rx[i].get(), &s.rxcq[i]->get()->fid, FI_RECV))) return rc;
        }
        for (int i = 0; i < n; i++) {
            if ((rc = fi_enable(s.tx[i].get()))) return rc;
            if ((rc = fi_enable(s.rx[i].get()))) return rc;
        }
        if ((rc = fi_enable(s.sep.get()))) return rc;
        s.name = get_name(&s.sep->fid);
        return 0;
    }
    // A regular peer endpoint whose AV understands rx_ctx_bits.
    EndpointPtr peer() {
        EpOptions o;
        o.rx_ctx_bits = kCtxBits;
        return make_ep(peer_domain(), o);
    }
    // Sends one tagged message carrying `i` to each target and checks that
    // RX context i (and only it) receives message i.
    void expect_routed(Sep &s, Endpoint &b, const std::vector<fi_addr_t> &targets) {
        std::vector<uint32_t> in(kCtx, ~0u), out(kCtx);
        std::vector<int> rctx(kCtx), sctx(kCtx);
        for (int i = 0; i < kCtx; i++)
            ASSERT_OK(
                fi_trecv(s.rx[i].get(), &in[i], 4, nullptr, FI_ADDR_UNSPEC, 0, kMaxTag, &rctx[i]));
        for (uint32_t i = 0; i < kCtx; i++) {
            out[i] = i;
            post([&] { return fi_tsend(b.ep(), &out[i], 4, nullptr, targets[i], 1, &sctx[i]); },
                 "fi_tsend");
        }
        for (int i = 0; i < kCtx; i++) {
            Comp c = wait_comp(*s.rxcq[i], &rctx[i], "RX context " + std::to_string(i));
            EXPECT_EQ(FI_TAGGED | FI_RECV, c.e.flags);
            EXPECT_EQ(static_cast<uint32_t>(i), in[i]) << "RX context " << i;
            wait_comp(b.tx(), &sctx[i], "send to context " + std::to_string(i));
        }
    }
};

TEST_P(SepTest, RxAddrTargetsEachReceiveContext) {
    Sep s;
    ASSERT_OK(build(s, EpOptions{}, kCtx));
    EndpointPtr b = peer();
    fi_addr_t base = b->insert(s.name);
    std::vector<fi_addr_t> targets;
    for (int i = 0; i < kCtx; i++)
        targets.push_back(fi_rx_addr(base, i, kCtxBits));
    expect_routed(s, *b, targets);
}

TEST_P(SepTest, EveryTransmitContextSends) {
    Sep s;
    ASSERT_OK(build(s, EpOptions{}, kCtx));
    EndpointPtr b = peer();
    fi_addr_t to_b = FI_ADDR_NOTAVAIL;
    ASSERT_EQ(1, fi_av_insert(s.av.get(), b->name().data(), 1, &to_b, 0, nullptr));
    std::vector<uint32_t> in(kCtx, ~0u);
    std::vector<int> rctx(kCtx), sctx(kCtx);
    for (uint32_t i = 0; i < kCtx; i++)
        ASSERT_OK(fi_trecv(b->ep(), &in[i], 4, nullptr, FI_ADDR_UNSPEC, 100 + i, 0, &rctx[i]));
    for (uint32_t i = 0; i < kCtx; i++) {
        ASSERT_OK(fi_tsend(s.tx[i].get(), &i, 4, nullptr, to_b, 100 + i, &sctx[i]));
        Comp c = wait_comp(*s.txcq[i], &sctx[i], "send from TX context " + std::to_string(i));
        EXPECT_EQ(FI_TAGGED | FI_SEND, c.e.flags);
        wait_comp(b->rx(), &rctx[i], "receive from TX context " + std::to_string(i));
        EXPECT_EQ(i, in[i]);
    }
}

TEST_P(SepTest, ContextsUseConsecutivePidsFromTheBase) {
    Sep s;
    uint32_t base = 0;
    for (uint32_t cand : candidate_pids(kCtx)) {
        Sep t;
        const std::string svc = std::to_string(cand);
        long rc = build(t, EpOptions{}, kCtx, svc.c_str());
        if (rc == -FI_EADDRINUSE || rc == -FI_ENOSPC) continue;
        ASSERT_OK(rc);
        s = std::move(t);
        base = cand;
        break;
    }
    ASSERT_NE(0u, base) << "no free PID range";
    CxiAddr a = decode_addr(s.name.data());
    EXPECT_EQ(base, a.pid) << "fi_getname reports the base PID";
    EndpointPtr b = peer();
    std::vector<fi_addr_t> targets;
    for (uint32_t i = 0; i < kCtx; i++)
        targets.push_back(b->insert(encode_addr(a.nic, base + i)));
    expect_routed(s, *b, targets);

    const std::string taken = std::to_string(base + 2);
    EpOptions o;
    o.src_service = taken.c_str();
    o.enable = false;
    EndpointPtr clash = make_ep("cxi0", o);
    long rc = fi_enable(clash->ep());
    EXPECT_TRUE(rc == -FI_ENOSPC || rc == -FI_EADDRINUSE)
        << "PID base+2 belongs to the SEP; fi_enable returned " << rc_str(rc);
}

TEST_P(SepTest, PidRangeCollision_EADDRINUSE) {
    uint32_t pid = 0;
    EndpointPtr holder = make_ep_at_pid("cxi0", EpOptions{}, pid);
    ASSERT_GE(pid, 1u);
    const std::string svc = std::to_string(pid - 1);  // SEP range pid-1 .. pid+2
    Sep s;
    long rc = build(s, EpOptions{}, kCtx, svc.c_str());
    EXPECT_TRUE(rc == -FI_EADDRINUSE || rc == -FI_ENOSPC)
        << "SEP range overlaps PID " << pid << "; got " << rc_str(rc);
}

TEST_P(SepTest, DirectedRecvNeedsSymmetricAv_ENOPROTOOPT) {
    EpOptions o;
    o.caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV;
    Sep plain;
    EXPECT_RC(-FI_ENOPROTOOPT, build(plain, o, kCtx)) << "AV without FI_SYMMETRIC";
    o.av_flags = FI_SYMMETRIC;
    Sep sym;
    EXPECT_OK(build(sym, o, kCtx));
}

TEST_P(SepTest, CloseWithOpenContexts_EBUSY) {
    Sep s;
    ASSERT_OK(build(s, EpOptions{}, 2));
    EXPECT_RC(-FI_EBUSY, s.sep.close());
    s.tx.clear();
    s.rx.clear();
    EXPECT_OK(s.sep.close());
}

TEST_P(SepTest, ContextIndexOutOfRange_EINVAL) {
    Sep s;
    ASSERT_OK(build(s, EpOptions{}, 2));
    Fid<fid_ep> extra;
    EXPECT_RC(-FI_EINVAL, CXIT_OPEN(extra, fi_tx_context(s.sep.get(), 2, nullptr, OUT, nullptr)));
    EXPECT_RC(-FI_EINVAL, CXIT_OPEN(extra, fi_rx_context(s.sep.get(), -1, nullptr, OUT, nullptr)));
}

CXIT_INSTANTIATE_TRANSPORTS(SepTest);

}  // namespace

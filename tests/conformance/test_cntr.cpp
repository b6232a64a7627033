// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Counters (spec §7.1-§7.3, §8.3): open attributes, add/set/read/readerr limits,
// fi_cntr_wait, send/recv completion and error counting, and the cxi_counter_ops
// extension (writeback word, doorbell window) with the header's inline helpers.
#include <rdma/fi_cxi_ext.h>

#include <thread>

#include "fixture.hpp"

using namespace cxit;

namespace {

constexpr uint64_t kSuccessMax = (1ULL << 48) - 1;
constexpr uint64_t kFailureMax = 127;

class CntrTest : public CxiTest {
  protected:
    Fid<fid_cntr> open(fi_wait_obj wait = FI_WAIT_UNSPEC) {
        fi_cntr_attr a{};
        a.events = FI_CNTR_EVENTS_COMP;
        a.wait_obj = wait;
        Fid<fid_cntr> c;
        CXIT_CHECK(fi_cntr_open(domain("cxi0"), &a, c.out(), nullptr));
        return c;
    }
    EndpointPtr counted_self(fi_addr_t &self) {
        EpOptions o;
        o.counters = true;
        return make_self("cxi0", self, o);
    }
};

TEST_F(CntrTest, OpenAttributes) {
    fid_domain *d = domain("cxi0");
    Fid<fid_cntr> c;
    EXPECT_OK(CXIT_OPEN(c, fi_cntr_open(d, nullptr, OUT, nullptr))) << "NULL attr";
    for (fi_wait_obj w :
         {FI_WAIT_NONE, FI_WAIT_UNSPEC, FI_WAIT_YIELD, FI_WAIT_FD, FI_WAIT_POLLFD}) {
        fi_cntr_attr a{};
        a.wait_obj = w;
        EXPECT_OK(CXIT_OPEN(c, fi_cntr_open(d, &a, OUT, nullptr))) << "wait_obj " << w;
    }
    fi_cntr_attr bad_events{};
    bad_events.events = static_cast<fi_cntr_events>(7);
    EXPECT_RC(-FI_ENOSYS, CXIT_OPEN(c, fi_cntr_open(d, &bad_events, OUT, nullptr)));
    for (fi_wait_obj w : {FI_WAIT_MUTEX_COND}) {
        fi_cntr_attr bad_wait{};
        bad_wait.wait_obj = w;
        EXPECT_RC(-FI_ENOSYS, CXIT_OPEN(c, fi_cntr_open(d, &bad_wait, OUT, nullptr)))
            << "wait_obj " << w;
    }
}

TEST_F(CntrTest, AddSetReadRoundTrip) {
    Fid<fid_cntr> c = open();
    EXPECT_EQ(0u, fi_cntr_read(c.get()));
    EXPECT_EQ(0u, fi_cntr_readerr(c.get()));
    ASSERT_OK(fi_cntr_add(c.get(), 5));
    EXPECT_EQ(5u, fi_cntr_read(c.get()));
    ASSERT_OK(fi_cntr_add(c.get(), 7));
    EXPECT_EQ(12u, fi_cntr_read(c.get()));
    ASSERT_OK(fi_cntr_set(c.get(), 100));
    EXPECT_EQ(100u, fi_cntr_read(c.get()));
    ASSERT_OK(fi_cntr_adderr(c.get(), 2));
    EXPECT_EQ(2u, fi_cntr_readerr(c.get()));
    EXPECT_EQ(100u, fi_cntr_read(c.get())) << "errors are counted separately";
    ASSERT_OK(fi_cntr_seterr(c.get(), 0));
    EXPECT_EQ(0u, fi_cntr_readerr(c.get()));
}

TEST_F(CntrTest, ValueLimits_EINVAL) {
    Fid<fid_cntr> c = open();
    EXPECT_RC(-FI_EINVAL, fi_cntr_add(c.get(), kSuccessMax + 1));
    EXPECT_RC(-FI_EINVAL, fi_cntr_set(c.get(), kSuccessMax + 1));
    EXPECT_RC(-FI_EINVAL, fi_cntr_adderr(c.get(), kFailureMax + 1));
    EXPECT_RC(-FI_EINVAL, fi_cntr_seterr(c.get(), kFailureMax + 1));
    EXPECT_OK(fi_cntr_set(c.get(), kSuccessMax));
    EXPECT_EQ(kSuccessMax, fi_cntr_read(c.get()));
    EXPECT_OK(fi_cntr_seterr(c.get(), kFailureMax));
    EXPECT_EQ(kFailureMax, fi_cntr_readerr(c.get()));
}

TEST_F(CntrTest, WaitTimesOut_ETIMEDOUT) {
    Fid<fid_cntr> c = open();
    EXPECT_RC(-FI_ETIMEDOUT, fi_cntr_wait(c.get(), 1, 20));
}

TEST_F(CntrTest, WaitReturnsWhenThresholdAlreadyReached) {
    Fid<fid_cntr> c = open();
    ASSERT_OK(fi_cntr_set(c.get(), 5));
    EXPECT_OK(fi_cntr_wait(c.get(), 5, 1000));
    EXPECT_OK(fi_cntr_wait(c.get(), 3, 1000));
}

TEST_F(CntrTest, WaitWokenByAddFromAnotherThread) {
    Fid<fid_cntr> c = open();
    std::jthread t([&] {
        guarded([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(30));
            EXPECT_OK(fi_cntr_add(c.get(), 3));
        });
    });
    EXPECT_OK(fi_cntr_wait(c.get(), 3, 5000));
    EXPECT_EQ(3u, fi_cntr_read(c.get()));
}

TEST_F(CntrTest, WaitSeesErrorIncrement_EAVAIL) {
    Fid<fid_cntr> c = open();
    std::jthread t([&] {
        guarded([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(30));
            EXPECT_OK(fi_cntr_adderr(c.get(), 1));
        });
    });
    EXPECT_RC(-FI_EAVAIL, fi_cntr_wait(c.get(), 10, 5000));
}

TEST_F(CntrTest, WaitArguments_EINVAL) {
    Fid<fid_cntr> c = open();
    EXPECT_RC(-FI_EINVAL, fi_cntr_wait(c.get(), kSuccessMax + 1, 10)) << "threshold > 2^48-1";
    int fd = -1;
    EXPECT_RC(-FI_ENODATA, fi_control(&c->fid, FI_GETWAIT, &fd)) << "no FD wait object";
}

// softnic waits on an FI_WAIT_NONE counter by polling (upstream: -FI_EINVAL), as
// fabtests' fi_rdm_rma_trigger needs.
TEST_F(CntrTest, WaitWithoutWaitObjectPolls) {
    Fid<fid_cntr> none = open(FI_WAIT_NONE);
    EXPECT_RC(-FI_ETIMEDOUT, fi_cntr_wait(none.get(), 1, 10));
    ASSERT_OK(fi_cntr_add(none.get(), 1));
    EXPECT_OK(fi_cntr_wait(none.get(), 1, 10));
}

TEST_F(CntrTest, SendAndRecvCompletionsCounted) {
    fi_addr_t self;
    EndpointPtr ep = counted_self(self);
    for (uint32_t i = 0; i < 5; i++)
        ping(*ep, self, *ep, 16 * i, i);
    EXPECT_EQ(5u, fi_cntr_read(ep->send_cntr()));
    EXPECT_EQ(5u, fi_cntr_read(ep->recv_cntr()));
    EXPECT_EQ(0u, fi_cntr_readerr(ep->send_cntr()));
    EXPECT_EQ(0u, fi_cntr_readerr(ep->recv_cntr()));
}

TEST_F(CntrTest, InjectCountedWithoutCompletion) {
    fi_addr_t self;
    EndpointPtr ep = counted_self(self);
    char in[8], out[8] = "inject";
    int rctx = 0;
    post([&] { return fi_recv(ep->ep(), in, sizeof(in), nullptr, FI_ADDR_UNSPEC, &rctx); },
         "fi_recv");
    post([&] { return fi_inject(ep->ep(), out, sizeof(out), self); }, "fi_inject");
    wait_comp(ep->rx(), &rctx, "inject receive");
    wait_cntr(ep->send_cntr(), 1, "send");
    expect_quiet(ep->tx(), "fi_inject");
    EXPECT_EQ(1u, fi_cntr_read(ep->recv_cntr()));
}

TEST_F(CntrTest, CounterReadIsCurrentOnceCompletionIsSeen) {
    fi_addr_t self;
    EndpointPtr ep = counted_self(self);
    std::vector<uint8_t> out = pattern(kRdzvSize, 1), in(kRdzvSize);
    for (uint64_t n = 1; n <= 3; n++) {
        int sctx = 0, rctx = 0;
        post(
            [&] { return fi_recv(ep->ep(), in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, &rctx); },
            "fi_recv");
        post([&] { return fi_send(ep->ep(), out.data(), out.size(), nullptr, self, &sctx); },
             "fi_send");
        wait_comp(ep->tx(), &sctx, "send");
        EXPECT_EQ(n, fi_cntr_read(ep->send_cntr())) << "send counter lags its completion";
        wait_comp(ep->rx(), &rctx, "recv");
        EXPECT_EQ(n, fi_cntr_read(ep->recv_cntr())) << "recv counter lags its completion";
    }
}

TEST_F(CntrTest, TruncationCountsAsReceiveError) {
    fi_addr_t self;
    EndpointPtr ep = counted_self(self);
    char in[8], out[64] = {};
    int sctx = 0, rctx = 0;
    post([&] { return fi_recv(ep->ep(), in, sizeof(in), nullptr, FI_ADDR_UNSPEC, &rctx); },
         "fi_recv");
    post([&] { return fi_send(ep->ep(), out, sizeof(out), nullptr, self, &sctx); }, "fi_send");
    wait_comp(ep->tx(), &sctx, "send");
    ErrComp e = wait_err(ep->rx(), &rctx, "truncated receive");
    EXPECT_EQ(FI_ETRUNC, e.e.err);
    EXPECT_EQ(1u, fi_cntr_readerr(ep->recv_cntr()));
    EXPECT_EQ(0u, fi_cntr_read(ep->recv_cntr()));
    EXPECT_EQ(1u, fi_cntr_read(ep->send_cntr())) << "the sender completes successfully";
}

TEST_F(CntrTest, CancelCountsAsReceiveError) {
    fi_addr_t self;
    EndpointPtr ep = counted_self(self);
    char in[8];
    int rctx = 0;
    ASSERT_OK(fi_recv(ep->ep(), in, sizeof(in), nullptr, FI_ADDR_UNSPEC, &rctx));
    ASSERT_OK(fi_cancel(&ep->ep()->fid, &rctx));
    ErrComp e = wait_err(ep->rx(), &rctx, "cancelled receive");
    EXPECT_EQ(FI_ECANCELED, e.e.err);
    EXPECT_EQ(1u, fi_cntr_readerr(ep->recv_cntr()));
}

TEST_F(CntrTest, SendOnlyBindingDoesNotCountReceives) {
    fid_domain *d = domain("cxi0");
    Fid<fid_cntr> c;  // opened before the EP so that it is closed after it
    fi_cntr_attr a{};
    ASSERT_OK(fi_cntr_open(d, &a, c.out(), nullptr));
    fi_addr_t self;
    EpOptions o;
    o.enable = false;
    EndpointPtr ep = make_ep("cxi0", o);
    ASSERT_OK(fi_ep_bind(ep->ep(), &c->fid, FI_SEND));
    ep->enable();
    self = ep->insert(ep->name());
    ping(*ep, self, *ep, 32, 2);
    ping(*ep, self, *ep, 0, 3);
    wait_cntr(c.get(), 2, "send-only");
    progress_for(std::chrono::milliseconds(20));
    EXPECT_EQ(2u, fi_cntr_read(c.get())) << "receives must not be counted";
}

fi_cxi_cntr_ops *counter_ops(fid_cntr *c) {
    fi_cxi_cntr_ops *ops = nullptr;
    CXIT_CHECK(
        fi_open_ops(&c->fid, FI_CXI_COUNTER_OPS, 0, reinterpret_cast<void **>(&ops), nullptr));
    return ops;
}

TEST_F(CntrTest, WritebackWordFollowsTheCounter) {
    Fid<fid_cntr> c = open();
    fi_cxi_cntr_ops *ops = counter_ops(c.get());
    alignas(8) uint64_t wb = 0;
    EXPECT_RC(-FI_EINVAL, ops->set_wb_buffer(&c->fid, nullptr, 8));
    EXPECT_RC(-FI_EINVAL, ops->set_wb_buffer(&c->fid, &wb, 4));
    ASSERT_OK(ops->set_wb_buffer(&c->fid, &wb, sizeof(wb)));
    EXPECT_EQ(FI_CXI_CNTR_WB_VALID, wb) << "written at once, with its flag";
    ASSERT_OK(fi_cntr_add(c.get(), 41));
    ASSERT_OK(fi_cntr_adderr(c.get(), 3));
    uint64_t v = 0, e = 0;
    fi_cxi_cntr_wb_read(&wb, &v);
    fi_cxi_cntr_wb_readerr(&wb, &e);
    EXPECT_EQ(41u, v);
    EXPECT_EQ(3u, e);
    EXPECT_EQ(41u, fi_cxi_cntr_success(wb));
    EXPECT_EQ(3u, fi_cxi_cntr_failure(wb));
    ASSERT_OK(fi_cntr_set(c.get(), kSuccessMax));
    EXPECT_EQ(kSuccessMax, fi_cxi_cntr_success(wb));
    EXPECT_EQ(3u, fi_cxi_cntr_failure(wb)) << "48-bit success never spills into failures";
}

// Completions from an endpoint update the word too (upstream op_cntr_wb).
TEST_F(CntrTest, WritebackWordCountsCompletions) {
    fi_addr_t self;
    EndpointPtr ep = counted_self(self);
    fi_cxi_cntr_ops *ops = counter_ops(ep->send_cntr());
    alignas(8) uint64_t wb = 0;
    ASSERT_OK(ops->set_wb_buffer(&ep->send_cntr()->fid, &wb, sizeof(wb)));
    ping(*ep, self, *ep, 64, 1);
    ping(*ep, self, *ep, 64, 2);
    EXPECT_EQ(2u, fi_cxi_cntr_success(wb));
}

TEST_F(CntrTest, DoorbellWindowAddsAndResets) {
    Fid<fid_cntr> c = open();
    fi_cxi_cntr_ops *ops = counter_ops(c.get());
    void *mmio = nullptr;
    size_t len = 0;
    EXPECT_RC(-FI_EINVAL, ops->get_mmio_addr(&c->fid, nullptr, &len));
    ASSERT_OK(ops->get_mmio_addr(&c->fid, &mmio, &len));
    ASSERT_NE(nullptr, mmio);
    EXPECT_GE(len, 32 * sizeof(uint64_t));
    EXPECT_EQ(static_cast<uint64_t *>(mmio) + 8, fi_cxi_get_cntr_adderr_addr(mmio));
    ASSERT_OK(fi_cxi_cntr_add(mmio, 10));
    EXPECT_EQ(10u, fi_cntr_read(c.get()));
    ASSERT_OK(fi_cxi_cntr_adderr(mmio, 2));
    EXPECT_EQ(2u, fi_cntr_readerr(c.get()));
    ASSERT_OK(fi_cxi_cntr_set(mmio, 0));
    EXPECT_EQ(0u, fi_cntr_read(c.get()));
    ASSERT_OK(fi_cxi_cntr_seterr(mmio, 0));
    EXPECT_EQ(0u, fi_cntr_readerr(c.get()));
    EXPECT_RC(-FI_EINVAL, fi_cxi_cntr_add(mmio, kSuccessMax + 1));
    EXPECT_RC(-FI_EINVAL, fi_cxi_cntr_adderr(mmio, kFailureMax + 1));
    EXPECT_RC(-FI_EINVAL, fi_cxi_cntr_set(mmio, 1)) << "only a reset to 0";
    EXPECT_RC(-FI_EINVAL, fi_cxi_cntr_seterr(mmio, 1));
    uint64_t word = 0;
    EXPECT_OK(fi_cxi_gen_cntr_success(5, &word));
    EXPECT_EQ((1ULL << 63) | 5, word);
    EXPECT_RC(-FI_EINVAL, fi_cxi_gen_cntr_success(kSuccessMax + 1, &word));
}

TEST_F(CntrTest, OpsFlagsControlAndUnknownOps) {
    Fid<fid_cntr> c = open();
    uint64_t flags = 0;
    EXPECT_OK(fi_control(&c->fid, FI_GETOPSFLAG, &flags));
    EXPECT_EQ(0u, flags);
    flags = FI_CXI_CNTR_CACHED;
    EXPECT_OK(fi_control(&c->fid, FI_SETOPSFLAG, &flags));
    flags = 0;
    EXPECT_OK(fi_control(&c->fid, FI_GETOPSFLAG, &flags));
    EXPECT_EQ(FI_CXI_CNTR_CACHED, flags);
    EXPECT_RC(-FI_EINVAL, fi_control(&c->fid, FI_GETOPSFLAG, nullptr));
    EXPECT_RC(-FI_ENODATA, fi_control(&c->fid, FI_GETWAIT, &flags)) << "no FD wait object";
    void *ops = nullptr;
    EXPECT_RC(-FI_EINVAL, fi_open_ops(&c->fid, "no_such_ops", 0, &ops, nullptr));
}

}  // namespace

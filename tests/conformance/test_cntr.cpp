// Counters (spec §7.1, §7.2): open attributes, add/set/read/readerr limits,
// fi_cntr_wait, and send/recv completion and error counting.
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
    for (fi_wait_obj w : {FI_WAIT_NONE, FI_WAIT_UNSPEC, FI_WAIT_YIELD}) {
        fi_cntr_attr a{};
        a.wait_obj = w;
        EXPECT_OK(CXIT_OPEN(c, fi_cntr_open(d, &a, OUT, nullptr))) << "wait_obj " << w;
    }
    fi_cntr_attr bad_events{};
    bad_events.events = static_cast<fi_cntr_events>(7);
    EXPECT_RC(-FI_ENOSYS, CXIT_OPEN(c, fi_cntr_open(d, &bad_events, OUT, nullptr)));
    for (fi_wait_obj w : {FI_WAIT_FD, FI_WAIT_MUTEX_COND}) {
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
    Fid<fid_cntr> none = open(FI_WAIT_NONE);
    EXPECT_RC(-FI_EINVAL, fi_cntr_wait(none.get(), 1, 10)) << "counter without wait object";
    void *w = nullptr;
    EXPECT_RC(-FI_EINVAL, fi_control(&c->fid, FI_GETWAIT, &w));
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

}  // namespace

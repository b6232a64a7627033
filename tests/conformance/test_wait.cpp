// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Wait objects (beyond the seed page, which has none; as upstream cxi now has them):
// FI_WAIT_FD and FI_WAIT_POLLFD on CQs and counters, FI_WAIT_FD on EQs, FI_GETWAIT,
// fi_trywait, fi_cq_sread / fi_cntr_wait that sleep until the peer's message arrives,
// fi_cq_signal, and poll sets over CQs and counters. Endpoint a is on cxi0, b on the transport's
// peer domain; the sender is another thread, so the reader really blocks.
#include <poll.h>

#include <chrono>
#include <thread>

#include "fixture.hpp"

using namespace cxit;

namespace {

using namespace std::chrono_literals;

class WaitTest : public TransportTest {
  protected:
    EpOptions waiting() {
        EpOptions o;
        o.cq_wait = FI_WAIT_FD;
        return o;
    }
    // After `delay`, a sends `len` bytes to b on another thread and reaps its own send,
    // touching a's objects only (the harness's helpers would read b's CQ too).
    std::jthread send_later(Pair &p, std::chrono::milliseconds delay, void *buf, size_t len,
                            void *ctx) {
        return std::jthread([&p, delay, buf, len, ctx] {
            std::this_thread::sleep_for(delay);
            const auto give_up = std::chrono::steady_clock::now() + 10s;
            ssize_t rc;
            while ((rc = fi_send(p.a->ep(), buf, len, nullptr, p.a2b, ctx)) == -FI_EAGAIN)
                fi_cq_read(p.a->tx().get(), nullptr, 0);
            EXPECT_EQ(0, rc) << "fi_send";
            fi_cq_tagged_entry e;
            while (fi_cq_read(p.a->tx().get(), &e, 1) != 1 &&
                   std::chrono::steady_clock::now() < give_up) {
            }
        });
    }
};

int wait_fd(fid_t f) {
    int fd = -1;
    CXIT_CHECK(fi_control(f, FI_GETWAIT, &fd));
    return fd;
}

bool readable(int fd, int timeout_ms) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, timeout_ms) == 1;
}

TEST_P(WaitTest, SreadSleepsUntilTheMessageArrives) {
    Pair p = make_pair(waiting(), waiting());
    char out[64] = "wake up", in[64] = {};
    int sctx = 0, rctx = 0;
    ASSERT_OK(fi_recv(p.b->ep(), in, sizeof(in), nullptr, FI_ADDR_UNSPEC, &rctx));
    auto sender = send_later(p, 50ms, out, sizeof(out), &sctx);
    fi_cq_tagged_entry e{};
    ASSERT_EQ(1, fi_cq_sread(p.b->rx().get(), &e, 1, nullptr, 10000));
    EXPECT_EQ(&rctx, e.op_context);
    EXPECT_EQ(sizeof(out), e.len);
    EXPECT_STREQ("wake up", in);
}

TEST_P(WaitTest, SreadTimesOutWithNothing) {
    Pair p = make_pair(waiting(), waiting());
    fi_cq_tagged_entry e{};
    EXPECT_RC(-FI_EAGAIN, fi_cq_sread(p.b->rx().get(), &e, 1, nullptr, 20));
}

// The application's own poll(): fi_trywait arms, the descriptor turns readable once the
// completion is there (the provider progresses for the sleeping application).
TEST_P(WaitTest, TrywaitThenPollTheDescriptor) {
    Pair p = make_pair(waiting(), waiting());
    fid_cq *cq = p.b->rx().get();
    const int fd = wait_fd(&cq->fid);
    ASSERT_GE(fd, 0);
    char out[16] = "fd", in[16] = {};
    int sctx = 0, rctx = 0;
    ASSERT_OK(fi_recv(p.b->ep(), in, sizeof(in), nullptr, FI_ADDR_UNSPEC, &rctx));
    fid *fids[] = {&cq->fid};
    ASSERT_OK(fi_trywait(fabric(), fids, 1));
    auto sender = send_later(p, 30ms, out, sizeof(out), &sctx);
    ASSERT_TRUE(readable(fd, 10000)) << "no wake-up for a completion";
    fi_cq_tagged_entry e{};
    ASSERT_EQ(1, fi_cq_read(cq, &e, 1));
    EXPECT_EQ(&rctx, e.op_context);
    EXPECT_OK(fi_trywait(fabric(), fids, 0)) << "an empty list";
}

TEST_P(WaitTest, TrywaitRefusesWhileCompletionsWait) {
    Pair p = make_pair(waiting(), waiting());
    char out[8] = "x", in[8] = {};
    int sctx = 0, rctx = 0;
    ASSERT_OK(fi_recv(p.b->ep(), in, sizeof(in), nullptr, FI_ADDR_UNSPEC, &rctx));
    ASSERT_OK(fi_send(p.a->ep(), out, sizeof(out), nullptr, p.a2b, &sctx));
    fid *fids[] = {&p.b->rx().get()->fid};
    // Progress a (its send) by hand: the harness's helpers would read b's CQ too.
    const auto give_up = std::chrono::steady_clock::now() + 10s;
    int rc;
    while ((rc = fi_trywait(fabric(), fids, 1)) == 0 && std::chrono::steady_clock::now() < give_up)
        fi_cq_read(p.a->tx().get(), nullptr, 0);
    ASSERT_RC(-FI_EAGAIN, rc) << "fi_trywait kept saying 0 with a completion to read";
    fi_cq_tagged_entry e{};
    EXPECT_EQ(1, fi_cq_read(p.b->rx().get(), &e, 1));
    wait_comp(p.a->tx(), &sctx, "send");  // `out` is the send's until it completes
}

// fi_poll over a CQ and a counter: each is reported once it has something new.
TEST_P(WaitTest, PollSetReportsCqAndCounter) {
    EpOptions o;
    o.counters = true;
    Pair p = make_pair(o, o);
    fi_poll_attr pa{};
    Fid<fid_poll> ps;
    ASSERT_OK(fi_poll_open(domain("cxi0"), &pa, ps.out()));
    fid_cq *cq = p.b->rx().get();
    fid_cntr *cntr = p.b->recv_cntr();
    ASSERT_OK(fi_poll_add(ps.get(), &cq->fid, 0));
    ASSERT_OK(fi_poll_add(ps.get(), &cntr->fid, 0));
    void *ctx[4] = {};
    EXPECT_EQ(0, fi_poll(ps.get(), ctx, 4)) << "nothing yet";
    char out[8] = "poll", in[8] = {};
    int sctx = 0, rctx = 0;
    ASSERT_OK(fi_recv(p.b->ep(), in, sizeof(in), nullptr, FI_ADDR_UNSPEC, &rctx));
    ASSERT_OK(fi_send(p.a->ep(), out, sizeof(out), nullptr, p.a2b, &sctx));
    // Progress a by hand: the harness's helpers would read b's CQ too.
    // The counter may change between two fi_poll calls' looks at the CQ: it is then
    // reported alone, once, and the CQ on the next call.
    const auto give_up = std::chrono::steady_clock::now() + 10s;
    bool saw_cq = false, saw_cntr = false;
    while (!(saw_cq && saw_cntr) && std::chrono::steady_clock::now() < give_up) {
        int got = fi_poll(ps.get(), ctx, 4);
        ASSERT_GE(got, 0);
        for (int i = 0; i < got; i++) {
            saw_cq |= ctx[i] == cq->fid.context;
            saw_cntr |= ctx[i] == cntr->fid.context;
        }
        fi_cq_read(p.a->tx().get(), nullptr, 0);
    }
    ASSERT_TRUE(saw_cq && saw_cntr) << "cq " << saw_cq << " counter " << saw_cntr;
    int n = fi_poll(ps.get(), ctx, 4);
    ASSERT_EQ(1, n) << "the counter has not changed again; the CQ still holds its entry";
    EXPECT_EQ(cq->fid.context, ctx[0]);
    EXPECT_RC(-FI_EBUSY, ps.close()) << "members left";
    EXPECT_OK(fi_poll_del(ps.get(), &cq->fid, 0));
    EXPECT_OK(fi_poll_del(ps.get(), &cntr->fid, 0));
    EXPECT_RC(-FI_EINVAL, fi_poll_del(ps.get(), &cntr->fid, 0)) << "not a member";
    EXPECT_OK(ps.close());
    wait_comp(p.a->tx(), &sctx, "send");  // `out` is the send's until it completes
}

CXIT_INSTANTIATE_TRANSPORTS(WaitTest);

class WaitObjectTest : public CxiTest {};

TEST_F(WaitObjectTest, CqWaitObjectsAndGetwait) {
    fid_domain *d = domain("cxi0");
    fi_cq_attr a{};
    a.format = FI_CQ_FORMAT_TAGGED;
    a.wait_obj = FI_WAIT_POLLFD;
    Fid<fid_cq> cq;
    ASSERT_OK(fi_cq_open(d, &a, cq.out(), nullptr));
    pollfd fds[2];
    fi_wait_pollfd pf{0, 0, fds};
    EXPECT_RC(-FI_ETOOSMALL, fi_control(&cq->fid, FI_GETWAIT, &pf));
    EXPECT_EQ(1u, pf.nfds);
    pf.nfds = 2;
    ASSERT_OK(fi_control(&cq->fid, FI_GETWAIT, &pf));
    EXPECT_EQ(1u, pf.nfds);
    EXPECT_GE(fds[0].fd, 0);
    EXPECT_EQ(POLLIN, fds[0].events);
    Fid<fid_cq> none;
    a.wait_obj = FI_WAIT_NONE;
    ASSERT_OK(fi_cq_open(d, &a, none.out(), nullptr));
    int fd = -1;
    EXPECT_RC(-FI_ENODATA, fi_control(&none->fid, FI_GETWAIT, &fd));
    fid *fids[] = {&none->fid};
    EXPECT_RC(-FI_EINVAL, fi_trywait(fabric(), fids, 1)) << "no wait object";
    EXPECT_RC(-FI_ENOSYS, fi_cq_signal(none.get()));
}

TEST_F(WaitObjectTest, CqSignalWakesASleepingReader) {
    fi_cq_attr a{};
    a.format = FI_CQ_FORMAT_TAGGED;
    a.wait_obj = FI_WAIT_UNSPEC;
    Fid<fid_cq> cq;
    ASSERT_OK(fi_cq_open(domain("cxi0"), &a, cq.out(), nullptr));
    std::jthread t([&] {
        std::this_thread::sleep_for(30ms);
        EXPECT_OK(fi_cq_signal(cq.get()));
    });
    fi_cq_tagged_entry e{};
    EXPECT_RC(-FI_EAGAIN, fi_cq_sread(cq.get(), &e, 1, nullptr, 20000));
}

TEST_F(WaitObjectTest, CounterFdWakesOnChange) {
    fi_cntr_attr a{};
    a.events = FI_CNTR_EVENTS_COMP;
    a.wait_obj = FI_WAIT_FD;
    Fid<fid_cntr> c;
    ASSERT_OK(fi_cntr_open(domain("cxi0"), &a, c.out(), nullptr));
    const int fd = wait_fd(&c->fid);
    fid *fids[] = {&c->fid};
    ASSERT_OK(fi_trywait(fabric(), fids, 1));
    EXPECT_FALSE(readable(fd, 0));
    std::jthread t([&] {
        std::this_thread::sleep_for(20ms);
        EXPECT_OK(fi_cntr_add(c.get(), 3));
    });
    EXPECT_TRUE(readable(fd, 10000));
    EXPECT_OK(fi_cntr_wait(c.get(), 3, 10000));
    EXPECT_RC(-FI_ETIMEDOUT, fi_cntr_wait(c.get(), 4, 20));
}

TEST_F(WaitObjectTest, EqFdAndTrywait) {
    fi_eq_attr a{};
    a.wait_obj = FI_WAIT_FD;
    a.flags = FI_WRITE;
    Fid<fid_eq> eq;
    ASSERT_OK(fi_eq_open(fabric(), &a, eq.out(), nullptr));
    const int fd = wait_fd(&eq->fid);
    fid *fids[] = {&eq->fid};
    ASSERT_OK(fi_trywait(fabric(), fids, 1));
    fi_eq_entry ev{};
    ev.context = &ev;
    ASSERT_EQ(ssize_t(sizeof(ev)), fi_eq_write(eq.get(), FI_NOTIFY, &ev, sizeof(ev), 0));
    EXPECT_TRUE(readable(fd, 10000));
    EXPECT_RC(-FI_EAGAIN, fi_trywait(fabric(), fids, 1));
    uint32_t event = 0;
    EXPECT_EQ(ssize_t(sizeof(ev)), fi_eq_sread(eq.get(), &event, &ev, sizeof(ev), 1000, 0));
    EXPECT_EQ(FI_NOTIFY, event);
}

// Wait sets: a counter and a CQ opened with FI_WAIT_SET join the set; fi_wait returns
// once one of them has something, -FI_ETIMEDOUT when none does.
TEST_F(WaitObjectTest, WaitSetWakesOnAMemberCounter) {
    fi_wait_attr wa{};
    wa.wait_obj = FI_WAIT_FD;
    Fid<fid_wait> ws;
    ASSERT_OK(fi_wait_open(fabric(), &wa, ws.out()));
    int fd = -1;
    ASSERT_OK(fi_control(&ws->fid, FI_GETWAIT, &fd));
    EXPECT_GE(fd, 0);
    fi_cntr_attr ca{};
    ca.events = FI_CNTR_EVENTS_COMP;
    ca.wait_obj = FI_WAIT_SET;
    ca.wait_set = ws.get();
    Fid<fid_cntr> c;
    ASSERT_OK(fi_cntr_open(domain("cxi0"), &ca, c.out(), nullptr));
    fi_cq_attr qa{};
    qa.format = FI_CQ_FORMAT_TAGGED;
    qa.wait_obj = FI_WAIT_SET;
    qa.wait_set = ws.get();
    Fid<fid_cq> cq;
    ASSERT_OK(fi_cq_open(domain("cxi0"), &qa, cq.out(), nullptr));
    EXPECT_RC(-FI_ETIMEDOUT, fi_wait(ws.get(), 20)) << "nothing happened";
    fid *fids[] = {&ws->fid};
    ASSERT_OK(fi_trywait(fabric(), fids, 1));
    std::jthread t([&] {
        std::this_thread::sleep_for(20ms);
        EXPECT_OK(fi_cntr_add(c.get(), 1));
    });
    EXPECT_TRUE(readable(fd, 10000)) << "the set's descriptor";
    EXPECT_OK(fi_wait(ws.get(), 10000));
    EXPECT_RC(-FI_ETIMEDOUT, fi_wait(ws.get(), 20)) << "the change was reported once";
    EXPECT_RC(-FI_EBUSY, ws.close()) << "members left";
    qa.wait_set = nullptr;
    Fid<fid_cq> bad;
    EXPECT_RC(-FI_EINVAL, fi_cq_open(domain("cxi0"), &qa, bad.out(), nullptr));
    ASSERT_OK(cq.close());
    ASSERT_OK(c.close());
    EXPECT_OK(ws.close());
}

}  // namespace

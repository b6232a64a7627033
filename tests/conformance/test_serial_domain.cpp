// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// FI_THREAD_DOMAIN: the application serialises its calls into a domain, and the provider's
// data path takes no lock there (common/serial.hpp). The offload helper thread must still
// get in while the application is away, never while it is inside, and objects of a
// serialised domain must not be shared with another domain. Under FI_THREAD_COMPLETION
// each engine is serialised on its own. The data suites also run under FI_THREAD_DOMAIN
// (the "serial." tests, CXIT_THREADING=domain) and FI_THREAD_COMPLETION ("completion.").
#include <poll.h>
#include <rdma/fi_trigger.h>

#include <chrono>
#include <functional>
#include <thread>

#include "fixture.hpp"

using namespace cxit;

namespace {

class SerialDomainTest : public TransportTest {
  protected:
    static EpOptions serial() {
        EpOptions o;
        o.threading = FI_THREAD_DOMAIN;
        return o;
    }
    // Polls `cq` alone (no other endpoint of the test is progressed by this thread)
    // until `ctx` completes.
    static bool poll_alone(Cq &cq, const void *ctx) {
        const auto end = std::chrono::steady_clock::now() + kTimeout;
        while (std::chrono::steady_clock::now() < end) {
            cq.poll();
            if (cq.take(ctx)) return true;
            if (cq.take_err(ctx)) {
                ADD_FAILURE() << "error completion";
                return false;
            }
        }
        return false;
    }
    static std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
        std::vector<uint8_t> v(n);
        for (size_t i = 0; i < n; i++)
            v[i] = uint8_t(i * 7 + seed);
        return v;
    }
    // A serialised domain whose CQs have a descriptor to sleep on, and triggered sends.
    static EpOptions serial_triggered() {
        EpOptions o = serial();
        o.caps |= FI_TRIGGER;
        o.cq_wait = FI_WAIT_FD;
        return o;
    }
    // 100 bytes from p.a to p.b, posted with FI_TRIGGER to go when `trig` reaches 1, and
    // their receive. Stays where it is: `tc` is the send's context.
    struct ArmedSend {
        Fid<fid_cntr> trig;
        fi_triggered_context tc{};
        std::vector<uint8_t> out, in;
        int rctx = 0;
    };
    void arm_send(Pair &p, const EpOptions &o, uint64_t tag, uint8_t seed, ArmedSend &s) {
        fi_cntr_attr ca{};
        ASSERT_OK(fi_cntr_open(domain("cxi0", o), &ca, s.trig.out(), nullptr));
        s.tc.event_type = FI_TRIGGER_THRESHOLD;
        s.tc.trigger.threshold.cntr = s.trig.get();
        s.tc.trigger.threshold.threshold = 1;
        s.out = pattern(100, seed);
        s.in.assign(100, 0);
        ASSERT_OK(fi_trecv(p.b->ep(), s.in.data(), s.in.size(), nullptr, FI_ADDR_UNSPEC, tag, 0,
                           &s.rctx));
        iovec iov{s.out.data(), s.out.size()};
        fi_msg_tagged m{&iov, nullptr, 1, p.a2b, tag, 0, &s.tc, 0};
        ASSERT_OK(fi_tsendmsg(p.a->ep(), &m, FI_TRIGGER | FI_COMPLETION));
    }
};

// The receiver pulls a rendezvous message while the sender's application never calls in:
// only the helper can answer for the sender (over UDP, serve its reads and acknowledge).
TEST_P(SerialDomainTest, TheHelperServesARendezvousWhileTheSenderIsAway) {
    Pair p = make_pair(serial(), serial());
    ASSERT_EQ(FI_THREAD_DOMAIN, p.a->info()->domain_attr->threading);
    const std::vector<uint8_t> out = pattern(1 << 20, 3);
    std::vector<uint8_t> in(out.size());
    int sctx = 0, rctx = 0;
    ASSERT_OK(fi_recv(p.b->ep(), in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, &rctx));
    ASSERT_OK(fi_send(p.a->ep(), out.data(), out.size(), nullptr, p.a2b, &sctx));
    ASSERT_TRUE(poll_alone(p.b->rx(), &rctx)) << "the receive did not complete";
    EXPECT_TRUE(in == out) << "the rendezvous data differ";
    ASSERT_TRUE(poll_alone(p.a->tx(), &sctx)) << "the send did not complete";
}

// The application comes back while the helper may be in, again and again: eager and
// rendezvous messages both ways, each endpoint left alone for a while in turn. Every byte
// is checked; a helper and an application inside together would lose or garble some.
TEST_P(SerialDomainTest, TheHelperAndTheApplicationTakeTurns) {
    Pair p = make_pair(serial(), serial());
    constexpr int kRounds = 60;
    for (int r = 0; r < kRounds; r++) {
        const size_t len = r % 3 == 0 ? 64 * 1024 : 8;
        const std::vector<uint8_t> out = pattern(len, uint8_t(r));
        std::vector<uint8_t> in(len);
        int sctx = 0, rctx = 0;
        ASSERT_OK(
            fi_trecv(p.b->ep(), in.data(), len, nullptr, FI_ADDR_UNSPEC, uint64_t(r), 0, &rctx));
        post(
            [&] {
                return fi_tsend(p.a->ep(), out.data(), len, nullptr, p.a2b, uint64_t(r), &sctx);
            },
            "tagged send");
        if (r % 2) std::this_thread::sleep_for(std::chrono::milliseconds(3));  // the helper's turn
        ASSERT_TRUE(poll_alone(p.b->rx(), &rctx)) << "round " << r;
        ASSERT_TRUE(in == out) << "round " << r << ": the data differ";
        ASSERT_TRUE(poll_alone(p.a->tx(), &sctx)) << "round " << r;
    }
}

// An FI_TRIGGER send fires while the application sleeps in poll() on its CQ's descriptor:
// only the offload helper progresses then, and it holds the serialised domain when it
// issues the send (through the tables with locks, deferred.cpp: as the application it
// would write the count that only the application writes).
TEST_P(SerialDomainTest, TheHelperFiresATriggeredSendWhileTheApplicationSleeps) {
    const EpOptions o = serial_triggered();
    Pair p = make_pair(o, o);
    ArmedSend s;
    ASSERT_NO_FATAL_FAILURE(arm_send(p, o, 7, 5, s));
    fid_cq *cq = p.a->tx().get();
    int fd = -1;
    ASSERT_OK(fi_control(&cq->fid, FI_GETWAIT, &fd));
    fid *fids[] = {&cq->fid};
    ASSERT_OK(fi_trywait(fabric(), fids, 1));
    ASSERT_OK(fi_cntr_add(s.trig.get(), 1));  // wakes the queue; nothing is issued yet
    pollfd pf{fd, POLLIN, 0};
    ASSERT_EQ(1, ::poll(&pf, 1, 10000)) << "the send did not fire while the application slept";
    ASSERT_TRUE(poll_alone(p.a->tx(), &s.tc)) << "the triggered send's completion";
    ASSERT_TRUE(poll_alone(p.b->rx(), &s.rctx)) << "its receive";
    EXPECT_EQ(s.out, s.in);
}

// fi_cq_sread in a serialised domain, end to end: the reader sleeps in sread, the send
// fires from the trigger, and every completion and byte arrives. (That sread takes under
// the domain's serial, which the helper's pushes hold, is checked where the two can be
// made to collide: unit test DomainSerial.AnSreadTakesWhatTheHelperPushesOnceAndInOrder.
// Here the descriptor's wake-up orders the push before the read.)
TEST_P(SerialDomainTest, SreadWaitsForATriggeredSend) {
    const EpOptions o = serial_triggered();
    Pair p = make_pair(o, o);
    ArmedSend s;
    ASSERT_NO_FATAL_FAILURE(arm_send(p, o, 3, 9, s));
    ASSERT_OK(fi_cntr_add(s.trig.get(), 1));
    fi_cq_tagged_entry e{};
    ASSERT_EQ(1, fi_cq_sread(p.a->tx().get(), &e, 1, nullptr, 10000)) << "the send's completion";
    EXPECT_EQ(&s.tc, e.op_context);
    ASSERT_EQ(1, fi_cq_sread(p.b->rx().get(), &e, 1, nullptr, 10000)) << "its receive";
    EXPECT_EQ(&s.rctx, e.op_context);
    EXPECT_EQ(s.out, s.in);
}

// FI_THREAD_COMPLETION: a CQ that one endpoint alone completes into takes that engine's
// serial; a second endpoint bound to it puts it back on its own lock while the first may
// be running (its helper held out meanwhile), and an endpoint's close leaves the CQ its
// lock. Two endpoints share one CQ here, eager and rendezvous both ways, the helper
// coming in while the test sleeps; then one closes and the other goes on.
TEST_P(SerialDomainTest, EndpointsSharingACqUnderCompletion) {
    EpOptions o;
    o.threading = FI_THREAD_COMPLETION;
    RawEp r = raw_ep("cxi0", o);
    Fid<fid_ep> ep2;
    ASSERT_OK(fi_endpoint(domain("cxi0", o), r.info.get(), ep2.out(), nullptr));
    EndpointPtr peer = make_ep(peer_domain(), o);
    fi_addr_t to_peer = FI_ADDR_NOTAVAIL;
    ASSERT_EQ(1, fi_av_insert(r.av.get(), peer->name().data(), 1, &to_peer, 0, nullptr));
    fi_addr_t to[2];
    fid_ep *eps[2] = {r.ep.get(), ep2.get()};
    for (int i = 0; i < 2; i++) {
        ASSERT_OK(fi_ep_bind(eps[i], &r.av.get()->fid, 0));
        ASSERT_OK(fi_ep_bind(eps[i], &r.cq.get()->fid, FI_TRANSMIT | FI_RECV));
        ASSERT_OK(fi_enable(eps[i]));
        std::vector<uint8_t> name(256);
        size_t len = name.size();
        ASSERT_OK(fi_getname(&eps[i]->fid, name.data(), &len));
        name.resize(len);
        to[i] = peer->insert(name);
    }
    auto round = [&](int n, int r_i) {  // n endpoints from eps[0]; false on a loss
        const size_t len = r_i % 4 == 0 ? 64 * 1024 : 8;
        std::vector<std::vector<uint8_t>> out(2), in(2), back(2), back_in(2);
        int rctx[2], sctx[2], prctx[2], psctx[2];
        std::vector<const void *> want;
        for (int i = 0; i < n; i++) {
            out[i] = pattern(len, uint32_t(r_i * 4 + i));
            back[i] = pattern(len, uint32_t(r_i * 4 + i + 2));
            in[i].assign(len, 0);
            back_in[i].assign(len, 0);
            EXPECT_EQ(0, fi_trecv(eps[i], in[i].data(), len, nullptr, FI_ADDR_UNSPEC, uint64_t(i),
                                  0, &rctx[i]));
            EXPECT_EQ(0, fi_trecv(peer->ep(), back_in[i].data(), len, nullptr, FI_ADDR_UNSPEC,
                                  uint64_t(8 + i), 0, &prctx[i]));
            EXPECT_EQ(0, fi_tsend(peer->ep(), out[i].data(), len, nullptr, to[i], uint64_t(i),
                                  &psctx[i]));
            EXPECT_EQ(0, fi_tsend(eps[i], back[i].data(), len, nullptr, to_peer, uint64_t(8 + i),
                                  &sctx[i]));
            want.insert(want.end(), {&rctx[i], &sctx[i]});
        }
        if (r_i % 8 == 3) std::this_thread::sleep_for(std::chrono::milliseconds(3));  // helper
        size_t got = 0;
        bool ok = poll_until([&] {
            peer->tx().poll();
            peer->rx().poll();
            fi_cq_tagged_entry e[4];
            ssize_t k = fi_cq_read(r.cq.get(), e, 4);
            for (ssize_t j = 0; j < k; j++) {
                EXPECT_NE(want.end(), std::find(want.begin(), want.end(), e[j].op_context));
                got++;
            }
            return got == want.size();
        });
        for (int i = 0; i < n && ok; i++) {
            ok = poll_alone(peer->rx(), &prctx[i]) && poll_alone(peer->tx(), &psctx[i]);
            EXPECT_EQ(out[i], in[i]);
            EXPECT_EQ(back[i], back_in[i]);
        }
        return ok;
    };
    for (int r_i = 0; r_i < 64; r_i++)
        ASSERT_TRUE(round(2, r_i)) << "round " << r_i << " of two endpoints";
    ASSERT_OK(ep2.close());  // the CQ keeps its own lock
    for (int r_i = 0; r_i < 16; r_i++)
        ASSERT_TRUE(round(1, r_i)) << "round " << r_i << " of one endpoint";
    ASSERT_OK(r.ep.close());
    fi_cq_tagged_entry e;
    EXPECT_EQ(-FI_EAGAIN, fi_cq_read(r.cq.get(), &e, 1)) << "a CQ whose endpoints are gone";
}

// A CQ's lock is its domain's promise: one of a serialised domain is not bound to an
// endpoint of another domain, nor the other way round.
TEST_P(SerialDomainTest, ACqOfAnotherDomainIsRefused) {
    RawEp r = raw_ep("cxi0", serial());
    EpOptions locked;
    locked.threading = FI_THREAD_SAFE;
    RawEp other = raw_ep(peer_domain(), locked);
    EXPECT_EQ(-FI_EINVAL, fi_ep_bind(r.ep.get(), &other.cq.get()->fid, FI_TRANSMIT));
    EXPECT_EQ(-FI_EINVAL, fi_ep_bind(other.ep.get(), &r.cq.get()->fid, FI_TRANSMIT));
    EXPECT_EQ(0, fi_ep_bind(r.ep.get(), &r.cq.get()->fid, FI_TRANSMIT));
}

// FI_THREAD_COMPLETION: the promise is per completion group (an endpoint and the CQs it
// binds), so two threads drive two groups of one domain at once, while the helper comes
// in whenever a group's thread sleeps. Each engine is serialised on its own; a lost or
// garbled message, or a data race under ThreadSanitizer, would show two threads inside
// one engine.
TEST_P(SerialDomainTest, TwoCompletionGroupsOfOneDomainRunAtOnce) {
    EpOptions o;
    o.threading = FI_THREAD_COMPLETION;
    Pair p1 = make_pair(o, o), p2 = make_pair(o, o);
    ASSERT_EQ(FI_THREAD_COMPLETION, p1.a->info()->domain_attr->threading);
    auto drive = [](Pair &p, uint8_t seed) {
        for (int r = 0; r < 200; r++) {
            const size_t len = r % 5 == 0 ? 64 * 1024 : 8;
            const std::vector<uint8_t> out = pattern(len, uint8_t(seed + r));
            std::vector<uint8_t> in(len);
            int sctx = 0, rctx = 0;
            EXPECT_EQ(0, fi_trecv(p.b->ep(), in.data(), len, nullptr, FI_ADDR_UNSPEC, uint64_t(r),
                                  0, &rctx));
            ssize_t rc;
            while ((rc = fi_tsend(p.a->ep(), out.data(), len, nullptr, p.a2b, uint64_t(r),
                                  &sctx)) == -FI_EAGAIN)
                p.a->tx().poll();
            EXPECT_EQ(0, rc) << "fi_tsend, round " << r;
            if (r % 16 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
            if (!poll_alone(p.b->rx(), &rctx) || !poll_alone(p.a->tx(), &sctx)) {
                ADD_FAILURE() << "round " << r << " did not complete";
                return;
            }
            if (in != out) {
                ADD_FAILURE() << "round " << r << ": the data differ";
                return;
            }
        }
    };
    std::thread t1(drive, std::ref(p1), uint8_t(1));
    std::thread t2(drive, std::ref(p2), uint8_t(101));
    t1.join();
    t2.join();
}

CXIT_INSTANTIATE_TRANSPORTS(SerialDomainTest);

}  // namespace

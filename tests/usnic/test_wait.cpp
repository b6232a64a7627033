// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Wait objects: CQ wait_obj choices, FI_GETWAIT, fi_cq_sread, fi_trywait,
// and the same for EQs; wait sets and poll sets.
#include <poll.h>

#include <cstring>
#include <string>

#include "fixture.hpp"

using namespace usnict;

namespace {

bool readable(int fd, int timeout_ms) {
    pollfd p{fd, POLLIN, 0};
    return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

class WaitTest : public UsnicTest {
  protected:
    void SetUp() override {
        InfoPtr info = info_of(FI_EP_DGRAM);
        open_domain(info.get());
    }
    long open_cq_rc(fi_wait_obj wait) {
        fi_cq_attr attr{};
        attr.format = FI_CQ_FORMAT_MSG;
        attr.wait_obj = wait;
        Fid<fid_cq> cq;
        return USNICT_OPEN(cq, fi_cq_open(domain(), &attr, OUT, nullptr));
    }
};

TEST_F(WaitTest, CqWaitObjectChoices) {
    EXPECT_OK(open_cq_rc(FI_WAIT_NONE));
    EXPECT_OK(open_cq_rc(FI_WAIT_UNSPEC));
    EXPECT_OK(open_cq_rc(FI_WAIT_FD));
    EXPECT_RC(-FI_EINVAL, open_cq_rc(FI_WAIT_SET)) << "FI_WAIT_SET without a set";
    EXPECT_RC(-FI_ENOSYS, open_cq_rc(FI_WAIT_MUTEX_COND));
    EXPECT_RC(-FI_ENOSYS, open_cq_rc(FI_WAIT_YIELD));
}

TEST_F(WaitTest, CqGetwait) {
    int fd = -1;
    Fid<fid_cq> none = open_cq(FI_CQ_FORMAT_MSG, FI_WAIT_NONE);
    EXPECT_RC(-FI_EINVAL, fi_control(none.fid(), FI_GETWAIT, &fd));
    Fid<fid_cq> unspec = open_cq(FI_CQ_FORMAT_MSG, FI_WAIT_UNSPEC);
    EXPECT_RC(-FI_EINVAL, fi_control(unspec.fid(), FI_GETWAIT, &fd));
    Fid<fid_cq> fdcq = open_cq(FI_CQ_FORMAT_MSG, FI_WAIT_FD);
    // The descriptor exists from fi_cq_open (the hardware page: -FI_EOPBADSTATE until
    // bound; ofi_rxd asks before binding).
    ASSERT_OK(fi_control(fdcq.fid(), FI_GETWAIT, &fd)) << "not bound yet";
    EXPECT_GE(fd, 0);
    EXPECT_RC(-FI_EINVAL, fi_control(fdcq.fid(), FI_GETWAIT, nullptr));
    auto e = bare_endpoint(Kind::dgram);
    ASSERT_OK(fi_ep_bind(e->ep.get(), fdcq.fid(), FI_TRANSMIT | FI_RECV));
    int fd2 = -1;
    ASSERT_OK(fi_control(fdcq.fid(), FI_GETWAIT, &fd2));
    EXPECT_EQ(fd2, fd) << "one descriptor for the CQ's life";
    e.reset();
}

TEST_F(WaitTest, CqSreadOnWaitNone) {
    Fid<fid_cq> cq = open_cq(FI_CQ_FORMAT_MSG, FI_WAIT_NONE);
    fi_cq_msg_entry e;
    EXPECT_RC(-FI_EOPNOTSUPP, fi_cq_sread(cq.get(), &e, 1, nullptr, 10));
}

TEST_F(WaitTest, CqSreadTimesOut) {
    EpOpts o;
    o.rx_wait = FI_WAIT_UNSPEC;
    auto e = endpoint(Kind::dgram, o);
    fi_cq_msg_entry ent;
    EXPECT_RC(-FI_EAGAIN, fi_cq_sread(e->rx_cq.get(), &ent, 1, nullptr, 20));
}

TEST_F(WaitTest, TrywaitRules) {
    Fid<fid_cq> none = open_cq(FI_CQ_FORMAT_MSG, FI_WAIT_NONE);
    Fid<fid_cq> unspec = open_cq(FI_CQ_FORMAT_MSG, FI_WAIT_UNSPEC);
    Fid<fid_eq> eq = open_eq(FI_WAIT_FD);
    fid_t f[1] = {none.fid()};
    EXPECT_RC(-FI_EINVAL, fi_trywait(fabric(), f, 1));
    f[0] = unspec.fid();
    EXPECT_OK(fi_trywait(fabric(), f, 1));
    f[0] = eq.fid();
    EXPECT_OK(fi_trywait(fabric(), f, 1));
    f[0] = &domain()->fid;
    EXPECT_RC(-FI_EINVAL, fi_trywait(fabric(), f, 1));
}

// Blocking on completions, for every endpoint type.
class WaitPairTest : public PairTest {};

TEST_P(WaitPairTest, FdCqSignalsPendingData) {
    EpOpts ob;
    ob.rx_wait = FI_WAIT_FD;
    make_pair({}, ob);
    fid_cq *cq = b_->rx_cq.get();
    int fd = -1;
    ASSERT_OK(fi_control(&cq->fid, FI_GETWAIT, &fd));
    ASSERT_GE(fd, 0);
    char out[100], in[128];
    fill_pattern(out, sizeof(out), 5);
    int rctx = 0;
    ASSERT_OK(fi_recv(b_->ep.get(), in, sizeof(in), nullptr, FI_ADDR_UNSPEC, &rctx));
    fid_t f[1] = {&cq->fid};
    ASSERT_OK(fi_trywait(fabric(), f, 1)) << "nothing is pending yet";
    ASSERT_OK(fi_send(a_->ep.get(), out, sizeof(out), nullptr, a_->peer, nullptr));
    EXPECT_TRUE(readable(fd, kTimeoutMs)) << "the fd did not signal the arriving message";
    fi_cq_msg_entry e{};
    Deadline d;
    long n;
    while ((n = fi_cq_read(cq, &e, 1)) == -FI_EAGAIN && !d.expired()) {
        progress(*a_);
    }
    ASSERT_RC(1, n);
    EXPECT_EQ(e.op_context, &rctx);
    EXPECT_EQ(e.len, sizeof(out));
    EXPECT_EQ(check_pattern(in, sizeof(out), 5), sizeof(out));
    wait_tx(*a_);  // `out` is the send's until it completes (RDM: once acknowledged)
}

TEST_P(WaitPairTest, SreadReturnsCompletion) {
    for (fi_wait_obj w : {FI_WAIT_UNSPEC, FI_WAIT_FD}) {
        SCOPED_TRACE(w);
        EpOpts ob;
        ob.rx_wait = w;
        a_.reset();
        b_.reset();
        pep_.reset();
        make_pair({}, ob);
        char out[64] = "sread", in[64];
        int rctx = 0;
        ASSERT_OK(fi_recv(b_->ep.get(), in, sizeof(in), nullptr, FI_ADDR_UNSPEC, &rctx));
        ASSERT_OK(fi_send(a_->ep.get(), out, sizeof(out), nullptr, a_->peer, nullptr));
        fi_cq_msg_entry e{};
        long n;
        Deadline d;
        // Short sreads, so that the sender's side gets progress between them.
        while ((n = fi_cq_sread(b_->rx_cq.get(), &e, 1, nullptr, 50)) == -FI_EAGAIN &&
               !d.expired()) {
            progress(*a_);
        }
        ASSERT_RC(1, n);
        EXPECT_EQ(e.op_context, &rctx);
        EXPECT_EQ(e.len, sizeof(out));
        // `out` is the send's until it completes (RDM: once acknowledged); an endpoint
        // closed first would resend from it after this scope ended (ASan saw the helper's
        // retransmission read it while the next pair was being made).
        wait_tx(*a_);
    }
}

INSTANTIATE_TEST_SUITE_P(, WaitPairTest, USNICT_ALL_KINDS, kind_param_name);

}  // namespace

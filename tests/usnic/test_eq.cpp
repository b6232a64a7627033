// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Event queues (wait object, size, fi_eq_write gating, read rules, strings),
// wait sets and poll sets.
#include <poll.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "fixture.hpp"

using namespace usnict;

namespace {

class EqTest : public UsnicTest {
  protected:
    void SetUp() override {
        InfoPtr info = info_of(FI_EP_DGRAM);
        open_domain(info.get());
    }
    // Writes one FI_NOTIFY entry carrying `data`.
    long write_notify(fid_eq *eq, uint64_t data) {
        fi_eq_entry e{};
        e.fid = &fabric()->fid;
        e.context = this;
        e.data = data;
        return fi_eq_write(eq, FI_NOTIFY, &e, sizeof(e), 0);
    }
};

std::string fd_target(int fd) {
    char buf[256] = {};
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t n = readlink(link.c_str(), buf, sizeof(buf) - 1);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

TEST_F(EqTest, UnspecBecomesFdAndSizeDefaults) {
    fi_eq_attr attr{};
    attr.wait_obj = FI_WAIT_UNSPEC;
    attr.size = 0;
    Fid<fid_eq> eq;
    ASSERT_OK(USNICT_OPEN(eq, fi_eq_open(fabric(), &attr, OUT, nullptr)));
    EXPECT_EQ(attr.size, 1024u) << "size 0 means 1024, written back";
    int fd = -1;
    ASSERT_OK(fi_control(eq.fid(), FI_GETWAIT, &fd));
    EXPECT_GE(fd, 0);
    EXPECT_NE(fd_target(fd).find("eventfd"), std::string::npos) << fd_target(fd);
}

TEST_F(EqTest, WaitObjectChoices) {
    for (fi_wait_obj w : {FI_WAIT_MUTEX_COND, FI_WAIT_YIELD}) {
        fi_eq_attr attr{};
        attr.wait_obj = w;
        Fid<fid_eq> eq;
        EXPECT_RC(-FI_ENOSYS, USNICT_OPEN(eq, fi_eq_open(fabric(), &attr, OUT, nullptr))) << w;
    }
    Fid<fid_eq> none = open_eq(FI_WAIT_NONE);
    int fd = -1;
    EXPECT_RC(-FI_EINVAL, fi_control(none.fid(), FI_GETWAIT, &fd));
    uint32_t ev;
    fi_eq_entry e;
    EXPECT_RC(-FI_ENOSYS, fi_eq_sread(none.get(), &ev, &e, sizeof(e), 10, 0));
}

TEST_F(EqTest, WriteNeedsFiWrite) {
    Fid<fid_eq> ro = open_eq(FI_WAIT_FD, 0);
    EXPECT_RC(-FI_ENOSYS, write_notify(ro.get(), 1));
    Fid<fid_eq> rw = open_eq(FI_WAIT_FD, FI_WRITE);
    EXPECT_EQ(write_notify(rw.get(), 1), static_cast<long>(sizeof(fi_eq_entry)));
}

TEST_F(EqTest, ReadRules) {
    Fid<fid_eq> eq = open_eq(FI_WAIT_FD, FI_WRITE);
    uint32_t ev = 0;
    fi_eq_entry e{};
    EXPECT_RC(-FI_EAGAIN, fi_eq_read(eq.get(), &ev, &e, sizeof(e), 0));
    fi_eq_err_entry err{};
    EXPECT_RC(-FI_EAGAIN, fi_eq_readerr(eq.get(), &err, 0));
    ASSERT_EQ(write_notify(eq.get(), 77), static_cast<long>(sizeof(e)));
    EXPECT_RC(-FI_ETOOSMALL, fi_eq_read(eq.get(), &ev, &e, 4, 0));
    EXPECT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof(e), FI_PEEK), static_cast<long>(sizeof(e)));
    EXPECT_EQ(ev, static_cast<uint32_t>(FI_NOTIFY));
    e = {};
    EXPECT_EQ(fi_eq_read(eq.get(), &ev, &e, sizeof(e), 0), static_cast<long>(sizeof(e)))
        << "FI_PEEK kept the event";
    EXPECT_EQ(e.data, 77u);
    EXPECT_EQ(e.context, this);
    EXPECT_RC(-FI_EAGAIN, fi_eq_read(eq.get(), &ev, &e, sizeof(e), 0));
}

TEST_F(EqTest, FdSignalsAndSread) {
    Fid<fid_eq> eq = open_eq(FI_WAIT_FD, FI_WRITE);
    int fd = -1;
    ASSERT_OK(fi_control(eq.fid(), FI_GETWAIT, &fd));
    uint32_t ev;
    fi_eq_entry e{};
    EXPECT_RC(-FI_EAGAIN, fi_eq_sread(eq.get(), &ev, &e, sizeof(e), 20, 0));
    ASSERT_EQ(write_notify(eq.get(), 5), static_cast<long>(sizeof(e)));
    pollfd p{fd, POLLIN, 0};
    EXPECT_EQ(poll(&p, 1, kTimeoutMs), 1);
    EXPECT_EQ(fi_eq_sread(eq.get(), &ev, &e, sizeof(e), kTimeoutMs, 0),
              static_cast<long>(sizeof(e)));
    EXPECT_EQ(e.data, 5u);
}

TEST_F(EqTest, Strerror) {
    Fid<fid_eq> eq = open_eq();
    char buf[128] = {};
    const char *s = fi_eq_strerror(eq.get(), FI_ECONNREFUSED, nullptr, buf, sizeof(buf));
    ASSERT_NE(s, nullptr);
    EXPECT_GT(std::strlen(s), 0u);
}

// Wait sets (src/common/wait_set): a CQ opened with FI_WAIT_SET joins; fi_wait times
// out while it is empty; the set cannot close before its members. (Traffic through a
// wait set: fabtests' fi_dgram_waitset.)
TEST_F(EqTest, WaitSetTakesCqs) {
    fi_wait_attr wattr{};
    wattr.wait_obj = FI_WAIT_FD;
    Fid<fid_wait> ws;
    ASSERT_OK(USNICT_OPEN(ws, fi_wait_open(fabric(), &wattr, OUT)));
    int fd = -1;
    ASSERT_OK(fi_control(ws.fid(), FI_GETWAIT, &fd));
    EXPECT_GE(fd, 0);
    fi_cq_attr cattr{};
    cattr.wait_obj = FI_WAIT_SET;
    Fid<fid_cq> cq;
    EXPECT_RC(-FI_EINVAL, USNICT_OPEN(cq, fi_cq_open(domain(), &cattr, OUT, nullptr)))
        << "FI_WAIT_SET without a set";
    cattr.wait_set = ws.get();
    ASSERT_OK(USNICT_OPEN(cq, fi_cq_open(domain(), &cattr, OUT, nullptr)));
    EXPECT_RC(-FI_ETIMEDOUT, fi_wait(ws.get(), 20));
    fid *fids[] = {ws.fid()};
    EXPECT_OK(fi_trywait(fabric(), fids, 1));
    EXPECT_RC(-FI_EBUSY, ws.close()) << "a member is left";
    ASSERT_OK(cq.close());
    EXPECT_OK(ws.close());
}

// A poll set over the receive CQ of a DGRAM pair.
class PollSetTest : public PairBase {};

TEST_F(PollSetTest, ReportsCqWithCompletions) {
    make_pair();
    fi_poll_attr pattr{};
    Fid<fid_poll> ps;
    ASSERT_OK(USNICT_OPEN(ps, fi_poll_open(domain(), &pattr, OUT)));
    Fid<fid_eq> eq = open_eq();
    EXPECT_RC(-FI_EINVAL, fi_poll_add(ps.get(), eq.fid(), 0)) << "only CQs";
    ASSERT_OK(fi_poll_add(ps.get(), b_->rx_cq.fid(), 0));
    void *ctx[4] = {};
    EXPECT_EQ(fi_poll(ps.get(), ctx, 4), 0);
    char out[16] = "poll", in[16];
    ASSERT_OK(fi_recv(b_->ep.get(), in, sizeof(in), nullptr, FI_ADDR_UNSPEC, nullptr));
    ASSERT_OK(fi_send(a_->ep.get(), out, sizeof(out), nullptr, a_->peer, nullptr));
    long n = 0;
    Deadline d;
    while ((n = fi_poll(ps.get(), ctx, 4)) == 0 && !d.expired()) {
        progress(*a_);
    }
    ASSERT_EQ(n, 1);
    EXPECT_EQ(ctx[0], b_->rx_cq->fid.context);
    EXPECT_RC(-FI_EBUSY, ps.close()) << "poll set with a member";
    EXPECT_OK(fi_poll_del(ps.get(), b_->rx_cq.fid(), 0));
    EXPECT_OK(ps.close());
}

fi_poll_attr bad_poll_attr() {
    fi_poll_attr a{};
    a.flags = 1;
    return a;
}

TEST_F(EqTest, PollSetFlagsMustBeZero) {
    fi_poll_attr a = bad_poll_attr();
    Fid<fid_poll> ps;
    EXPECT_RC(-FI_EINVAL, USNICT_OPEN(ps, fi_poll_open(domain(), &a, OUT)));
}

}  // namespace

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Error returns of spec §11 that are in scope for this round, one test per
// situation. (AV, CQ, counter and MR argument errors are next to their
// objects in test_av/cq/cntr/mr.cpp; SEP ones in test_sep.cpp.)
#include <rdma/fi_tagged.h>

#include <cstring>

#include "fixture.hpp"

using namespace cxit;

namespace {

// Message descriptors over `count` iovs to `addr`, everything else zero.
fi_msg msg_of(iovec *iov, size_t count, fi_addr_t addr) {
    fi_msg m{};
    m.msg_iov = iov;
    m.iov_count = count;
    m.addr = addr;
    return m;
}
fi_msg_tagged tmsg_of(iovec *iov, size_t count, fi_addr_t addr) {
    fi_msg_tagged m{};
    m.msg_iov = iov;
    m.iov_count = count;
    m.addr = addr;
    return m;
}

class ErrorsTest : public CxiTest {
  protected:
    EndpointPtr self_ep(fi_addr_t &self, const EpOptions &o = {}) {
        return make_self("cxi0", self, o);
    }
};

// ---------------------------------------------------------------- -FI_EINVAL
TEST_F(ErrorsTest, EndpointNullArguments_EINVAL) {
    InfoPtr info = get_info(EpOptions{}, "cxi0");
    fid_domain *d = domain("cxi0");
    Fid<fid_ep> ep;
    EXPECT_RC(-FI_EINVAL, CXIT_OPEN(ep, fi_endpoint(d, nullptr, OUT, nullptr)));
    EXPECT_RC(-FI_EINVAL, fi_endpoint(d, info.get(), nullptr, nullptr));
}

TEST_F(ErrorsTest, EndpointTypeMsgOrDgram_EINVAL) {
    InfoPtr info = get_info(EpOptions{}, "cxi0");
    for (fi_ep_type t : {FI_EP_MSG, FI_EP_DGRAM}) {
        info->ep_attr->type = t;
        Fid<fid_ep> ep;
        EXPECT_RC(-FI_EINVAL, CXIT_OPEN(ep, fi_endpoint(domain("cxi0"), info.get(), OUT, nullptr)))
            << "type " << t;
    }
}

TEST_F(ErrorsTest, EndpointSourceOnOtherNic_EINVAL) {
    InfoPtr other = get_info(EpOptions{}, "cxi1");
    Fid<fid_ep> ep;
    EXPECT_RC(-FI_EINVAL, CXIT_OPEN(ep, fi_endpoint(domain("cxi0"), other.get(), OUT, nullptr)))
        << "info src_addr is on cxi1, domain is cxi0";
}

TEST_F(ErrorsTest, EpBindInvalidObjects_EINVAL) {
    RawEp r = raw_ep("cxi0");
    EXPECT_RC(-FI_EINVAL, fi_ep_bind(r.ep.get(), nullptr, 0)) << "NULL fid";
    EXPECT_RC(-FI_EINVAL, fi_ep_bind(r.ep.get(), &domain("cxi0")->fid, 0)) << "domain fid";
    EXPECT_RC(-FI_EINVAL, fi_ep_bind(r.ep.get(), &r.cq->fid, FI_REMOTE_READ))
        << "CQ flags outside SEND/RECV/SELECTIVE_COMPLETION";
    ASSERT_OK(fi_ep_bind(r.ep.get(), &r.cq->fid, FI_TRANSMIT));
    EXPECT_RC(-FI_EINVAL, fi_ep_bind(r.ep.get(), &r.cq2->fid, FI_TRANSMIT)) << "second TX CQ";
}

TEST_F(ErrorsTest, EpBindMrOrSecondCounter_EINVAL) {
    fid_domain *d = domain("cxi0");
    std::vector<uint8_t> buf(64);
    // Opened before the EP so that they are closed after it.
    Fid<fid_mr> mr;
    ASSERT_OK(fi_mr_reg(d, buf.data(), buf.size(), FI_REMOTE_WRITE, 0, 0, 0, mr.out(), nullptr));
    Fid<fid_cntr> c1, c2;
    fi_cntr_attr ca{};
    ca.events = FI_CNTR_EVENTS_COMP;
    ASSERT_OK(fi_cntr_open(d, &ca, c1.out(), nullptr));
    ASSERT_OK(fi_cntr_open(d, &ca, c2.out(), nullptr));
    RawEp r = raw_ep("cxi0");
    EXPECT_RC(-FI_EINVAL, fi_ep_bind(r.ep.get(), &mr->fid, 0)) << "MRs bind with fi_mr_bind";
    ASSERT_OK(fi_ep_bind(r.ep.get(), &c1->fid, FI_SEND));
    EXPECT_RC(-FI_EINVAL, fi_ep_bind(r.ep.get(), &c2->fid, FI_SEND)) << "second send counter";
}

TEST_F(ErrorsTest, SendArguments_EINVAL) {
    fi_addr_t self;
    EndpointPtr ep = self_ep(self);
    char buf[16] = {};
    EXPECT_RC(-FI_EINVAL, fi_send(ep->ep(), nullptr, 8, nullptr, self, nullptr)) << "NULL buf";
    EXPECT_RC(-FI_EINVAL, fi_tsend(ep->ep(), buf, 8, nullptr, self, 1ULL << 48, nullptr))
        << "tag bit 48";
    EXPECT_RC(-FI_EINVAL, fi_send(ep->ep(), buf, 8, nullptr, 1000, nullptr))
        << "fi_addr not in the AV";
    iovec iov[2] = {{buf, 8}, {buf + 8, 8}};
    fi_msg msg = msg_of(iov, 2, self);
    EXPECT_RC(-FI_EINVAL, fi_sendmsg(ep->ep(), &msg, 0)) << "iov_count 2 > iov_limit 1";
    EXPECT_RC(-FI_EINVAL, fi_sendmsg(ep->ep(), nullptr, 0)) << "NULL msg";
    msg.iov_count = 1;
    EXPECT_RC(-FI_EINVAL, fi_sendmsg(ep->ep(), &msg, FI_FENCE)) << "FI_FENCE without the cap";
}

TEST_F(ErrorsTest, RecvArguments_EINVAL) {
    fi_addr_t self;
    EndpointPtr ep = self_ep(self);
    char buf[16] = {};
    EXPECT_RC(-FI_EINVAL, fi_recv(ep->ep(), nullptr, 8, nullptr, FI_ADDR_UNSPEC, nullptr));
    EXPECT_RC(-FI_EINVAL,
              fi_trecv(ep->ep(), buf, 8, nullptr, FI_ADDR_UNSPEC, 1ULL << 50, 0, nullptr))
        << "tag above 48 bits";
    EXPECT_RC(-FI_EINVAL,
              fi_trecv(ep->ep(), buf, 8, nullptr, FI_ADDR_UNSPEC, 0, 1ULL << 48, nullptr))
        << "ignore above 48 bits";
    iovec iov[2] = {{buf, 8}, {buf + 8, 8}};
    fi_msg msg = msg_of(iov, 2, FI_ADDR_UNSPEC);
    EXPECT_RC(-FI_EINVAL, fi_recvmsg(ep->ep(), &msg, 0)) << "iov_count 2";
}

TEST_F(ErrorsTest, DirectedRecvUnknownSource_EINVAL) {
    EpOptions o;
    o.caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV;
    fi_addr_t self;
    EndpointPtr ep = self_ep(self, o);
    char buf[8];
    EXPECT_RC(-FI_EINVAL, fi_recv(ep->ep(), buf, sizeof(buf), nullptr, 77, nullptr))
        << "source 77 is not in the AV";
}

// ---------------------------------------------------------------- -FI_ENODATA
TEST_F(ErrorsTest, GetinfoNothingMatches_ENODATA) {
    InfoPtr hints = make_hints(EpOptions{}, "cxi42");
    fi_info *out = nullptr;
    EXPECT_RC(-FI_ENODATA, fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints.get(), &out));
    EXPECT_EQ(nullptr, out);
}

// ---------------------------------------------------------------- -FI_ENOSYS
TEST_F(ErrorsTest, DataOpsBeforeEnable_ENOSYS) {
    RawEp r = raw_ep("cxi0");
    ASSERT_OK(fi_ep_bind(r.ep.get(), &r.av->fid, 0));
    ASSERT_OK(fi_ep_bind(r.ep.get(), &r.cq->fid, FI_TRANSMIT | FI_RECV));
    char buf[8] = {};
    fid_ep *ep = r.ep.get();
    EXPECT_RC(-FI_ENOSYS, fi_send(ep, buf, 8, nullptr, 0, nullptr));
    EXPECT_RC(-FI_ENOSYS, fi_recv(ep, buf, 8, nullptr, FI_ADDR_UNSPEC, nullptr));
    EXPECT_RC(-FI_ENOSYS, fi_inject(ep, buf, 8, 0));
    EXPECT_RC(-FI_ENOSYS, fi_tsend(ep, buf, 8, nullptr, 0, 1, nullptr));
    EXPECT_RC(-FI_ENOSYS, fi_trecv(ep, buf, 8, nullptr, FI_ADDR_UNSPEC, 1, 0, nullptr));
}

TEST_F(ErrorsTest, PassiveEpAndSharedContexts_ENOSYS) {
    InfoPtr info = get_info(EpOptions{}, "cxi0");
    fid_fabric *fab = fabric();
    Fid<fid_pep> pep;
    EXPECT_RC(-FI_ENOSYS, CXIT_OPEN(pep, fi_passive_ep(fab, info.get(), OUT, nullptr)));
    Fid<fid_stx> stx;
    EXPECT_RC(-FI_ENOSYS, CXIT_OPEN(stx, fi_stx_context(domain("cxi0"), nullptr, OUT, nullptr)));
    Fid<fid_ep> srx;
    EXPECT_RC(-FI_ENOSYS, CXIT_OPEN(srx, fi_srx_context(domain("cxi0"), nullptr, OUT, nullptr)));
}

// ------------------------------------------------------- -FI_ENOAV / -FI_ENOCQ
TEST_F(ErrorsTest, EnableWithoutAv_ENOAV) {
    RawEp r = raw_ep("cxi0");
    ASSERT_OK(fi_ep_bind(r.ep.get(), &r.cq->fid, FI_TRANSMIT | FI_RECV));
    EXPECT_RC(-FI_ENOAV, fi_enable(r.ep.get()));
}

TEST_F(ErrorsTest, EnableWithoutTxCq_ENOCQ) {
    RawEp r = raw_ep("cxi0");
    ASSERT_OK(fi_ep_bind(r.ep.get(), &r.av->fid, 0));
    ASSERT_OK(fi_ep_bind(r.ep.get(), &r.cq->fid, FI_RECV));
    EXPECT_RC(-FI_ENOCQ, fi_enable(r.ep.get()));
}

TEST_F(ErrorsTest, EnableRecvCapWithoutRxCq_ENOCQ) {
    RawEp r = raw_ep("cxi0");
    ASSERT_OK(fi_ep_bind(r.ep.get(), &r.av->fid, 0));
    ASSERT_OK(fi_ep_bind(r.ep.get(), &r.cq->fid, FI_TRANSMIT));
    EXPECT_RC(-FI_ENOCQ, fi_enable(r.ep.get()));
}

// ---------------------------------------------------------------- -FI_ENOSPC
TEST_F(ErrorsTest, PidAlreadyInUse_ENOSPC) {
    uint32_t pid = 0;
    EndpointPtr first = make_ep_at_pid("cxi0", EpOptions{}, pid);
    const std::string svc = std::to_string(pid);
    EpOptions o;
    o.src_service = svc.c_str();
    o.enable = false;
    EndpointPtr second = make_ep("cxi0", o);
    EXPECT_RC(-FI_ENOSPC, fi_enable(second->ep())) << "PID " << pid << " is taken";
    EndpointPtr other_nic = make_ep("cxi1", o);
    EXPECT_OK(fi_enable(other_nic->ep())) << "the same PID on another NIC is free";
}

// ------------------------------------------------------------ -FI_EOPBADSTATE
TEST_F(ErrorsTest, GetnameAndCancelBeforeEnable_EOPBADSTATE) {
    RawEp r = raw_ep("cxi0");
    uint8_t addr[16];
    size_t len = sizeof(addr);
    EXPECT_RC(-FI_EOPBADSTATE, fi_getname(&r.ep->fid, addr, &len));
    int ctx;
    EXPECT_RC(-FI_EOPBADSTATE, fi_cancel(&r.ep->fid, &ctx));
}

// -------------------------------------------------------------- -FI_ETOOSMALL
TEST_F(ErrorsTest, GetnameShortBuffer_ETOOSMALL) {
    EndpointPtr ep = make_ep("cxi0");
    uint8_t addr[kAddrLen - 1];
    size_t len = sizeof(addr);
    EXPECT_RC(-FI_ETOOSMALL, fi_getname(&ep->ep()->fid, addr, &len));
    EXPECT_EQ(kAddrLen, len) << "the required length is reported";
}

TEST_F(ErrorsTest, GetoptShortLength_ETOOSMALL) {
    EndpointPtr ep = make_ep("cxi0");
    size_t v = 0, len = 4;
    EXPECT_RC(-FI_ETOOSMALL,
              fi_getopt(&ep->ep()->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v, &len));
}

// -------------------------------------------------------------- -FI_EMSGSIZE
TEST_F(ErrorsTest, InjectTooLarge_EMSGSIZE) {
    fi_addr_t self;
    EndpointPtr ep = self_ep(self);
    std::vector<uint8_t> buf(kInjectSize + 1);
    const size_t n = kInjectSize + 1;
    EXPECT_RC(-FI_EMSGSIZE, fi_inject(ep->ep(), buf.data(), n, self));
    EXPECT_RC(-FI_EMSGSIZE, fi_injectdata(ep->ep(), buf.data(), n, 5, self));
    EXPECT_RC(-FI_EMSGSIZE, fi_tinject(ep->ep(), buf.data(), n, self, 1));
    EXPECT_RC(-FI_EMSGSIZE, fi_tinjectdata(ep->ep(), buf.data(), n, 5, self, 1));
    iovec iov{buf.data(), n};
    fi_msg msg = msg_of(&iov, 1, self);
    EXPECT_RC(-FI_EMSGSIZE, fi_sendmsg(ep->ep(), &msg, FI_INJECT));
}

TEST_F(ErrorsTest, MessageAboveMaxMsgSize_EMSGSIZE) {
    fi_addr_t self;
    EndpointPtr ep = self_ep(self);
    std::vector<uint8_t> buf(64);
    const size_t huge = 1ULL << 32;  // max_msg_size is 2^32 - 1
    EXPECT_RC(-FI_EMSGSIZE, fi_send(ep->ep(), buf.data(), huge, nullptr, self, nullptr));
    EXPECT_RC(-FI_EMSGSIZE, fi_tsend(ep->ep(), buf.data(), huge, nullptr, self, 0, nullptr));
}

// ------------------------------------------------------------- -FI_EBADFLAGS
TEST_F(ErrorsTest, SendmsgFlagsOutsideTxMask_EBADFLAGS) {
    fi_addr_t self;
    EndpointPtr ep = self_ep(self);
    char buf[8] = {};
    iovec iov{buf, sizeof(buf)};
    fi_msg msg = msg_of(&iov, 1, self);
    EXPECT_RC(-FI_EBADFLAGS, fi_sendmsg(ep->ep(), &msg, FI_MULTI_RECV));
    EXPECT_RC(-FI_EBADFLAGS, fi_sendmsg(ep->ep(), &msg, FI_PEEK));
    fi_msg_tagged tmsg = tmsg_of(&iov, 1, self);
    EXPECT_RC(-FI_EBADFLAGS, fi_tsendmsg(ep->ep(), &tmsg, FI_PEEK));
}

TEST_F(ErrorsTest, RecvmsgFlagsOutsideRxMask_EBADFLAGS) {
    fi_addr_t self;
    EndpointPtr ep = self_ep(self);
    char buf[8] = {};
    iovec iov{buf, sizeof(buf)};
    fi_msg msg = msg_of(&iov, 1, FI_ADDR_UNSPEC);
    EXPECT_RC(-FI_EBADFLAGS, fi_recvmsg(ep->ep(), &msg, FI_PEEK)) << "PEEK is tagged-only";
    fi_msg_tagged tmsg = tmsg_of(&iov, 1, FI_ADDR_UNSPEC);
    int ctx = 0;
    tmsg.context = &ctx;
    EXPECT_RC(-FI_EBADFLAGS, fi_trecvmsg(ep->ep(), &tmsg, FI_INJECT_COMPLETE)) << "a tx flag";
    // FI_DISCARD is taken with FI_PEEK or FI_CLAIM (test_peek_claim_cancel.cpp); alone,
    // and with FI_CLAIM when nothing was claimed, it is invalid.
    EXPECT_RC(-FI_EINVAL, fi_trecvmsg(ep->ep(), &tmsg, FI_DISCARD));
    EXPECT_RC(-FI_EINVAL, fi_trecvmsg(ep->ep(), &tmsg, FI_CLAIM | FI_DISCARD));
}

// ---------------------------------------------------------------- -FI_EAGAIN
TEST_F(ErrorsTest, TxQueueFull_EAGAIN) {
    EpOptions o;
    o.tx_size = 32;
    fi_addr_t self;
    EndpointPtr ep = self_ep(self, o);
    ASSERT_EQ(32u, ep->info()->tx_attr->size);
    std::vector<uint8_t> buf = pattern(kRdzvSize, 9);
    std::vector<int> ctx(64);
    size_t posted = 0;
    long rc = 0;
    // Unexpected rendezvous sends stay outstanding until a receive matches.
    for (; posted < ctx.size(); posted++) {
        rc = fi_tsend(ep->ep(), buf.data(), buf.size(), nullptr, self, 3, &ctx[posted]);
        if (rc != 0) break;
    }
    ASSERT_RC(-FI_EAGAIN, rc) << "after " << posted << " outstanding sends";
    EXPECT_GE(posted, 1u);
    EXPECT_LE(posted, 32u) << "tx_attr->size bounds the outstanding sends";
    std::vector<uint8_t> in(kRdzvSize);
    std::vector<int> rctx(posted);
    for (size_t i = 0; i < posted; i++) {
        post(
            [&] {
                return fi_trecv(ep->ep(), in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, 3, 0,
                                &rctx[i]);
            },
            "fi_trecv");
        wait_comp(ep->rx(), &rctx[i], "receive of queued send");
    }
    for (size_t i = 0; i < posted; i++)
        wait_comp(ep->tx(), &ctx[i], "queued send");
    EXPECT_EQ(SIZE_MAX, mismatch(in.data(), in.size(), 9));
}

// ---------------------------------------------------------------- -FI_ENOENT
TEST_F(ErrorsTest, CancelUnknownContext_ENOENT) {
    EndpointPtr ep = make_ep("cxi0");
    int ctx;
    EXPECT_RC(-FI_ENOENT, fi_cancel(&ep->ep()->fid, &ctx));
    EXPECT_RC(-FI_ENOENT, fi_cancel(&ep->ep()->fid, nullptr));
}

// ----------------------------------------------------------------- -FI_EBUSY
TEST_F(ErrorsTest, CloseObjectsInUse_EBUSY) {
    InfoPtr info = get_info(EpOptions{}, "cxi0");
    Fid<fid_fabric> fab;
    ASSERT_OK(fi_fabric(info->fabric_attr, fab.out(), nullptr));
    Fid<fid_domain> dom;
    ASSERT_OK(fi_domain(fab.get(), info.get(), dom.out(), nullptr));
    fi_av_attr aa{};
    aa.type = FI_AV_TABLE;
    Fid<fid_av> av;
    ASSERT_OK(fi_av_open(dom.get(), &aa, av.out(), nullptr));
    fi_cq_attr ca{};
    ca.format = FI_CQ_FORMAT_TAGGED;
    Fid<fid_cq> cq;
    ASSERT_OK(fi_cq_open(dom.get(), &ca, cq.out(), nullptr));
    fi_cntr_attr cta{};
    Fid<fid_cntr> cntr;
    ASSERT_OK(fi_cntr_open(dom.get(), &cta, cntr.out(), nullptr));
    Fid<fid_ep> ep;
    ASSERT_OK(fi_endpoint(dom.get(), info.get(), ep.out(), nullptr));
    ASSERT_OK(fi_ep_bind(ep.get(), &av->fid, 0));
    ASSERT_OK(fi_ep_bind(ep.get(), &cq->fid, FI_TRANSMIT | FI_RECV));
    ASSERT_OK(fi_ep_bind(ep.get(), &cntr->fid, FI_SEND));
    ASSERT_OK(fi_enable(ep.get()));

    EXPECT_RC(-FI_EBUSY, fab.close()) << "fabric with an open domain";
    EXPECT_RC(-FI_EBUSY, dom.close()) << "domain with an open endpoint";
    EXPECT_RC(-FI_EBUSY, av.close()) << "AV bound to an endpoint";
    EXPECT_RC(-FI_EBUSY, cq.close()) << "CQ bound to an endpoint";
    EXPECT_RC(-FI_EBUSY, cntr.close()) << "counter bound to an endpoint";
    EXPECT_OK(ep.close());
    // Each object keeps its domain open, and an EQ its fabric.
    char buf[64];
    Fid<fid_mr> mr;
    ASSERT_OK(fi_mr_reg(dom.get(), buf, sizeof(buf), FI_SEND, 0, 0, 0, mr.out(), nullptr));
    fi_eq_attr ea{};
    Fid<fid_eq> eq;
    ASSERT_OK(fi_eq_open(fab.get(), &ea, eq.out(), nullptr));
    for (fid *open : {&cntr->fid, &cq->fid, &av->fid, &mr->fid}) {
        EXPECT_RC(-FI_EBUSY, dom.close()) << "domain with an open class " << open->fclass;
        EXPECT_OK(fi_close(open));
    }
    cntr.release();
    cq.release();
    av.release();
    mr.release();
    EXPECT_OK(dom.close());
    EXPECT_RC(-FI_EBUSY, fab.close()) << "fabric with an open EQ";
    EXPECT_OK(eq.close());
    EXPECT_OK(fab.close());
}

// ----------------------------------------------------------- -FI_ENOPROTOOPT
TEST_F(ErrorsTest, UnknownOptionLevelOrName_ENOPROTOOPT) {
    EndpointPtr ep = make_ep("cxi0");
    size_t v = 0, len = sizeof(v);
    fid_t f = &ep->ep()->fid;
    EXPECT_RC(-FI_ENOPROTOOPT, fi_getopt(f, FI_OPT_ENDPOINT + 7, FI_OPT_MIN_MULTI_RECV, &v, &len));
    EXPECT_RC(-FI_ENOPROTOOPT, fi_getopt(f, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &v, &len));
    EXPECT_RC(-FI_ENOPROTOOPT, fi_setopt(f, FI_OPT_ENDPOINT, FI_OPT_BUFFERED_LIMIT, &v, len));
}

TEST_F(ErrorsTest, OptionArguments_EINVAL) {
    EndpointPtr ep = make_ep("cxi0");
    fid_t f = &ep->ep()->fid;
    size_t v = 0, len = sizeof(v);
    EXPECT_RC(-FI_EINVAL, fi_getopt(f, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, nullptr, &len));
    EXPECT_RC(-FI_EINVAL, fi_getopt(f, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v, nullptr));
    v = 1u << 24;
    EXPECT_RC(-FI_EINVAL, fi_setopt(f, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v, sizeof(v)))
        << "min_multi_recv above 2^24-1";
    EXPECT_RC(-FI_EINVAL, fi_setopt(f, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, nullptr, 8));
}

TEST_F(ErrorsTest, ControlArguments_EINVAL) {
    EndpointPtr ep = make_ep("cxi0");
    fid_t f = &ep->ep()->fid;
    EXPECT_RC(-FI_EINVAL, fi_control(f, FI_GETOPSFLAG, nullptr));
    uint64_t flags = FI_COMPLETION;  // neither FI_TRANSMIT nor FI_RECV
    EXPECT_RC(-FI_EINVAL, fi_control(f, FI_SETOPSFLAG, &flags));
    flags = FI_TRANSMIT | FI_RECV;
    EXPECT_RC(-FI_EINVAL, fi_control(f, FI_GETOPSFLAG, &flags)) << "both directions";
    EXPECT_RC(-FI_EINVAL, fi_control(f, FI_ALIAS, nullptr));
    EXPECT_RC(-FI_EINVAL, fi_control(f, FI_BACKLOG, &flags)) << "unsupported command";
}

}  // namespace

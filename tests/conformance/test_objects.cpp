// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Object lifecycle and rules (spec §9): fabric/domain/endpoint open and
// close, binds, enable, fi_getname, fi_control (ops flags, alias), options,
// threading models. Error returns of the same calls are in test_errors.cpp.
#include <rdma/fi_cxi_ext.h>

#include <cstring>
#include <set>

#include "fixture.hpp"

using namespace cxit;

namespace {

class ObjectsTest : public CxiTest {};

TEST_F(ObjectsTest, FabricAndDomainsOpenAndCloseOnBothNics) {
    InfoPtr i0 = get_info(EpOptions{}, "cxi0");
    InfoPtr i1 = get_info(EpOptions{}, "cxi1");
    Fid<fid_fabric> fab;
    ASSERT_OK(fi_fabric(i0->fabric_attr, fab.out(), nullptr));
    Fid<fid_domain> d0, d1;
    ASSERT_OK(fi_domain(fab.get(), i0.get(), d0.out(), nullptr));
    ASSERT_OK(fi_domain(fab.get(), i1.get(), d1.out(), nullptr));
    EXPECT_OK(d1.close());
    EXPECT_OK(d0.close());
    EXPECT_OK(fab.close());
}

TEST_F(ObjectsTest, EndpointLifecycleExplicitCloses) {
    RawEp r = raw_ep("cxi0");
    ASSERT_OK(fi_ep_bind(r.ep.get(), &r.av->fid, 0));
    ASSERT_OK(fi_ep_bind(r.ep.get(), &r.cq->fid, FI_TRANSMIT));
    ASSERT_OK(fi_ep_bind(r.ep.get(), &r.cq2->fid, FI_RECV));
    ASSERT_OK(fi_enable(r.ep.get()));
    EXPECT_OK(r.ep.close());
    EXPECT_OK(r.cq2.close());
    EXPECT_OK(r.cq.close());
    EXPECT_OK(r.av.close());
}

TEST_F(ObjectsTest, SingleCqForBothDirections) {
    RawEp r = raw_ep("cxi0");
    ASSERT_OK(fi_ep_bind(r.ep.get(), &r.av->fid, 0));
    ASSERT_OK(fi_ep_bind(r.ep.get(), &r.cq->fid, FI_TRANSMIT | FI_RECV));
    ASSERT_OK(fi_enable(r.ep.get()));
}

TEST_F(ObjectsTest, EpTypeUnspecAccepted) {
    InfoPtr info = get_info(EpOptions{}, "cxi0");
    info->ep_attr->type = FI_EP_UNSPEC;
    Fid<fid_ep> ep;
    EXPECT_OK(CXIT_OPEN(ep, fi_endpoint(domain("cxi0"), info.get(), OUT, nullptr)));
}

TEST_F(ObjectsTest, TxSizeWithinLimitAcceptedTooLargeRejected) {
    InfoPtr info = get_info(EpOptions{}, "cxi0");
    info->tx_attr->size = 64;
    Fid<fid_ep> ok;
    EXPECT_OK(CXIT_OPEN(ok, fi_endpoint(domain("cxi0"), info.get(), OUT, nullptr)));
    info->tx_attr->size = 1234567;
    Fid<fid_ep> bad;
    long rc = CXIT_OPEN(bad, fi_endpoint(domain("cxi0"), info.get(), OUT, nullptr));
    EXPECT_LT(rc, 0) << "tx_attr->size 1234567 exceeds the maximum (16384)";
}

TEST_F(ObjectsTest, GetnameGivesEightByteAddressOnDomainNic) {
    EndpointPtr a = make_ep("cxi0");
    EndpointPtr b = make_ep("cxi0");
    EndpointPtr c = make_ep("cxi1");
    ASSERT_EQ(kAddrLen, a->name().size());
    CxiAddr aa = decode_addr(a->name().data()), ab = decode_addr(b->name().data()),
            ac = decode_addr(c->name().data());
    CxiAddr nic0 = decode_addr(a->info()->src_addr), nic1 = decode_addr(c->info()->src_addr);
    EXPECT_EQ(nic0.nic, aa.nic);
    EXPECT_EQ(nic0.nic, ab.nic);
    EXPECT_EQ(nic1.nic, ac.nic);
    EXPECT_LT(aa.pid, kPidAny) << "an enabled EP has a concrete PID";
    EXPECT_LT(ab.pid, kPidAny);
    EXPECT_NE(aa.pid, ab.pid) << "two EPs on one NIC need distinct PIDs";
    uint16_t vni = 1;
    std::memcpy(&vni, a->name().data() + 4, sizeof(vni));
    EXPECT_EQ(0u, vni) << "the VNI is not part of the EP name";
}

TEST_F(ObjectsTest, GetnameReportsRequestedSourcePid) {
    uint32_t pid = 0;
    EndpointPtr ep = make_ep_at_pid("cxi0", EpOptions{}, pid);
    std::vector<uint8_t> name = get_name(&ep->ep()->fid);
    EXPECT_EQ(pid, decode_addr(name.data()).pid);
    EXPECT_EQ(pid, decode_addr(ep->name().data()).pid);
}

TEST_F(ObjectsTest, ManyEndpointsPerDomainHaveUniqueNames) {
    std::vector<EndpointPtr> eps;
    std::set<std::vector<uint8_t>> names;
    for (int i = 0; i < 8; i++) {
        eps.push_back(make_ep("cxi0"));
        names.insert(eps.back()->name());
    }
    EXPECT_EQ(8u, names.size());
}

TEST_F(ObjectsTest, SharedCqAcrossEndpoints) {
    fid_domain *d = domain("cxi0");
    InfoPtr info = get_info(EpOptions{}, "cxi0");
    fi_cq_attr ca{};
    ca.format = FI_CQ_FORMAT_TAGGED;
    Cq cq(d, ca, false);
    fi_av_attr aa{};
    aa.type = FI_AV_TABLE;
    Fid<fid_av> av;
    ASSERT_OK(fi_av_open(d, &aa, av.out(), nullptr));
    Fid<fid_ep> e1, e2;
    for (Fid<fid_ep> *e : {&e1, &e2}) {
        ASSERT_OK(fi_endpoint(d, info.get(), e->out(), nullptr));
        ASSERT_OK(fi_ep_bind(e->get(), &av->fid, 0));
        ASSERT_OK(fi_ep_bind(e->get(), &cq.get()->fid, FI_TRANSMIT | FI_RECV));
        ASSERT_OK(fi_enable(e->get()));
    }
    std::vector<uint8_t> n2 = get_name(&e2->fid);
    fi_addr_t to2 = FI_ADDR_NOTAVAIL;
    ASSERT_EQ(1, fi_av_insert(av.get(), n2.data(), 1, &to2, 0, nullptr));
    char out[16] = "shared-cq", in[16] = {};
    int sctx = 0, rctx = 0;
    post([&] { return fi_recv(e2.get(), in, sizeof(in), nullptr, FI_ADDR_UNSPEC, &rctx); },
         "fi_recv");
    post([&] { return fi_send(e1.get(), out, sizeof(out), nullptr, to2, &sctx); }, "fi_send");
    Comp s = wait_comp(cq, &sctx, "send on shared CQ");
    Comp r = wait_comp(cq, &rctx, "recv on shared CQ");
    EXPECT_EQ(FI_MSG | FI_SEND, s.e.flags);
    EXPECT_EQ(FI_MSG | FI_RECV, r.e.flags);
    EXPECT_STREQ("shared-cq", in);
}

TEST_F(ObjectsTest, CountersBoundForSendAndRecv) {
    EpOptions o;
    o.counters = true;
    fi_addr_t self;
    EndpointPtr ep = make_self("cxi0", self, o);
    ping(*ep, self, *ep, 10, 1);
    wait_cntr(ep->send_cntr(), 1, "send");
    wait_cntr(ep->recv_cntr(), 1, "recv");
}

TEST_F(ObjectsTest, OpsFlagsGetAndSet) {
    EpOptions o;
    o.enable = false;
    EndpointPtr ep = make_ep("cxi0", o);
    uint64_t flags = FI_TRANSMIT | FI_COMPLETION;
    ASSERT_OK(fi_control(&ep->ep()->fid, FI_SETOPSFLAG, &flags));
    flags = FI_TRANSMIT;
    ASSERT_OK(fi_control(&ep->ep()->fid, FI_GETOPSFLAG, &flags));
    EXPECT_EQ(FI_COMPLETION, flags & FI_COMPLETION);
    EXPECT_EQ(FI_TRANSMIT_COMPLETE, flags & FI_TRANSMIT_COMPLETE)
        << "TX flags without a completion level get FI_TRANSMIT_COMPLETE";

    flags = FI_RECV | FI_COMPLETION;
    ASSERT_OK(fi_control(&ep->ep()->fid, FI_SETOPSFLAG, &flags));
    flags = FI_RECV;
    ASSERT_OK(fi_control(&ep->ep()->fid, FI_GETOPSFLAG, &flags));
    EXPECT_EQ(FI_COMPLETION, flags & FI_COMPLETION);
    ep->enable();
}

TEST_F(ObjectsTest, AliasSendsThroughTheEndpointAndPinsIt) {
    fi_addr_t self;
    EndpointPtr ep = make_self("cxi0", self);
    fid_ep *alias_raw = nullptr;
    ASSERT_OK(fi_ep_alias(ep->ep(), &alias_raw, FI_TRANSMIT));
    Fid<fid_ep> alias(alias_raw);
    char out[8] = "alias", in[8] = {};
    int sctx = 0, rctx = 0;
    post([&] { return fi_recv(ep->ep(), in, sizeof(in), nullptr, FI_ADDR_UNSPEC, &rctx); },
         "fi_recv");
    post([&] { return fi_send(alias.get(), out, sizeof(out), nullptr, self, &sctx); },
         "fi_send on alias");
    wait_comp(ep->tx(), &sctx, "alias send");
    wait_comp(ep->rx(), &rctx, "receive of alias send");
    EXPECT_STREQ("alias", in);
    EXPECT_RC(-FI_EBUSY, ep->close_ep()) << "EP with an open alias";
    EXPECT_OK(alias.close());
    EXPECT_OK(ep->close_ep());
}

TEST_F(ObjectsTest, MinMultiRecvOption) {
    EndpointPtr ep = make_ep("cxi0");
    size_t v = 0, len = sizeof(v);
    ASSERT_OK(fi_getopt(&ep->ep()->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v, &len));
    EXPECT_EQ(sizeof(size_t), len);
    EXPECT_EQ(64u, v) << "default min_multi_recv";
    v = 1000;
    ASSERT_OK(fi_setopt(&ep->ep()->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v, sizeof(v)));
    v = 0;
    ASSERT_OK(fi_getopt(&ep->ep()->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v, &len));
    EXPECT_EQ(1000u, v);
    v = (1u << 24) - 1;
    EXPECT_OK(fi_setopt(&ep->ep()->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v, sizeof(v)))
        << "2^24-1 is the maximum";
}

// The endpoint options of spec §8.5, through fi_set_val and fi_setopt / fi_getopt.
TEST_F(ObjectsTest, CxiEndpointOptions) {
    EndpointPtr ep = make_ep("cxi0");
    fid_t f = &ep->ep()->fid;
    uint32_t tc = FI_TC_LOW_LATENCY;
    EXPECT_OK(fi_set_val(f, FI_OPT_CXI_SET_TCLASS, &tc));
    tc = FI_TC_NETWORK_CTRL;
    EXPECT_RC(-FI_EINVAL, fi_set_val(f, FI_OPT_CXI_SET_TCLASS, &tc));
    tc = fi_tc_dscp_set(10);
    EXPECT_RC(-FI_EINVAL, fi_set_val(f, FI_OPT_CXI_SET_TCLASS, &tc)) << "DSCP classes";
    tc = FI_TC_SCAVENGER;
    EXPECT_OK(fi_setopt(f, FI_OPT_ENDPOINT, FI_OPT_CXI_SET_TCLASS, &tc, sizeof(tc)));
    uint64_t order = FI_ORDER_SAS | FI_ORDER_RMA_WAW;
    EXPECT_OK(fi_set_val(f, FI_OPT_CXI_SET_MSG_ORDER, &order));
    order = FI_ORDER_RAW;
    EXPECT_RC(-FI_EINVAL, fi_set_val(f, FI_OPT_CXI_SET_MSG_ORDER, &order)) << "not offered";
    uint64_t usec = 1000;
    EXPECT_RC(-FI_EINVAL, fi_set_val(f, FI_OPT_CXI_SET_RNR_MAX_RETRY_TIME, &usec))
        << "only for FI_PROTO_CXI_RNR endpoints";
    EXPECT_RC(-FI_EINVAL, fi_set_val(f, FI_OPT_CXI_SET_TCLASS, nullptr));
    EXPECT_RC(-FI_EINVAL, fi_set_val(f, FI_OPT_CXI_GET_OPTIMIZED_MRS, &usec)) << "unknown name";
    uint64_t attempts = 0;
    size_t len = 4;
    EXPECT_RC(-FI_ETOOSMALL, fi_getopt(f, FI_OPT_ENDPOINT, FI_OPT_CXI_GET_RNR_APPEND_RETRY_ATTEMPTS,
                                       &attempts, &len));
    len = sizeof(attempts);
    EXPECT_RC(-FI_EINVAL, fi_getopt(f, FI_OPT_ENDPOINT, FI_OPT_CXI_GET_RNR_APPEND_RETRY_ATTEMPTS,
                                    &attempts, &len));
    EXPECT_RC(-FI_ENOPROTOOPT, fi_getopt(f, FI_OPT_ENDPOINT, 12345, &attempts, &len));
    fid_ep *alias_raw = nullptr;
    ASSERT_OK(fi_ep_alias(ep->ep(), &alias_raw, FI_TRANSMIT));
    Fid<fid_ep> alias(alias_raw);
    tc = FI_TC_BULK_DATA;
    EXPECT_OK(fi_set_val(&alias->fid, FI_OPT_CXI_SET_TCLASS, &tc)) << "on an alias";
    EXPECT_OK(alias.close());
    // A DSCP or out-of-range class is refused when the endpoint is opened, too.
    InfoPtr info = get_info(EpOptions{}, "cxi0");
    info->tx_attr->tclass = FI_TC_NETWORK_CTRL;
    fid_ep *bad = nullptr;
    EXPECT_RC(-FI_EINVAL, fi_endpoint(domain("cxi0", EpOptions{}), info.get(), &bad, nullptr));
}

TEST_F(ObjectsTest, ThreadingModelsCommunicate) {
    for (fi_threading t : {FI_THREAD_SAFE, FI_THREAD_DOMAIN, FI_THREAD_COMPLETION}) {
        SCOPED_TRACE(t);
        EpOptions o;
        o.threading = t;
        fi_addr_t self;
        EndpointPtr ep = make_self("cxi0", self, o);
        ping(*ep, self, *ep, 100, 7);
    }
}

TEST_F(ObjectsTest, CloseOrderAfterTraffic) {
    fi_addr_t self;
    EndpointPtr ep = make_self("cxi1", self);
    ping(*ep, self, *ep, 5000, 3);
    EXPECT_OK(ep->close_ep());
}

}  // namespace

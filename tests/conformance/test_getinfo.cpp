// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// fi_getinfo: number/order of infos, advertised attributes (spec §1), hints
// handling, capability trimming, node/service/FI_SOURCE parsing (§2.3).
//
// Note: the libfabric core turns any provider getinfo error into
// -FI_ENODATA when no provider returned an info, so invalid node/service
// strings are observed as -FI_ENODATA through the public API.
#include <cstring>
#include <map>
#include <set>

#include "fixture.hpp"

using namespace cxit;

namespace {

constexpr uint64_t kTxOpFlags = FI_INJECT | FI_COMPLETION | FI_INJECT_COMPLETE |
                                FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | FI_MATCH_COMPLETE |
                                FI_REMOTE_CQ_DATA | FI_MORE | FI_FENCE;
static_assert(kTxOpFlags == 0x9f260000ULL);
constexpr uint64_t kRxOpFlags = FI_COMPLETION | FI_MULTI_RECV | FI_MORE;
static_assert(kRxOpFlags == 0x1050000ULL);
constexpr uint64_t kMsgOrder = FI_ORDER_SAS | FI_ORDER_WAW | FI_ORDER_RMA_WAW | FI_ORDER_RMA_RAR |
                               FI_ORDER_ATOMIC_WAW | FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_RAW |
                               FI_ORDER_ATOMIC_RAR;
static_assert(kMsgOrder == 0xF900000110ULL);
constexpr uint64_t kProvKeyMr = FI_MR_PROV_KEY | FI_MR_ALLOCATED | FI_MR_ENDPOINT;
constexpr uint64_t kClientKeyMr = FI_MR_ALLOCATED | FI_MR_ENDPOINT;
constexpr uint64_t kMemTagFormat = 0x0000AAAAAAAAAAAAULL;

struct GetinfoResult {
    long rc = 0;
    InfoPtr info;
};

GetinfoResult getinfo(const char *node, const char *service, uint64_t flags, const fi_info *hints) {
    fi_info *out = nullptr;
    GetinfoResult r;
    r.rc = fi_getinfo(kApiVersion, node, service, flags, hints, &out);
    r.info.reset(out);
    return r;
}

bool is_cxi(const fi_info *i) {
    return i->fabric_attr && i->fabric_attr->prov_name &&
           std::strcmp(i->fabric_attr->prov_name, "cxi") == 0;
}

// Infos of the cxi provider grouped by domain name, in list order.
std::map<std::string, std::vector<const fi_info *>> by_domain(const fi_info *head) {
    std::map<std::string, std::vector<const fi_info *>> m;
    for (const fi_info *i = head; i; i = i->next)
        if (is_cxi(i)) m[i->domain_attr->name].push_back(i);
    return m;
}

class GetinfoTest : public CxiTest {
  protected:
    // First cxi info for `domain` with no hints at all.
    const fi_info *nohints_first(const char *domain) {
        if (!nohints_) {
            GetinfoResult r = getinfo(nullptr, nullptr, 0, nullptr);
            if (r.rc != 0) CXIT_FAIL("fi_getinfo(no hints) returned " + rc_str(r.rc));
            nohints_ = std::move(r.info);
        }
        for (const fi_info *i = nohints_.get(); i; i = i->next)
            if (is_cxi(i) && std::strcmp(i->domain_attr->name, domain) == 0) return i;
        CXIT_FAIL(std::string("no cxi info for ") + domain);
    }
    InfoPtr nohints_;
};

TEST_F(GetinfoTest, NoHintsFourInfosPerNicProviderKeyFirstRnrLast) {
    GetinfoResult r = getinfo(nullptr, nullptr, 0, nullptr);
    ASSERT_OK(r.rc);
    auto m = by_domain(r.info.get());
    ASSERT_EQ(2u, m.size()) << "FI_CXI_SOFT_NICS=127.0.0.1,127.0.0.2 must give cxi0 and cxi1";
    for (const char *name : {"cxi0", "cxi1"}) {
        ASSERT_EQ(1u, m.count(name)) << name;
        const auto &v = m[name];
        ASSERT_EQ(4u, v.size()) << name << ": prov-key and client-key, FI_PROTO_CXI then RNR";
        for (size_t k = 0; k < v.size(); k++) {
            bool prov = k % 2 == 0;
            EXPECT_EQ(prov ? kProvKeyMr : kClientKeyMr, v[k]->domain_attr->mr_mode) << name << k;
            EXPECT_EQ(prov ? 8u : 4u, v[k]->domain_attr->mr_key_size) << name << k;
            EXPECT_EQ(k < 2 ? uint32_t(FI_PROTO_CXI) : uint32_t(FI_PROTO_CXI_RNR),
                      v[k]->ep_attr->protocol)
                << name << k;
        }
    }
}

TEST_F(GetinfoTest, NoHintsCapsAdvertisedWithoutSource) {
    const fi_info *i = nohints_first("cxi0");
    const uint64_t must = FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_DIRECTED_RECV |
                          FI_NAMED_RX_CTX | FI_MULTI_RECV | FI_FENCE | FI_SHARED_AV |
                          FI_LOCAL_COMM | FI_REMOTE_COMM | FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE |
                          FI_REMOTE_READ | FI_REMOTE_WRITE | FI_TRIGGER;
    EXPECT_EQ(must, i->caps & must) << std::hex << "caps 0x" << i->caps;
    EXPECT_EQ(0u, i->caps & (FI_SOURCE | FI_SOURCE_ERR)) << "FI_SOURCE* must be trimmed";
    EXPECT_EQ(0u, i->mode);
    EXPECT_EQ(static_cast<uint32_t>(FI_ADDR_CXI), i->addr_format);
}

TEST_F(GetinfoTest, SourceAddressIsAnyPidOnItsNic) {
    const fi_info *i0 = nohints_first("cxi0");
    const fi_info *i1 = nohints_first("cxi1");
    ASSERT_EQ(kAddrLen, i0->src_addrlen);
    ASSERT_NE(nullptr, i0->src_addr);
    ASSERT_EQ(kAddrLen, i1->src_addrlen);
    ASSERT_NE(nullptr, i1->src_addr);
    CxiAddr a0 = decode_addr(i0->src_addr), a1 = decode_addr(i1->src_addr);
    EXPECT_EQ(kPidAny, a0.pid);
    EXPECT_EQ(kPidAny, a1.pid);
    EXPECT_NE(a0.nic, a1.nic) << "two soft NICs on different IPs share a NIC address";
    EXPECT_EQ(nullptr, i0->dest_addr);
    EXPECT_EQ(0u, i0->dest_addrlen);
}

TEST_F(GetinfoTest, TxAttributes) {
    const fi_tx_attr *t = nohints_first("cxi0")->tx_attr;
    EXPECT_EQ(FI_SEND, t->caps & FI_SEND);
    EXPECT_EQ(FI_MSG | FI_TAGGED, t->caps & (FI_MSG | FI_TAGGED));
    EXPECT_EQ(0u, t->caps & FI_RECV) << "tx caps are the initiator subset";
    EXPECT_EQ(kTxOpFlags, t->op_flags) << std::hex << t->op_flags;
    EXPECT_EQ(kMsgOrder, t->msg_order) << std::hex << t->msg_order;
    EXPECT_EQ(0u, t->comp_order);
    EXPECT_EQ(kInjectSize, t->inject_size);
    EXPECT_EQ(1024u, t->size);
    EXPECT_EQ(1u, t->iov_limit);
    EXPECT_EQ(1u, t->rma_iov_limit);
}

TEST_F(GetinfoTest, RxAttributes) {
    const fi_rx_attr *r = nohints_first("cxi0")->rx_attr;
    EXPECT_EQ(FI_RECV, r->caps & FI_RECV);
    EXPECT_EQ(0u, r->caps & FI_SEND) << "rx caps are the target subset";
    EXPECT_EQ(FI_MULTI_RECV | FI_DIRECTED_RECV, r->caps & (FI_MULTI_RECV | FI_DIRECTED_RECV));
    EXPECT_EQ(kRxOpFlags, r->op_flags) << std::hex << r->op_flags;
    EXPECT_EQ(kMsgOrder, r->msg_order) << std::hex << r->msg_order;
    EXPECT_EQ(0u, r->comp_order);
    EXPECT_EQ(0u, r->total_buffered_recv);
    EXPECT_EQ(1024u, r->size);
    EXPECT_EQ(1u, r->iov_limit);
}

TEST_F(GetinfoTest, EpAttributes) {
    const fi_ep_attr *e = nohints_first("cxi0")->ep_attr;
    EXPECT_EQ(FI_EP_RDM, e->type);
    EXPECT_EQ(static_cast<uint32_t>(FI_PROTO_CXI), e->protocol);
    EXPECT_EQ(1u, e->protocol_version);
    EXPECT_EQ(0xFFFFFFFFULL, e->max_msg_size);
    EXPECT_EQ(SIZE_MAX, e->max_order_raw_size);  // fi_cxi(7): -1, ordered at any size
    EXPECT_EQ(SIZE_MAX, e->max_order_war_size);
    EXPECT_EQ(SIZE_MAX, e->max_order_waw_size);
    EXPECT_EQ(kMemTagFormat, e->mem_tag_format) << std::hex << e->mem_tag_format;
    EXPECT_EQ(1u, e->tx_ctx_cnt);
    EXPECT_EQ(1u, e->rx_ctx_cnt);
}

TEST_F(GetinfoTest, DomainAttributes) {
    const fi_domain_attr *d = nohints_first("cxi0")->domain_attr;
    EXPECT_STREQ("cxi0", d->name);
    EXPECT_EQ(FI_THREAD_SAFE, d->threading);
    EXPECT_EQ(FI_PROGRESS_MANUAL, d->control_progress);
    EXPECT_EQ(FI_PROGRESS_MANUAL, d->data_progress);
    EXPECT_EQ(FI_RM_ENABLED, d->resource_mgmt);
    EXPECT_EQ(FI_AV_UNSPEC, d->av_type);
    EXPECT_EQ(kProvKeyMr, static_cast<uint64_t>(d->mr_mode));
    EXPECT_EQ(8u, d->mr_key_size);
    EXPECT_EQ(8u, d->cq_data_size);
    EXPECT_EQ(32u, d->cq_cnt);
    EXPECT_EQ(128u, d->ep_cnt);
    EXPECT_EQ(0u, d->max_ep_stx_ctx);
    EXPECT_EQ(0u, d->max_ep_srx_ctx);
    EXPECT_EQ(16u, d->cntr_cnt);
    EXPECT_EQ(1u, d->mr_iov_limit);
    EXPECT_EQ(100u, d->mr_cnt);
    EXPECT_EQ(FI_LOCAL_COMM | FI_REMOTE_COMM, d->caps & (FI_LOCAL_COMM | FI_REMOTE_COMM));
}

TEST_F(GetinfoTest, FabricAttributes) {
    const fi_fabric_attr *f = nohints_first("cxi0")->fabric_attr;
    EXPECT_STREQ("cxi", f->name);
    EXPECT_STREQ("cxi", f->prov_name);
    EXPECT_EQ(FI_VERSION(0, 2), f->prov_version);
}

TEST_F(GetinfoTest, NicLinkAddressIsTheNicAddress) {
    const fi_info *i = nohints_first("cxi1");
    ASSERT_NE(nullptr, i->nic) << "info->nic must describe the soft NIC";
    ASSERT_NE(nullptr, i->nic->link_attr);
    ASSERT_NE(nullptr, i->nic->link_attr->address);
    char expect[32];
    std::snprintf(expect, sizeof(expect), "0x%x", decode_addr(i->src_addr).nic);
    EXPECT_STREQ(expect, i->nic->link_attr->address);
}

TEST_F(GetinfoTest, HintsReturnOneProviderKeyInfoPerDomain) {
    EpOptions o;
    o.caps = FI_MSG | FI_RMA;
    InfoPtr hints = make_hints(o, nullptr);
    GetinfoResult r = getinfo(nullptr, nullptr, 0, hints.get());
    ASSERT_OK(r.rc);
    auto m = by_domain(r.info.get());
    ASSERT_EQ(2u, m.size());
    for (auto &[name, v] : m) {
        ASSERT_EQ(1u, v.size()) << name << ": only the first matching info per domain";
        EXPECT_EQ(kProvKeyMr, v[0]->domain_attr->mr_mode) << name;
        EXPECT_EQ(FI_PROTO_CXI, v[0]->ep_attr->protocol) << name;
    }
}

TEST_F(GetinfoTest, HintsWithoutProvKeyGiveClientKeyInfo) {
    EpOptions o;
    o.prov_key = false;
    o.caps = FI_MSG | FI_RMA;
    InfoPtr info = get_info(o, "cxi0");
    EXPECT_EQ(kClientKeyMr, info->domain_attr->mr_mode);
    EXPECT_EQ(4u, info->domain_attr->mr_key_size);
}

// Without RMA or atomics no MR is a remote target and local buffers need no
// registration, so no mode bit applies (fabtests binds MRs it never registered
// when it sees FI_MR_ENDPOINT without FI_MR_LOCAL).
TEST_F(GetinfoTest, TwoSidedOnlyHintsGetNoModeBits) {
    InfoPtr info = get_info(EpOptions{}, "cxi0");
    EXPECT_EQ(0, info->domain_attr->mr_mode);
    EXPECT_EQ(4u, info->domain_attr->mr_key_size) << "without provider keys, client keys";
    // An application may hand the info back as hints (fabtests' fi_multi_ep does).
    InfoPtr again = getinfo("127.0.0.1", nullptr, 0, info.get()).info;
    ASSERT_NE(nullptr, again) << "an info returned as hints matches itself";
}

TEST_F(GetinfoTest, HintsDomainNameFilters) {
    InfoPtr hints = make_hints(EpOptions{}, "cxi1");
    GetinfoResult r = getinfo(nullptr, nullptr, 0, hints.get());
    ASSERT_OK(r.rc);
    auto m = by_domain(r.info.get());
    ASSERT_EQ(1u, m.size());
    EXPECT_EQ(1u, m.count("cxi1"));

    InfoPtr bad = make_hints(EpOptions{}, "cxi7");
    EXPECT_RC(-FI_ENODATA, getinfo(nullptr, nullptr, 0, bad.get()).rc);
}

TEST_F(GetinfoTest, CapsTrimmedToRequest) {
    struct Case {
        uint64_t ask, must, mustnt;
    } cases[] = {
        {FI_MSG, FI_MSG, FI_TAGGED | FI_RMA | FI_ATOMIC | FI_COLLECTIVE},
        {FI_TAGGED, FI_TAGGED, FI_MSG | FI_RMA | FI_ATOMIC},
        {FI_MSG | FI_SEND, FI_MSG | FI_SEND, FI_RECV},
        {FI_MSG | FI_RECV, FI_MSG | FI_RECV, FI_SEND},
        {FI_MSG | FI_FENCE, FI_MSG | FI_FENCE, FI_RMA_EVENT},
    };
    for (const Case &c : cases) {
        EpOptions o;
        o.caps = c.ask;
        InfoPtr info = get_info(o, "cxi0");
        EXPECT_EQ(c.must, info->caps & c.must) << std::hex << "asked 0x" << c.ask;
        EXPECT_EQ(0u, info->caps & c.mustnt)
            << std::hex << "asked 0x" << c.ask << " got 0x" << info->caps;
    }
}

// libfabric's per-direction capability sets (as fabtests' getinfo_test checks them):
// domain-level bits stay out of tx/rx caps, and tx/rx caps are subsets of info->caps.
TEST_F(GetinfoTest, DirectionCapsFollowLibfabricSets) {
    const uint64_t tx_ok = FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_MULTICAST |
                           FI_NAMED_RX_CTX | FI_HMEM | FI_COLLECTIVE | FI_SEND | FI_READ |
                           FI_WRITE | FI_TRIGGER | FI_FENCE;
    const uint64_t rx_ok = FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_DIRECTED_RECV |
                           FI_VARIABLE_MSG | FI_HMEM | FI_COLLECTIVE | FI_RECV | FI_REMOTE_READ |
                           FI_REMOTE_WRITE | FI_SOURCE | FI_SOURCE_ERR | FI_RMA_EVENT |
                           FI_MULTI_RECV | FI_TRIGGER;
    for (uint64_t caps : {uint64_t(0), uint64_t(FI_MSG), uint64_t(FI_TAGGED | FI_SOURCE)}) {
        InfoPtr hints = make_hints(EpOptions{}, "cxi0");
        hints->caps = caps;
        GetinfoResult r = getinfo(nullptr, nullptr, 0, hints.get());
        ASSERT_OK(r.rc);
        for (const fi_info *i = r.info.get(); i; i = i->next) {
            EXPECT_EQ(0u, i->tx_attr->caps & ~tx_ok)
                << std::hex << "tx caps 0x" << i->tx_attr->caps;
            EXPECT_EQ(0u, i->rx_attr->caps & ~rx_ok)
                << std::hex << "rx caps 0x" << i->rx_attr->caps;
            EXPECT_EQ(0u, i->tx_attr->caps & ~i->caps) << "tx caps outside info caps";
            EXPECT_EQ(0u, i->rx_attr->caps & ~i->caps) << "rx caps outside info caps";
        }
    }
}

TEST_F(GetinfoTest, OneSidedCapsOffered) {
    EpOptions o;
    o.caps = FI_MSG | FI_RMA | FI_ATOMIC | FI_TRIGGER | FI_READ | FI_WRITE | FI_REMOTE_READ |
             FI_REMOTE_WRITE | FI_RMA_EVENT;
    InfoPtr i = get_info(o, "cxi0");
    EXPECT_EQ(o.caps, i->caps & o.caps) << std::hex << "caps 0x" << i->caps;
}

TEST_F(GetinfoTest, SourceCapsOnlyWhenRequested) {
    EpOptions o;
    o.caps = FI_MSG | FI_SOURCE;
    InfoPtr i1 = get_info(o, "cxi0");
    EXPECT_EQ(FI_SOURCE, i1->caps & FI_SOURCE);
    EXPECT_EQ(0u, i1->caps & FI_SOURCE_ERR);
    o.caps = FI_MSG | FI_SOURCE | FI_SOURCE_ERR;
    InfoPtr i2 = get_info(o, "cxi0");
    EXPECT_EQ(FI_SOURCE | FI_SOURCE_ERR, i2->caps & (FI_SOURCE | FI_SOURCE_ERR));
}

TEST_F(GetinfoTest, HintsSizesAndOpFlagsHonoured) {
    InfoPtr hints = make_hints(EpOptions{}, "cxi0");
    hints->tx_attr->size = 32;
    hints->rx_attr->size = 48;
    hints->tx_attr->op_flags = FI_COMPLETION;
    hints->rx_attr->op_flags = FI_COMPLETION;
    GetinfoResult r = getinfo(nullptr, nullptr, 0, hints.get());
    ASSERT_OK(r.rc);
    EXPECT_EQ(32u, r.info->tx_attr->size);
    EXPECT_EQ(48u, r.info->rx_attr->size);
    EXPECT_EQ(FI_COMPLETION, r.info->tx_attr->op_flags);
    EXPECT_EQ(FI_COMPLETION, r.info->rx_attr->op_flags);

    hints->tx_attr->size = 16384;
    hints->rx_attr->size = 15360;
    EXPECT_OK(getinfo(nullptr, nullptr, 0, hints.get()).rc) << "maximum sizes accepted";
    hints->tx_attr->size = 16385;
    EXPECT_RC(-FI_ENODATA, getinfo(nullptr, nullptr, 0, hints.get()).rc);
    hints->tx_attr->size = 0;
    hints->rx_attr->size = 15361;
    EXPECT_RC(-FI_ENODATA, getinfo(nullptr, nullptr, 0, hints.get()).rc);
}

TEST_F(GetinfoTest, SourceNodeAndServiceSetLocalAddress) {
    InfoPtr hints = make_hints(EpOptions{}, nullptr);
    GetinfoResult r = getinfo("cxi0", "10", FI_SOURCE, hints.get());
    ASSERT_OK(r.rc);
    size_t n = 0;
    for (const fi_info *i = r.info.get(); i; i = i->next) {
        ASSERT_TRUE(is_cxi(i));
        EXPECT_STREQ("cxi0", i->domain_attr->name) << "node restricts the NIC";
        ASSERT_EQ(kAddrLen, i->src_addrlen);
        EXPECT_EQ(10u, decode_addr(i->src_addr).pid);
        n++;
    }
    EXPECT_GE(n, 1u);
}

TEST_F(GetinfoTest, ServiceOnlyWithSource) {
    InfoPtr hints = make_hints(EpOptions{}, "cxi1");
    GetinfoResult r = getinfo(nullptr, "77", FI_SOURCE, hints.get());
    ASSERT_OK(r.rc);
    EXPECT_EQ(77u, decode_addr(r.info->src_addr).pid);
}

TEST_F(GetinfoTest, NodeWithoutSourceIsDestination) {
    InfoPtr hints = make_hints(EpOptions{}, "cxi0");
    GetinfoResult r = getinfo("0x2a", "7", 0, hints.get());
    ASSERT_OK(r.rc);
    ASSERT_EQ(kAddrLen, r.info->dest_addrlen);
    ASSERT_NE(nullptr, r.info->dest_addr);
    CxiAddr d = decode_addr(r.info->dest_addr);
    EXPECT_EQ(0x2au, d.nic);
    EXPECT_EQ(7u, d.pid);
}

TEST_F(GetinfoTest, InvalidNodeServiceOrSourceGiveNoData) {
    InfoPtr hints = make_hints(EpOptions{}, nullptr);
    EXPECT_RC(-FI_ENODATA, getinfo(nullptr, nullptr, FI_SOURCE, hints.get()).rc)
        << "FI_SOURCE without node and service";
    EXPECT_RC(-FI_ENODATA, getinfo("cxi0", "65536", FI_SOURCE, hints.get()).rc)
        << "neither a PID nor a port";
    EXPECT_RC(-FI_ENODATA, getinfo("cxi0", "pid", FI_SOURCE, hints.get()).rc) << "bad service";
    EXPECT_RC(-FI_ENODATA, getinfo("not-a-nic!", nullptr, FI_SOURCE, hints.get()).rc);
    EXPECT_RC(-FI_ENODATA, getinfo("cxi9", "3", FI_SOURCE, hints.get()).rc) << "absent NIC";
}

TEST_F(GetinfoTest, UnsupportedHintsGiveNoData) {
    EpOptions o;
    o.caps = FI_MSG | FI_SOURCE_ERR;
    InfoPtr h1 = make_hints(o, nullptr);
    EXPECT_RC(-FI_ENODATA, getinfo(nullptr, nullptr, 0, h1.get()).rc)
        << "FI_SOURCE_ERR requires FI_SOURCE";
    for (fi_ep_type t : {FI_EP_MSG, FI_EP_DGRAM}) {
        InfoPtr h = make_hints(EpOptions{}, nullptr);
        h->ep_attr->type = t;
        EXPECT_RC(-FI_ENODATA, getinfo(nullptr, nullptr, 0, h.get()).rc) << "ep type " << t;
    }
    for (bool tx : {true, false}) {
        InfoPtr h = make_hints(EpOptions{}, nullptr);
        (tx ? h->ep_attr->tx_ctx_cnt : h->ep_attr->rx_ctx_cnt) = FI_SHARED_CONTEXT;
        EXPECT_RC(-FI_ENODATA, getinfo(nullptr, nullptr, 0, h.get()).rc)
            << "shared contexts are not built (fi_stx_context: -FI_ENOSYS)";
    }
    InfoPtr h2 = make_hints(EpOptions{}, nullptr);
    h2->domain_attr->mr_mode = FI_MR_ALLOCATED | FI_MR_ENDPOINT;  // client keys only
    h2->caps = FI_MSG | FI_RMA;
    h2->domain_attr->mr_key_size = 8;
    EXPECT_RC(-FI_ENODATA, getinfo(nullptr, nullptr, 0, h2.get()).rc)
        << "8-byte keys need FI_MR_PROV_KEY";
}

TEST_F(GetinfoTest, ThreadingModelsAccepted) {
    for (fi_threading t : {FI_THREAD_SAFE, FI_THREAD_DOMAIN, FI_THREAD_COMPLETION}) {
        EpOptions o;
        o.threading = t;
        InfoPtr info = get_info(o, "cxi0");
        EXPECT_TRUE(info->domain_attr->threading == t ||
                    info->domain_attr->threading == FI_THREAD_SAFE)
            << "asked " << t << " got " << info->domain_attr->threading;
    }
}

// libfabric's own rule (prov/util, which upstream cxi follows): a tag format is a width.
// MPICH asks 0x00001800000FFFFF, bits outside our 0x0000AAAAAAAAAAAA pattern but within its
// 48 bits, and must be accepted; a 49-bit format is not. Without FI_TAGGED no format is
// checked at all.
TEST_F(GetinfoTest, MemTagFormatIsComparedByWidth) {
    struct Case {
        uint64_t caps, format;
        bool ok;
    };
    for (Case c : {Case{FI_TAGGED, 0x00001800000FFFFFULL, true}, Case{FI_TAGGED, 0x3, true},
                   Case{FI_TAGGED, 0x0000FFFFFFFFFFFFULL, true},
                   Case{FI_TAGGED, 0x0001000000000000ULL, false},
                   Case{FI_MSG, 0xFFFFFFFFFFFFFFFFULL, true}}) {
        EpOptions o;
        o.caps = c.caps;
        InfoPtr h = make_hints(o, "cxi0");
        h->ep_attr->mem_tag_format = c.format;
        GetinfoResult r = getinfo(nullptr, nullptr, 0, h.get());
        EXPECT_RC(c.ok ? 0 : -FI_ENODATA, r.rc) << std::hex << "format 0x" << c.format;
    }
}

// Also libfabric's rules: a transmit context's hints may list receive-only caps (and the
// reverse), which it ignores; context counts go up to the domain's maxima.
TEST_F(GetinfoTest, HintsFollowLibfabricUtilRules) {
    InfoPtr h = make_hints(EpOptions{}, "cxi0");
    h->tx_attr->caps = FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_DIRECTED_RECV;
    h->rx_attr->caps = FI_MSG | FI_TAGGED | FI_RECV | FI_SEND;
    EXPECT_OK(getinfo(nullptr, nullptr, 0, h.get()).rc);
    const fi_info *i = nohints_first("cxi0");
    InfoPtr h2 = make_hints(EpOptions{}, "cxi0");
    h2->ep_attr->tx_ctx_cnt = i->domain_attr->max_ep_tx_ctx;
    h2->ep_attr->rx_ctx_cnt = i->domain_attr->max_ep_rx_ctx;
    EXPECT_OK(getinfo(nullptr, nullptr, 0, h2.get()).rc);
    h2->ep_attr->tx_ctx_cnt = i->domain_attr->max_ep_tx_ctx + 1;
    EXPECT_RC(-FI_ENODATA, getinfo(nullptr, nullptr, 0, h2.get()).rc);
}

}  // namespace

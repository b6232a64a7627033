// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// fi_getinfo: the infos of usnic_0 (127.0.0.1/8 on lo) without hints, with
// hints, for old API versions, and the hints that must match nothing.
#include <arpa/inet.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include "fixture.hpp"

using namespace usnict;

namespace {

constexpr uint64_t kCaps = FI_MSG | FI_SOURCE | FI_SEND | FI_RECV;
// fi_getinfo(3) splits caps by direction: FI_SOURCE and FI_RECV are receive caps.
constexpr uint64_t kTxCaps = FI_MSG | FI_SEND;
constexpr uint64_t kRxCaps = FI_MSG | FI_RECV | FI_SOURCE;

const fi_info *first_of(const GetinfoResult &r, fi_ep_type type) {
    for (const fi_info *i : r.usnic)
        if (i->ep_attr->type == type) return i;
    return nullptr;
}

size_t infos_of_type(const GetinfoResult &r, fi_ep_type type) {
    size_t n = 0;
    for (const fi_info *i : r.usnic)
        n += i->ep_attr->type == type;
    return n;
}

void expect_src_is_loopback(const fi_info *i) {
    ASSERT_NE(i->src_addr, nullptr);
    ASSERT_EQ(i->src_addrlen, sizeof(sockaddr_in));
    const auto *sin = static_cast<const sockaddr_in *>(i->src_addr);
    EXPECT_EQ(sin->sin_family, AF_INET);
    EXPECT_EQ(ip_of(*sin), kLoopback);
}

// Attributes shared by every usnic info.
void expect_common(const fi_info *i) {
    EXPECT_STREQ(i->fabric_attr->prov_name, "usnic");
    EXPECT_EQ(i->fabric_attr->prov_version, FI_VERSION(1, 0));
    EXPECT_STREQ(i->fabric_attr->name, "127.0.0.0/8");
    EXPECT_STREQ(i->domain_attr->name, "usnic_0");
    EXPECT_EQ(i->caps, kCaps);
    EXPECT_EQ(i->tx_attr->caps, kTxCaps);
    EXPECT_EQ(i->rx_attr->caps, kRxCaps);
    EXPECT_EQ(i->addr_format, static_cast<uint32_t>(FI_SOCKADDR_IN));
    EXPECT_EQ(i->domain_attr->caps, FI_LOCAL_COMM | FI_REMOTE_COMM);
    EXPECT_EQ(i->domain_attr->av_type, FI_AV_MAP);
    EXPECT_EQ(i->domain_attr->mr_mode, FI_MR_LOCAL | FI_MR_ALLOCATED);
    EXPECT_EQ(i->domain_attr->mr_cnt, 65535u);
    EXPECT_EQ(i->domain_attr->mr_iov_limit, 1u);
    EXPECT_EQ(i->domain_attr->control_progress, FI_PROGRESS_AUTO);
    EXPECT_EQ(i->domain_attr->data_progress, FI_PROGRESS_MANUAL);
    EXPECT_EQ(i->domain_attr->resource_mgmt, FI_RM_DISABLED);
    EXPECT_EQ(i->tx_attr->comp_order, FI_ORDER_NONE);
    EXPECT_EQ(i->rx_attr->comp_order, FI_ORDER_NONE);
    EXPECT_EQ(i->tx_attr->rma_iov_limit, 0u);
    EXPECT_EQ(i->ep_attr->tx_ctx_cnt, 1u);
    EXPECT_EQ(i->ep_attr->rx_ctx_cnt, 1u);
    EXPECT_EQ(i->ep_attr->protocol_version, 0u);
    expect_src_is_loopback(i);
}

TEST(GetinfoTest, NoHintsGivesDgramMsgRdmForUsnic0) {
    GetinfoResult r = getinfo(nullptr);
    ASSERT_OK(r.rc);
    ASSERT_EQ(r.usnic.size(), 3u) << "FI_USNIC_IFACES=lo gives exactly one device";
    EXPECT_EQ(r.usnic[0]->ep_attr->type, FI_EP_DGRAM);
    EXPECT_EQ(r.usnic[1]->ep_attr->type, FI_EP_MSG);
    EXPECT_EQ(r.usnic[2]->ep_attr->type, FI_EP_RDM);
    for (const fi_info *i : r.usnic) {
        SCOPED_TRACE(fi_tostr(&i->ep_attr->type, FI_TYPE_EP_TYPE));
        expect_common(i);
    }
}

TEST(GetinfoTest, NoHintsDgramAttributes) {
    GetinfoResult r = getinfo(nullptr);
    ASSERT_OK(r.rc);
    const fi_info *i = first_of(r, FI_EP_DGRAM);
    ASSERT_NE(i, nullptr);
    // Without hints both mode bits are required, so the prefix is in force.
    EXPECT_EQ(i->mode, FI_LOCAL_MR | FI_MSG_PREFIX);
    EXPECT_EQ(i->ep_attr->protocol, static_cast<uint32_t>(FI_PROTO_UDP));
    EXPECT_EQ(i->ep_attr->msg_prefix_size, kPrefix);
    EXPECT_EQ(i->ep_attr->max_msg_size, dgram_max_payload("lo"));
    EXPECT_EQ(i->tx_attr->iov_limit, 4u);
    EXPECT_EQ(i->rx_attr->iov_limit, 4u);
    EXPECT_EQ(i->tx_attr->inject_size, kDgramInject);
    EXPECT_EQ(i->tx_attr->size, kDgramSize);
    EXPECT_EQ(i->rx_attr->size, kDgramSize);
    EXPECT_EQ(i->rx_attr->total_buffered_recv, 0u);
    EXPECT_EQ(i->domain_attr->threading, FI_THREAD_ENDPOINT);
    EXPECT_EQ(i->tx_attr->msg_order, FI_ORDER_NONE) << "UDP may reorder";
    EXPECT_EQ(i->rx_attr->msg_order, FI_ORDER_NONE);
    EXPECT_EQ(i->ep_attr->mem_tag_format, 0u);
    const auto *sin = static_cast<const sockaddr_in *>(i->src_addr);
    EXPECT_EQ(port_of(*sin), 0);
    EXPECT_EQ(i->dest_addr, nullptr);
}

TEST(GetinfoTest, NoHintsMsgAndRdmAttributes) {
    GetinfoResult r = getinfo(nullptr);
    ASSERT_OK(r.rc);
    for (fi_ep_type type : {FI_EP_MSG, FI_EP_RDM}) {
        const fi_info *i = first_of(r, type);
        ASSERT_NE(i, nullptr);
        SCOPED_TRACE(fi_tostr(&type, FI_TYPE_EP_TYPE));
        const size_t depth = type == FI_EP_MSG ? 512 : 128;
        EXPECT_EQ(i->mode, FI_LOCAL_MR);
        EXPECT_EQ(i->ep_attr->protocol, FI_PROTO_RUDP);
        EXPECT_EQ(i->ep_attr->max_msg_size, uint64_t{UINT32_MAX});
        EXPECT_EQ(i->ep_attr->msg_prefix_size, 0u);
        EXPECT_EQ(i->tx_attr->inject_size, kRudpInject);
        EXPECT_EQ(i->tx_attr->iov_limit, 8u);
        EXPECT_EQ(i->rx_attr->iov_limit, 8u);
        EXPECT_EQ(i->tx_attr->size, depth);
        EXPECT_EQ(i->rx_attr->size, depth);
        EXPECT_EQ(i->domain_attr->threading, FI_THREAD_SAFE) << "every call takes a lock";
        EXPECT_EQ(i->tx_attr->msg_order, FI_ORDER_SAS) << "each peer's messages in order";
        EXPECT_EQ(i->rx_attr->msg_order, FI_ORDER_SAS);
    }
}

// MSG/RDM take every threading level and echo it; DGRAM all but FI_THREAD_SAFE.
TEST(GetinfoTest, ThreadingHintsAreEchoed) {
    const fi_threading levels[] = {FI_THREAD_ENDPOINT, FI_THREAD_FID, FI_THREAD_COMPLETION,
                                   FI_THREAD_DOMAIN, FI_THREAD_SAFE};
    for (fi_ep_type type : {FI_EP_DGRAM, FI_EP_MSG, FI_EP_RDM}) {
        for (fi_threading t : levels) {
            SCOPED_TRACE(std::string(fi_tostr(&type, FI_TYPE_EP_TYPE)) + " " +
                         fi_tostr(&t, FI_TYPE_THREADING));
            InfoPtr h = usnic_hints(type);
            h->domain_attr->threading = t;
            GetinfoResult r = getinfo(h.get());
            if (type == FI_EP_DGRAM && t == FI_THREAD_SAFE) {
                EXPECT_TRUE(r.usnic.empty()) << "DGRAM is not FI_THREAD_SAFE (as upstream)";
                continue;
            }
            ASSERT_OK(r.rc);
            ASSERT_EQ(r.usnic.size(), 1u);
            EXPECT_EQ(r.usnic[0]->domain_attr->threading, t);
        }
    }
}

// FI_ORDER_SAS is what MSG/RDM offer; nothing else, and nothing on DGRAM.
TEST(GetinfoTest, OrderingHints) {
    for (fi_ep_type type : {FI_EP_MSG, FI_EP_RDM}) {
        SCOPED_TRACE(fi_tostr(&type, FI_TYPE_EP_TYPE));
        InfoPtr h = usnic_hints(type);
        h->tx_attr->msg_order = h->rx_attr->msg_order = FI_ORDER_SAS;
        GetinfoResult r = getinfo(h.get());
        ASSERT_OK(r.rc);
        ASSERT_EQ(r.usnic.size(), 1u);
        EXPECT_EQ(r.usnic[0]->tx_attr->msg_order, FI_ORDER_SAS);
        h->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_RAW;
        EXPECT_TRUE(getinfo(h.get()).usnic.empty()) << "RAW is an RMA ordering";
        h->tx_attr->msg_order = FI_ORDER_SAS;
        h->rx_attr->comp_order = FI_ORDER_STRICT;
        EXPECT_TRUE(getinfo(h.get()).usnic.empty()) << "completions are not ordered";
    }
}

// libfabric's utility providers (ofi_rxd) ask for their core with no domain_attr;
// FI_LOCAL_MR in mode then stands for FI_MR_LOCAL.
TEST(GetinfoTest, HintsWithoutDomainAttrNeedOnlyLocalMrMode) {
    InfoPtr h = usnic_hints(FI_EP_DGRAM, FI_LOCAL_MR | FI_MSG_PREFIX);
    free(h->domain_attr);
    h->domain_attr = nullptr;
    GetinfoResult r = getinfo(h.get());
    ASSERT_OK(r.rc);
    ASSERT_EQ(r.usnic.size(), 1u);
    EXPECT_EQ(r.usnic[0]->domain_attr->mr_mode, FI_MR_LOCAL | FI_MR_ALLOCATED);
}

// Remote CQ data (fi_senddata) does not exist natively: no usnic info for any type.
// (RDM hints may still match "usnic;ofi_rxd", which supplies it over DGRAM.)
TEST(GetinfoTest, CqDataSizeMatchesNoNativeInfo) {
    for (fi_ep_type type : {FI_EP_DGRAM, FI_EP_MSG, FI_EP_RDM}) {
        SCOPED_TRACE(fi_tostr(&type, FI_TYPE_EP_TYPE));
        InfoPtr h = usnic_hints(type);
        h->domain_attr->cq_data_size = 4;
        EXPECT_TRUE(getinfo(h.get()).usnic.empty());
    }
}

TEST(GetinfoTest, OldApiNamesFollowTheSeedRule) {
    GetinfoResult old = getinfo(nullptr, FI_VERSION(1, 3));
    ASSERT_OK(old.rc);
    ASSERT_FALSE(old.usnic.empty());
    for (const fi_info *i : old.usnic) {
        EXPECT_STREQ(i->fabric_attr->name, "usnic_0");
        EXPECT_EQ(i->domain_attr->name, nullptr);
    }
    GetinfoResult v14 = getinfo(nullptr, FI_VERSION(1, 4));
    ASSERT_OK(v14.rc);
    ASSERT_FALSE(v14.usnic.empty());
    for (const fi_info *i : v14.usnic) {
        EXPECT_STREQ(i->fabric_attr->name, "127.0.0.0/8");
        EXPECT_STREQ(i->domain_attr->name, "usnic_0");
    }
}

TEST(GetinfoTest, TypeHintSelectsOneInfo) {
    for (fi_ep_type type : {FI_EP_DGRAM, FI_EP_MSG, FI_EP_RDM}) {
        SCOPED_TRACE(fi_tostr(&type, FI_TYPE_EP_TYPE));
        GetinfoResult r = getinfo(usnic_hints(type).get());
        ASSERT_OK(r.rc);
        ASSERT_EQ(r.usnic.size(), 1u);
        EXPECT_EQ(r.usnic[0]->ep_attr->type, type);
    }
    GetinfoResult any = getinfo(usnic_hints(FI_EP_UNSPEC).get());
    ASSERT_OK(any.rc);
    EXPECT_EQ(infos_of_type(any, FI_EP_DGRAM), 1u);
    EXPECT_EQ(infos_of_type(any, FI_EP_MSG), 1u);
    EXPECT_EQ(infos_of_type(any, FI_EP_RDM), 1u);
}

TEST(GetinfoTest, DgramWithPrefixHint) {
    GetinfoResult r = getinfo(usnic_hints(FI_EP_DGRAM, FI_LOCAL_MR | FI_MSG_PREFIX).get());
    ASSERT_OK(r.rc);
    ASSERT_EQ(r.usnic.size(), 1u);
    const fi_info *i = r.usnic[0];
    EXPECT_EQ(i->mode, FI_LOCAL_MR | FI_MSG_PREFIX);
    EXPECT_EQ(i->ep_attr->msg_prefix_size, kPrefix);
    EXPECT_EQ(i->ep_attr->max_msg_size, dgram_max_payload("lo"));
    EXPECT_EQ(i->tx_attr->iov_limit, 4u);
    EXPECT_EQ(i->rx_attr->iov_limit, 4u);
    EXPECT_EQ(i->tx_attr->inject_size, kDgramInject);
    EXPECT_EQ(i->tx_attr->mode & ~i->mode, 0u) << "tx mode bits absent from info->mode";
}

TEST(GetinfoTest, DgramWithoutPrefixHint) {
    GetinfoResult r = getinfo(usnic_hints(FI_EP_DGRAM, FI_LOCAL_MR | FI_CONTEXT).get());
    ASSERT_OK(r.rc);
    ASSERT_EQ(r.usnic.size(), 1u);
    const fi_info *i = r.usnic[0];
    EXPECT_EQ(i->mode, FI_LOCAL_MR) << "FI_CONTEXT is never required";
    EXPECT_EQ(i->ep_attr->msg_prefix_size, 0u);
    EXPECT_EQ(i->ep_attr->max_msg_size, dgram_max_payload("lo"));
    EXPECT_EQ(i->tx_attr->iov_limit, 3u);
    EXPECT_EQ(i->rx_attr->iov_limit, 3u);
    EXPECT_EQ(i->tx_attr->size, kDgramSize);
    EXPECT_EQ(i->rx_attr->size, kDgramSize);
}

TEST(GetinfoTest, CapsHintDoesNotNarrow) {
    InfoPtr h = usnic_hints(FI_EP_DGRAM);
    h->caps = FI_MSG;
    GetinfoResult r = getinfo(h.get());
    ASSERT_OK(r.rc);
    ASSERT_EQ(r.usnic.size(), 1u);
    EXPECT_EQ(r.usnic[0]->caps, kCaps);
}

TEST(GetinfoTest, DomainCapsHintsAccepted) {
    for (uint64_t caps : {FI_LOCAL_COMM, FI_REMOTE_COMM, FI_LOCAL_COMM | FI_REMOTE_COMM}) {
        SCOPED_TRACE(caps);
        InfoPtr h = usnic_hints(FI_EP_DGRAM);
        h->domain_attr->caps = caps;
        GetinfoResult r = getinfo(h.get());
        ASSERT_OK(r.rc);
        ASSERT_EQ(r.usnic.size(), 1u);
        EXPECT_EQ(r.usnic[0]->domain_attr->caps & caps, caps);
    }
}

TEST(GetinfoTest, FabricAndDomainNameHints) {
    InfoPtr h = usnic_hints(FI_EP_DGRAM);
    h->fabric_attr->name = strdup("127.0.0.0/8");
    h->domain_attr->name = strdup("usnic_0");
    GetinfoResult r = getinfo(h.get());
    ASSERT_OK(r.rc);
    EXPECT_EQ(r.usnic.size(), 1u);

    InfoPtr bad_fabric = usnic_hints(FI_EP_DGRAM);
    bad_fabric->fabric_attr->name = strdup("10.0.0.0/8");
    EXPECT_RC(-FI_ENODATA, getinfo(bad_fabric.get()).rc);

    InfoPtr bad_domain = usnic_hints(FI_EP_DGRAM);
    bad_domain->domain_attr->name = strdup("usnic_7");
    EXPECT_RC(-FI_ENODATA, getinfo(bad_domain.get()).rc);
}

TEST(GetinfoTest, NodeAndServiceAsSource) {
    GetinfoResult r = getinfo(usnic_hints(FI_EP_DGRAM).get(), kApi, "127.0.0.1", "4711", FI_SOURCE);
    ASSERT_OK(r.rc);
    ASSERT_EQ(r.usnic.size(), 1u);
    const fi_info *i = r.usnic[0];
    expect_src_is_loopback(i);
    EXPECT_EQ(port_of(*static_cast<const sockaddr_in *>(i->src_addr)), 4711);
    EXPECT_EQ(i->dest_addr, nullptr);
}

TEST(GetinfoTest, NodeAndServiceAsDestination) {
    GetinfoResult r = getinfo(usnic_hints(FI_EP_DGRAM).get(), kApi, "127.0.0.1", "4712", 0);
    ASSERT_OK(r.rc);
    ASSERT_EQ(r.usnic.size(), 1u);
    const fi_info *i = r.usnic[0];
    expect_src_is_loopback(i);
    ASSERT_NE(i->dest_addr, nullptr);
    ASSERT_EQ(i->dest_addrlen, sizeof(sockaddr_in));
    const auto *d = static_cast<const sockaddr_in *>(i->dest_addr);
    EXPECT_EQ(ip_of(*d), kLoopback);
    EXPECT_EQ(port_of(*d), 4712);
}

TEST(GetinfoTest, AddressFormats) {
    InfoPtr h = usnic_hints(FI_EP_DGRAM);
    h->addr_format = FI_SOCKADDR;
    GetinfoResult r = getinfo(h.get());
    ASSERT_OK(r.rc);
    ASSERT_EQ(r.usnic.size(), 1u);
    EXPECT_EQ(r.usnic[0]->addr_format, static_cast<uint32_t>(FI_SOCKADDR));
    expect_src_is_loopback(r.usnic[0]);

    InfoPtr s = usnic_hints(FI_EP_DGRAM);
    s->addr_format = FI_ADDR_STR;
    GetinfoResult rs = getinfo(s.get());
    ASSERT_OK(rs.rc);
    ASSERT_EQ(rs.usnic.size(), 1u);
    EXPECT_EQ(rs.usnic[0]->addr_format, static_cast<uint32_t>(FI_ADDR_STR));
    ASSERT_NE(rs.usnic[0]->src_addr, nullptr);
    const std::string str(static_cast<const char *>(rs.usnic[0]->src_addr));
    EXPECT_EQ(str.rfind("fi_sockaddr_in://127.0.0.1:", 0), 0u) << str;
}

TEST(GetinfoTest, UnreachableDestinationMatchesNothing) {
    EXPECT_RC(-FI_ENODATA,
              getinfo(usnic_hints(FI_EP_DGRAM).get(), kApi, kUnreachableIp, "4711", 0).rc);
}

TEST(GetinfoTest, ForeignSourceMatchesNothing) {
    // 127.0.0.2 is on lo's subnet but is not the device address.
    EXPECT_RC(-FI_ENODATA,
              getinfo(usnic_hints(FI_EP_DGRAM).get(), kApi, "127.0.0.2", "4711", FI_SOURCE).rc);
}

TEST(GetinfoTest, OldApiNeedsLocalMrMode) {
    InfoPtr h = usnic_hints(FI_EP_DGRAM, 0);
    h->domain_attr->mr_mode = FI_MR_UNSPEC;
    EXPECT_RC(-FI_ENODATA, getinfo(h.get(), FI_VERSION(1, 4)).rc);
    h->mode = FI_LOCAL_MR;
    GetinfoResult r = getinfo(h.get(), FI_VERSION(1, 4));
    ASSERT_OK(r.rc);
    EXPECT_EQ(r.usnic.size(), 1u);
}

// ---------------------------------------------------------------------------
// Hints that must match nothing (-FI_ENODATA).

struct BadHint {
    const char *name;
    fi_ep_type type;
    std::function<void(fi_info &)> edit;
};

void PrintTo(const BadHint &b, std::ostream *os) {
    *os << b.name;
}

class BadHintTest : public ::testing::TestWithParam<BadHint> {};

TEST_P(BadHintTest, MatchesNothing) {
    InfoPtr h = usnic_hints(GetParam().type);
    GetParam().edit(*h);
    GetinfoResult r = getinfo(h.get());
    EXPECT_RC(-FI_ENODATA, r.rc) << "returned " << r.usnic.size() << " usnic infos";
    EXPECT_TRUE(r.usnic.empty());
}

const BadHint kBadHints[] = {
    {"caps_tagged", FI_EP_DGRAM, [](fi_info &h) { h.caps = FI_MSG | FI_TAGGED; }},
    {"caps_rma", FI_EP_DGRAM, [](fi_info &h) { h.caps = FI_MSG | FI_RMA; }},
    {"caps_atomic", FI_EP_DGRAM, [](fi_info &h) { h.caps = FI_ATOMIC; }},
    {"caps_multi_recv", FI_EP_DGRAM, [](fi_info &h) { h.caps = FI_MSG | FI_MULTI_RECV; }},
    {"av_table", FI_EP_DGRAM, [](fi_info &h) { h.domain_attr->av_type = FI_AV_TABLE; }},
    {"data_progress_auto", FI_EP_DGRAM,
     [](fi_info &h) { h.domain_attr->data_progress = FI_PROGRESS_AUTO; }},
    {"thread_safe", FI_EP_DGRAM, [](fi_info &h) { h.domain_attr->threading = FI_THREAD_SAFE; }},
    {"rm_enabled", FI_EP_DGRAM, [](fi_info &h) { h.domain_attr->resource_mgmt = FI_RM_ENABLED; }},
    {"mr_cnt_65536", FI_EP_DGRAM, [](fi_info &h) { h.domain_attr->mr_cnt = 65536; }},
    {"msg_order_sas", FI_EP_DGRAM, [](fi_info &h) { h.tx_attr->msg_order = FI_ORDER_SAS; }},
    {"rx_comp_order", FI_EP_DGRAM, [](fi_info &h) { h.rx_attr->comp_order = FI_ORDER_STRICT; }},
    {"inject_951", FI_EP_DGRAM, [](fi_info &h) { h.tx_attr->inject_size = kDgramInject + 1; }},
    {"inject_65_msg", FI_EP_MSG, [](fi_info &h) { h.tx_attr->inject_size = kRudpInject + 1; }},
    {"tx_iov_9", FI_EP_DGRAM, [](fi_info &h) { h.tx_attr->iov_limit = 9; }},
    {"rx_iov_9", FI_EP_DGRAM, [](fi_info &h) { h.rx_attr->iov_limit = 9; }},
    {"msg_tx_size_513", FI_EP_MSG, [](fi_info &h) { h.tx_attr->size = 513; }},
    {"max_msg_above", FI_EP_DGRAM,
     [](fi_info &h) { h.ep_attr->max_msg_size = dgram_max_payload("lo") + 1; }},
    {"tx_ctx_cnt_2", FI_EP_DGRAM, [](fi_info &h) { h.ep_attr->tx_ctx_cnt = 2; }},
    {"prov_version_2", FI_EP_DGRAM,
     [](fi_info &h) { h.fabric_attr->prov_version = FI_VERSION(2, 0); }},
    {"dgram_proto_rudp", FI_EP_DGRAM, [](fi_info &h) { h.ep_attr->protocol = FI_PROTO_RUDP; }},
    {"dgram_proto_tcp", FI_EP_DGRAM, [](fi_info &h) { h.ep_attr->protocol = FI_PROTO_SOCK_TCP; }},
    // 4 is FI_EP_SOCK_STREAM of 1.x (2.x removed it; its headers alias the name to UNSPEC).
    {"ep_sock_stream", static_cast<fi_ep_type>(4), [](fi_info &) {}},
    {"auth_key", FI_EP_DGRAM,
     [](fi_info &h) {
         h.domain_attr->auth_key = static_cast<uint8_t *>(calloc(1, 8));
         h.domain_attr->auth_key_size = 8;
     }},
    {"addr_format_psmx2", FI_EP_DGRAM, [](fi_info &h) { h.addr_format = FI_ADDR_PSMX2; }},
    {"no_local_mr", FI_EP_DGRAM,
     [](fi_info &h) {
         h.mode = 0;
         h.domain_attr->mr_mode = FI_MR_ALLOCATED;
     }},
    {"no_mr_indication", FI_EP_DGRAM,
     [](fi_info &h) {
         h.mode = 0;
         h.domain_attr->mr_mode = 0;
     }},
    // At API 1.5 and later a domain_attr's mr_mode 0 says "no MR mode handled", even
    // with FI_LOCAL_MR in mode (libfabric's own rule; fi_getinfo_test mr_mode6).
    {"mr_mode_0_with_local_mr_mode", FI_EP_DGRAM,
     [](fi_info &h) {
         h.mode = FI_LOCAL_MR;
         h.domain_attr->mr_mode = 0;
     }},
    {"cq_data_size", FI_EP_MSG, [](fi_info &h) { h.domain_attr->cq_data_size = 4; }},
    {"dgram_msg_order_sas", FI_EP_DGRAM, [](fi_info &h) { h.rx_attr->msg_order = FI_ORDER_SAS; }},
};

std::string bad_hint_name(const ::testing::TestParamInfo<BadHint> &info) {
    return info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Hints, BadHintTest, ::testing::ValuesIn(kBadHints), bad_hint_name);

}  // namespace

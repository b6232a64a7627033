// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// softnic's IP addressing for cxi (fi_cxi(7) "ADDRESSING BY IP"): a soft NIC is bound to
// an IPv4 address, so fi_getinfo and fi_av_insertsvc accept that address or a host name
// as node, and a port-like service (511..65535) as PID 256 + port % 255, so that a client
// given (address, port) reaches the server that bound (address, port), as fabtests does.
// Also the MR modes an application may leave out (a soft NIC needs neither FI_MR_ENDPOINT
// nor FI_MR_ALLOCATED), which fabtests' fi_getinfo_test walks bit by bit.
#include <rdma/fi_rma.h>

#include <cstring>

#include "fixture.hpp"

using namespace cxit;

namespace {

constexpr uint32_t port_pid(uint32_t port) {
    return 256 + port % 255;
}

long getinfo(const char *node, const char *service, uint64_t flags, const fi_info *hints,
             InfoPtr &out, uint32_t version = kApiVersion) {
    fi_info *i = nullptr;
    long rc = fi_getinfo(version, node, service, flags, hints, &i);
    out.reset(i);
    return rc;
}

class IpAddressingTest : public CxiTest {};

TEST_F(IpAddressingTest, SoftNicAddressNamesItsNic) {
    InfoPtr hints = make_hints(EpOptions{}, nullptr), out;
    ASSERT_OK(getinfo("127.0.0.2", nullptr, FI_SOURCE, hints.get(), out));
    for (const fi_info *i = out.get(); i; i = i->next)
        EXPECT_STREQ("cxi1", i->domain_attr->name) << "127.0.0.2 is cxi1's address";
    ASSERT_OK(getinfo("127.0.0.1", nullptr, FI_SOURCE, hints.get(), out));
    EXPECT_STREQ("cxi0", out->domain_attr->name);
    ASSERT_OK(getinfo("localhost", nullptr, FI_SOURCE, hints.get(), out));
    EXPECT_STREQ("cxi0", out->domain_attr->name) << "a host name resolves to its address";
}

TEST_F(IpAddressingTest, OtherAddressOfThisHostNamesTheFirstNic) {
    InfoPtr hints = make_hints(EpOptions{}, nullptr), out;
    ASSERT_OK(getinfo("127.0.0.9", nullptr, FI_SOURCE, hints.get(), out));
    EXPECT_STREQ("cxi0", out->domain_attr->name);
    ASSERT_OK(getinfo("127.0.0.9", "7", 0, hints.get(), out));
    ASSERT_NE(nullptr, out->dest_addr);
    EXPECT_EQ(decode_addr(out->src_addr).nic, decode_addr(out->dest_addr).nic)
        << "a loopback destination is this host's soft NIC";
}

TEST_F(IpAddressingTest, RemoteAddressGivesItsLowTwentyBits) {
    InfoPtr hints = make_hints(EpOptions{}, "cxi0"), out;
    ASSERT_OK(getinfo("198.51.100.7", "12", 0, hints.get(), out));
    CxiAddr d = decode_addr(out->dest_addr);
    EXPECT_EQ(0x36407u, d.nic) << "0xC6336407 & 0xFFFFF";
    EXPECT_EQ(12u, d.pid);
}

TEST_F(IpAddressingTest, PortLikeServiceNamesAPid) {
    InfoPtr hints = make_hints(EpOptions{}, nullptr), out;
    for (uint32_t port : {511u, 9228u, 65535u}) {
        std::string svc = std::to_string(port);
        ASSERT_OK(getinfo("127.0.0.1", svc.c_str(), FI_SOURCE, hints.get(), out)) << port;
        EXPECT_EQ(port_pid(port), decode_addr(out->src_addr).pid) << port;
        ASSERT_OK(getinfo("127.0.0.1", svc.c_str(), 0, hints.get(), out)) << port;
        EXPECT_EQ(port_pid(port), decode_addr(out->dest_addr).pid) << port;
    }
    ASSERT_OK(getinfo("127.0.0.1", "510", FI_SOURCE, hints.get(), out));
    EXPECT_EQ(510u, decode_addr(out->src_addr).pid) << "PIDs 0-510 keep the seed's meaning";
    EXPECT_RC(-FI_ENODATA, getinfo("127.0.0.1", "65536", FI_SOURCE, hints.get(), out));
    EXPECT_RC(-FI_ENODATA, getinfo("cxi9", nullptr, FI_SOURCE, hints.get(), out));
}

TEST_F(IpAddressingTest, InsertsvcTakesAddressAndPort) {
    EndpointPtr ep = make_ep("cxi0");
    fi_addr_t a = FI_ADDR_NOTAVAIL;
    ASSERT_EQ(1, fi_av_insertsvc(ep->av(), "127.0.0.2", "9228", &a, 0, nullptr));
    uint8_t raw[8];
    size_t len = sizeof(raw);
    ASSERT_OK(fi_av_lookup(ep->av(), a, raw, &len));
    InfoPtr hints = make_hints(EpOptions{}, nullptr), out;
    ASSERT_OK(getinfo("127.0.0.2", nullptr, FI_SOURCE, hints.get(), out));
    EXPECT_EQ(decode_addr(out->src_addr).nic, decode_addr(raw).nic);
    EXPECT_EQ(port_pid(9228), decode_addr(raw).pid);
}

// Two binders of one port on one NIC (fabtests' -E client and server): the second takes
// another PID; an explicit PID stays exclusive.
TEST_F(IpAddressingTest, SecondBinderOfAPortTakesAnotherPid) {
    EpOptions o;
    o.src_node = "127.0.0.1";
    o.src_service = "64999";
    EndpointPtr first = make_ep("cxi0", o), second = make_ep("cxi0", o);
    EXPECT_NE(decode_addr(first->name().data()).pid, decode_addr(second->name().data()).pid);
    uint32_t pid = 0;
    EndpointPtr held = make_ep_at_pid("cxi0", EpOptions{}, pid);
    std::string svc = std::to_string(pid);
    o.src_service = svc.c_str();
    o.enable = false;
    EndpointPtr again = make_ep("cxi0", o);
    EXPECT_RC(-FI_ENOSPC, fi_enable(again->ep())) << "PID " << pid << " named directly";
}

class IpPairTest : public TransportTest {};

// The server binds (its soft NIC's IPv4 address, a port); the client finds it from the same
// two strings and they exchange messages both ways.
TEST_P(IpPairTest, ClientReachesServerByAddressAndPort) {
    const char *ip = std::strcmp(peer_domain(), "cxi1") == 0 ? "127.0.0.2" : "127.0.0.1";
    EndpointPtr server;
    std::string svc;
    for (uint32_t port = 41000 + uint32_t(getpid() % 200); !server; port += 7) {
        svc = std::to_string(port);
        EpOptions o;
        o.src_node = ip;
        o.src_service = svc.c_str();
        EndpointPtr ep = make_ep(peer_domain(), o);
        if (decode_addr(ep->name().data()).pid == port_pid(port)) server = std::move(ep);
    }
    EndpointPtr client = make_ep("cxi0");
    InfoPtr hints = make_hints(EpOptions{}, "cxi0"), out;
    ASSERT_OK(getinfo(ip, svc.c_str(), 0, hints.get(), out));
    ASSERT_EQ(kAddrLen, out->dest_addrlen);
    std::vector<uint8_t> dest(static_cast<uint8_t *>(out->dest_addr),
                              static_cast<uint8_t *>(out->dest_addr) + kAddrLen);
    EXPECT_EQ(server->name(), dest) << "the client computes the server's exact address";
    fi_addr_t c2s = client->insert(dest);
    fi_addr_t s2c = server->insert(client->name());
    ping(*client, c2s, *server, 64, 1);
    ping(*server, s2c, *client, 100000, 2, true, 9);
}

CXIT_INSTANTIATE_TRANSPORTS(IpPairTest);

class MrModeTest : public CxiTest {};

// What the application leaves out of mr_mode, it gets left out: only provider keys are
// required (of the provider-key flavour).
TEST_F(MrModeTest, ReportedModeIsWhatTheApplicationAccepts) {
    InfoPtr out;
    for (int want : {0, int(FI_MR_ENDPOINT), int(FI_MR_ALLOCATED), int(FI_MR_LOCAL | FI_MR_RAW),
                     int(FI_MR_PROV_KEY), int(FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_LOCAL)}) {
        EpOptions o;
        o.mr_mode = want;
        o.caps = FI_MSG | FI_RMA;
        InfoPtr hints = make_hints(o, "cxi0");
        ASSERT_OK(getinfo(nullptr, nullptr, 0, hints.get(), out)) << std::hex << want;
        const int got = out->domain_attr->mr_mode;
        EXPECT_EQ(0, got & ~want) << std::hex << "asked 0x" << want << " got 0x" << got;
        EXPECT_EQ(want & FI_MR_PROV_KEY, got & FI_MR_PROV_KEY) << std::hex << want;
        EXPECT_EQ((want & FI_MR_PROV_KEY) ? 8u : 4u, out->domain_attr->mr_key_size);
    }
}

// The enum era (API < 1.5, or FI_MR_BASIC/FI_MR_SCALABLE in hints): offsets and client
// keys are FI_MR_SCALABLE; FI_MR_BASIC's virtual addresses are not offered.
TEST_F(MrModeTest, EnumEraGetsScalableOnly) {
    InfoPtr out;
    for (int want : {int(FI_MR_UNSPEC), int(FI_MR_SCALABLE)}) {
        EpOptions o;
        o.mr_mode = want;
        o.caps = FI_MSG | FI_RMA;
        InfoPtr hints = make_hints(o, "cxi0");
        ASSERT_OK(getinfo(nullptr, nullptr, 0, hints.get(), out, FI_VERSION(1, 0))) << want;
        EXPECT_EQ(FI_MR_SCALABLE, out->domain_attr->mr_mode);
    }
    EpOptions o;
    o.mr_mode = FI_MR_BASIC;
    InfoPtr hints = make_hints(o, "cxi0");
    EXPECT_RC(-FI_ENODATA, getinfo(nullptr, nullptr, 0, hints.get(), out, FI_VERSION(1, 0)));
    EXPECT_RC(-FI_ENODATA, getinfo(nullptr, nullptr, 0, hints.get(), out));
}

class MrModePairTest : public TransportTest {};

// RMA with neither FI_MR_ENDPOINT nor FI_MR_ALLOCATED: the MR serves as soon as it is
// registered, with no bind or enable.
TEST_P(MrModePairTest, RmaWithoutEndpointBinding) {
    EpOptions o;
    o.caps = FI_MSG | FI_RMA;
    o.mr_mode = FI_MR_PROV_KEY;
    Pair p = make_pair(o, o);
    ASSERT_EQ(FI_MR_PROV_KEY, p.b->info()->domain_attr->mr_mode);
    std::vector<uint8_t> target(4096, 0xEE), src = pattern(1000, 4), back(1000);
    Fid<fid_mr> mr;
    ASSERT_OK(CXIT_OPEN(mr, fi_mr_reg(domain(peer_domain(), o), target.data(), target.size(),
                                      FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, OUT, nullptr)));
    const uint64_t key = fi_mr_key(mr.get());
    int c1 = 0, c2 = 0;
    post([&] { return fi_write(p.a->ep(), src.data(), src.size(), nullptr, p.a2b, 8, key, &c1); },
         "fi_write");
    wait_comp(p.a->tx(), &c1, "write");
    EXPECT_EQ(0, std::memcmp(&target[8], src.data(), src.size()));
    post([&] { return fi_read(p.a->ep(), back.data(), back.size(), nullptr, p.a2b, 8, key, &c2); },
         "fi_read");
    wait_comp(p.a->tx(), &c2, "read");
    EXPECT_EQ(src, back);
}

CXIT_INSTANTIATE_TRANSPORTS(MrModePairTest);

}  // namespace

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Endpoint life cycle and object rules: enable, size_left, posting before
// enable, getname, binding rules, domain operations that do not exist, MR
// registration and closing objects that are still in use.
#include <rdma/fi_atomic.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fixture.hpp"

using namespace usnict;

namespace {

// fi_tx/rx_size_left are deprecated in the headers but still part of the API
// that applications (Open MPI) call.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
ssize_t tx_left(fid_ep *ep) {
    return fi_tx_size_left(ep);
}
ssize_t rx_left(fid_ep *ep) {
    return fi_rx_size_left(ep);
}
#pragma GCC diagnostic pop

class EndpointTest : public UsnicTest, public ::testing::WithParamInterface<Kind> {
  protected:
    Kind kind() const { return GetParam(); }
};

TEST_P(EndpointTest, EnableWithoutCqs) {
    auto e = bare_endpoint(kind());
    const long expected = kind() == Kind::dgram ? -FI_EOPBADSTATE : -FI_ENOCQ;
    if (kind() == Kind::msg) {
        Fid<fid_eq> eq = open_eq();
        ASSERT_OK(fi_ep_bind(e->ep.get(), eq.fid(), 0));
        EXPECT_RC(expected, fi_enable(e->ep.get()));
        e.reset();
        return;
    }
    EXPECT_RC(expected, fi_enable(e->ep.get()));
    Fid<fid_cq> tx = open_cq(FI_CQ_FORMAT_MSG);
    ASSERT_OK(fi_ep_bind(e->ep.get(), tx.fid(), FI_TRANSMIT));
    EXPECT_RC(expected, fi_enable(e->ep.get())) << "a receive CQ is needed too";
    e.reset();
}

TEST_P(EndpointTest, SizeLeftBeforeEnable) {
    auto e = bare_endpoint(kind());
    EXPECT_RC(-FI_EOPBADSTATE, tx_left(e->ep.get()));
    EXPECT_RC(-FI_EOPBADSTATE, rx_left(e->ep.get()));
}

TEST_P(EndpointTest, PostingBeforeEnable) {
    EpOpts o;
    o.enable = false;
    auto e = endpoint(kind(), o);
    char buf[16] = {};
    EXPECT_RC(-FI_EOPBADSTATE,
              fi_recv(e->ep.get(), buf, sizeof(buf), nullptr, FI_ADDR_UNSPEC, nullptr));
    EXPECT_RC(-FI_EOPBADSTATE, fi_send(e->ep.get(), buf, sizeof(buf), nullptr, 0, nullptr));
    EXPECT_RC(-FI_EOPBADSTATE, fi_inject(e->ep.get(), buf, 8, 0));
    EXPECT_RC(-FI_EOPBADSTATE, tx_left(e->ep.get()));
}

TEST_P(EndpointTest, SizeLeftAfterEnable) {
    auto e = endpoint(kind());
    EXPECT_EQ(tx_left(e->ep.get()), static_cast<ssize_t>(e->info->tx_attr->size));
    EXPECT_EQ(rx_left(e->ep.get()), static_cast<ssize_t>(e->info->rx_attr->size));
    if (kind() == Kind::dgram) {
        EXPECT_EQ(tx_left(e->ep.get()), 1023);
    }
}

TEST_P(EndpointTest, GetnameBeforeEnable) {
    auto e = bare_endpoint(kind());
    const sockaddr_in sin = getname(e->ep.fid());
    EXPECT_EQ(sin.sin_family, AF_INET);
    EXPECT_EQ(ip_of(sin), kLoopback);
    EXPECT_EQ(port_of(sin), 0);
}

TEST_P(EndpointTest, GetnameAfterEnable) {
    auto e = endpoint(kind());
    const sockaddr_in sin = getname(e->ep.fid());
    EXPECT_EQ(ip_of(sin), kLoopback);
    // A MSG endpoint's port comes with its connection (see CmTest).
    if (kind() != Kind::msg) {
        EXPECT_NE(port_of(sin), 0);
    }
}

// A source port named as fi_getinfo's service (FI_SOURCE) is a preference: when it is
// taken (here by a plain socket; under fabtests' -E by the server on the same host),
// fi_enable binds any free port. A port the application put in src_addr stays exclusive.
TEST_P(EndpointTest, ServicePortGivesWayWhenTaken) {
    if (kind() == Kind::msg) return;  // MSG data ports are always ephemeral
    UdpSocket taken;
    const std::string service = std::to_string(port_of(taken.addr()));
    InfoPtr hints = usnic_hints(ep_type(kind()));
    GetinfoResult r = getinfo(hints.get(), kApi, "127.0.0.1", service.c_str(), FI_SOURCE);
    ASSERT_OK(r.rc);
    ASSERT_FALSE(r.usnic.empty());
    auto e = endpoint(kind(), {}, r.usnic[0]);
    const sockaddr_in name = getname(e->ep.fid());
    EXPECT_NE(port_of(name), port_of(taken.addr()));
    EXPECT_NE(port_of(name), 0);
    e.reset();
}

TEST_P(EndpointTest, SourceAddressPortStaysExclusive) {
    if (kind() == Kind::msg) return;
    UdpSocket taken;
    InfoPtr hints = usnic_hints(ep_type(kind()));
    const sockaddr_in src = taken.addr();
    hints->addr_format = FI_SOCKADDR_IN;
    hints->src_addr = malloc(sizeof(src));
    ASSERT_NE(hints->src_addr, nullptr);
    std::memcpy(hints->src_addr, &src, sizeof(src));
    hints->src_addrlen = sizeof(src);
    GetinfoResult r = getinfo(hints.get());
    ASSERT_OK(r.rc);
    ASSERT_FALSE(r.usnic.empty());
    EpOpts o;
    o.enable = false;
    auto e = endpoint(kind(), o, r.usnic[0]);
    EXPECT_RC(-FI_EADDRINUSE, fi_enable(e->ep.get()));
    e.reset();
}

TEST_P(EndpointTest, GetnameBufferTooSmall) {
    auto e = bare_endpoint(kind());
    uint8_t buf[16];
    std::memset(buf, 0xcc, sizeof(buf));
    size_t len = 4;
    EXPECT_RC(-FI_ETOOSMALL, fi_getname(e->ep.fid(), buf, &len));
    EXPECT_EQ(len, sizeof(sockaddr_in));
    EXPECT_EQ(buf[4], 0xcc) << "wrote past the given length";
}

TEST_P(EndpointTest, CqBindRules) {
    auto e = bare_endpoint(kind());
    Fid<fid_cq> cq1 = open_cq(FI_CQ_FORMAT_MSG), cq2 = open_cq(FI_CQ_FORMAT_MSG);
    EXPECT_RC(-FI_EBADFLAGS, fi_ep_bind(e->ep.get(), cq1.fid(), FI_TRANSMIT | FI_REMOTE_READ));
    ASSERT_OK(fi_ep_bind(e->ep.get(), cq1.fid(), FI_TRANSMIT));
    EXPECT_RC(-FI_EINVAL, fi_ep_bind(e->ep.get(), cq2.fid(), FI_TRANSMIT)) << "second send CQ";
    ASSERT_OK(fi_ep_bind(e->ep.get(), cq1.fid(), FI_RECV)) << "one CQ for both directions";
    EXPECT_RC(-FI_EINVAL, fi_ep_bind(e->ep.get(), cq2.fid(), FI_RECV)) << "second receive CQ";
    e.reset();
}

TEST_P(EndpointTest, AvBindRules) {
    if (kind() == Kind::msg) {
        auto e = bare_endpoint(kind());
        Fid<fid_av> av = open_av();
        EXPECT_RC(-FI_EINVAL, fi_ep_bind(e->ep.get(), av.fid(), 0)) << "MSG has no AV";
        e.reset();
        return;
    }
    auto e = bare_endpoint(kind());
    Fid<fid_av> av1 = open_av(), av2 = open_av();
    EXPECT_RC(-FI_EBADFLAGS, fi_ep_bind(e->ep.get(), av1.fid(), FI_REMOTE_READ));
    ASSERT_OK(fi_ep_bind(e->ep.get(), av1.fid(), 0));
    EXPECT_RC(-FI_EINVAL, fi_ep_bind(e->ep.get(), av2.fid(), 0)) << "second AV";
    EXPECT_RC(-FI_EBUSY, av1.close()) << "AV bound to an endpoint";
    e.reset();
}

// An AV may come after fi_enable (ofi_rxd binds its core's AV so); CQs may not.
TEST_P(EndpointTest, AvBindAfterEnable) {
    if (kind() == Kind::msg) return;
    EpOpts o;
    o.av = false;
    auto e = endpoint(kind(), o);
    Fid<fid_cq> cq = open_cq(FI_CQ_FORMAT_MSG);
    EXPECT_RC(-FI_EOPBADSTATE, fi_ep_bind(e->ep.get(), cq.fid(), FI_TRANSMIT));
    e->av = open_av();
    ASSERT_OK(fi_ep_bind(e->ep.get(), e->av.fid(), 0));
    EXPECT_RC(-FI_EINVAL, fi_ep_bind(e->ep.get(), e->av.fid(), 0)) << "second AV";
    // The AV is in use at once: a send to one of its addresses leaves.
    UdpSocket sock;
    const fi_addr_t dest = av_insert(e->av.get(), sock.addr());
    std::vector<uint8_t> msg(e->prefix() + 8, 0x5a);
    ASSERT_OK(fi_send(e->ep.get(), msg.data(), msg.size(), nullptr, dest, nullptr));
    if (kind() == Kind::dgram) {
        uint8_t in[64];
        EXPECT_EQ(sock.recv_from(in, sizeof(in), nullptr), 8);
    }
    e.reset();
}

TEST_P(EndpointTest, CloseBoundCqIsBusy) {
    auto e = endpoint(kind());
    EXPECT_RC(-FI_EBUSY, e->tx_cq.close());
    EXPECT_RC(-FI_EBUSY, domain_.close()) << "domain with endpoints";
    e.reset();
}

INSTANTIATE_TEST_SUITE_P(, EndpointTest, USNICT_ALL_KINDS, kind_param_name);

class DomainTest : public UsnicTest {
  protected:
    void SetUp() override {
        InfoPtr info = info_of(FI_EP_DGRAM);
        open_domain(info.get());
    }
};

TEST_F(DomainTest, MissingObjects) {
    fi_cntr_attr cattr{};
    fid_cntr *cntr = nullptr;
    EXPECT_RC(-FI_ENOSYS, fi_cntr_open(domain(), &cattr, &cntr, nullptr));
    fi_atomic_attr aattr{};
    EXPECT_RC(-FI_EOPNOTSUPP, fi_query_atomic(domain(), FI_UINT64, FI_SUM, &aattr, 0));
    InfoPtr info = info_of(FI_EP_RDM);
    fid_ep *sep = nullptr;
    EXPECT_RC(-FI_ENOSYS, fi_scalable_ep(domain(), info.get(), &sep, nullptr));
    fid_stx *stx = nullptr;
    EXPECT_RC(-FI_ENOSYS, fi_stx_context(domain(), nullptr, &stx, nullptr));
    fid_ep *srx = nullptr;
    EXPECT_RC(-FI_ENOSYS, fi_srx_context(domain(), nullptr, &srx, nullptr));
}

TEST_F(DomainTest, CqAttributes) {
    fi_cq_attr attr{};
    Fid<fid_cq> cq;
    attr.format = FI_CQ_FORMAT_TAGGED;
    EXPECT_RC(-FI_ENOSYS, USNICT_OPEN(cq, fi_cq_open(domain(), &attr, OUT, nullptr)));
    attr.format = FI_CQ_FORMAT_CONTEXT;
    attr.size = 65536;
    EXPECT_RC(-FI_EINVAL, USNICT_OPEN(cq, fi_cq_open(domain(), &attr, OUT, nullptr)));
    for (fi_cq_format f :
         {FI_CQ_FORMAT_UNSPEC, FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG, FI_CQ_FORMAT_DATA}) {
        attr = {};
        attr.format = f;
        EXPECT_OK(USNICT_OPEN(cq, fi_cq_open(domain(), &attr, OUT, nullptr))) << f;
        EXPECT_OK(cq.close());
    }
}

TEST_F(DomainTest, UnboundCqReadsNothing) {
    Fid<fid_cq> cq = open_cq(FI_CQ_FORMAT_MSG);
    fi_cq_msg_entry e;
    EXPECT_RC(-FI_EAGAIN, fi_cq_read(cq.get(), &e, 1));
    fi_cq_err_entry err{};
    EXPECT_RC(-FI_EAGAIN, fi_cq_readerr(cq.get(), &err, 0));
}

TEST_F(DomainTest, MemoryRegistration) {
    std::vector<uint8_t> buf(4096);
    Fid<fid_mr> mr;
    EXPECT_OK(
        USNICT_OPEN(mr, fi_mr_reg(domain(), buf.data(), buf.size(), 0, 0, 0, 0, OUT, nullptr)));
    EXPECT_OK(mr.close());
    EXPECT_RC(-FI_EBADFLAGS,
              USNICT_OPEN(mr, fi_mr_reg(domain(), buf.data(), buf.size(), FI_SEND | FI_RECV, 0, 0,
                                        FI_RMA_EVENT, OUT, nullptr)));
    // libfabric's own "do not cache" flag (bit 60), which ofi_rxd passes, is accepted.
    EXPECT_OK(USNICT_OPEN(mr, fi_mr_reg(domain(), buf.data(), buf.size(), FI_SEND | FI_RECV, 0, 0,
                                        1ULL << 60, OUT, nullptr)));
    EXPECT_OK(mr.close());
    iovec iov[2] = {{buf.data(), 100}, {buf.data() + 200, 100}};
    EXPECT_RC(-FI_EINVAL,
              USNICT_OPEN(mr, fi_mr_regv(domain(), iov, 2, FI_SEND, 0, 0, 0, OUT, nullptr)));
    EXPECT_OK(USNICT_OPEN(mr, fi_mr_regv(domain(), iov, 1, FI_SEND, 0, 0, 0, OUT, nullptr)));
}

TEST_F(DomainTest, FabricOpenByName) {
    fi_fabric_attr attr{};
    attr.name = const_cast<char *>("10.0.0.0/8");
    attr.prov_name = const_cast<char *>("usnic");
    Fid<fid_fabric> other;
    EXPECT_RC(-FI_ENODEV, USNICT_OPEN(other, fi_fabric(&attr, OUT, nullptr)));
}

}  // namespace

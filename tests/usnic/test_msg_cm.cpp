// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// FI_EP_MSG connection management: passive endpoint rules, connect/accept
// with private data in both directions, reject with private data, shutdown (one
// FI_SHUTDOWN per side), the private-data size limit, endpoint names (a passive
// endpoint given as info->handle), and the order of events on a shared EQ.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fixture.hpp"

using namespace usnict;

namespace {

std::vector<uint8_t> bytes(const std::string &s) {
    return {s.begin(), s.end()};
}

class CmTest : public PairBase {
  protected:
    CmTest() { kind_ = Kind::msg; }
    // A listening PEP; returns its address.
    sockaddr_in listen_pep() {
        InfoPtr info = info_of(FI_EP_MSG);
        open_domain(info.get());
        pep_eq_ = open_eq();
        USNICT_REQUIRE_OK(USNICT_OPEN(pep_, fi_passive_ep(fabric(), info.get(), OUT, nullptr)));
        USNICT_REQUIRE_OK(fi_pep_bind(pep_.get(), pep_eq_.fid(), 0));
        USNICT_REQUIRE_OK(fi_listen(pep_.get()));
        return getname(pep_.fid());
    }
    // Client a_ connects with `data`; returns the server's CONNREQ.
    CmEvent connect(const sockaddr_in &srv, const std::vector<uint8_t> &data) {
        a_ = endpoint(Kind::msg);
        USNICT_REQUIRE_OK(fi_connect(a_->ep.get(), &srv, data.data(), data.size()));
        CmEvent req = read_cm(pep_eq_.get());
        if (req.rc < 0 || req.event != FI_CONNREQ || !req.info) fatal("expected FI_CONNREQ");
        return req;
    }
    void expect_connected(Endpoint &e, const std::vector<uint8_t> &data) {
        CmEvent c = read_cm(e.eq.get());
        ASSERT_GE(c.rc, 0) << rc_str(c.rc);
        EXPECT_EQ(c.event, static_cast<uint32_t>(FI_CONNECTED));
        EXPECT_EQ(c.fid, e.ep.fid());
        EXPECT_EQ(c.data, data);
    }
    void expect_shutdown(Endpoint &e) {
        CmEvent c = read_cm(e.eq.get());
        ASSERT_GE(c.rc, 0) << rc_str(c.rc);
        EXPECT_EQ(c.event, static_cast<uint32_t>(FI_SHUTDOWN));
        EXPECT_EQ(c.fid, e.ep.fid());
    }
    void expect_no_event(Endpoint &e) {
        uint32_t event = 0;
        fi_eq_cm_entry entry{};
        EXPECT_RC(-FI_EAGAIN, fi_eq_read(e.eq.get(), &event, &entry, sizeof(entry), 0))
            << "event " << event;
    }
    // As connected_pair(), but the client sends 32 bytes as soon as it is connected and
    // the server posts its receive only after that.
    void connected_pair_client_sends_first() {
        const sockaddr_in srv = listen_pep();
        CmEvent req = connect(srv, {});
        b_ = endpoint(Kind::msg, {}, req.info.get());
        USNICT_REQUIRE_OK(fi_accept(b_->ep.get(), nullptr, 0));
        expect_connected(*a_, {});
        char out[32], in[32] = {};
        fill_pattern(out, sizeof(out), 7);
        send(*a_, out, sizeof(out), nullptr);
        for (Deadline d(50); !d.expired();)
            progress();  // the data reaches the server's endpoint before anything is posted
        expect_connected(*b_, {});
        recv(*b_, in, sizeof(in), nullptr);
        EXPECT_EQ(wait_rx(*b_).len, sizeof(out));
        wait_tx(*a_);
        EXPECT_EQ(check_pattern(in, sizeof(in), 7), sizeof(in));
    }
    // A connected pair (a_ client, b_ server) without private data.
    void connected_pair() {
        const sockaddr_in srv = listen_pep();
        CmEvent req = connect(srv, {});
        b_ = endpoint(Kind::msg, {}, req.info.get());
        USNICT_REQUIRE_OK(fi_accept(b_->ep.get(), nullptr, 0));
        expect_connected(*b_, {});
        expect_connected(*a_, {});
    }
};

class ShutdownTest : public CmTest, public ::testing::WithParamInterface<bool> {};

TEST_F(CmTest, PassiveEndpointRules) {
    const sockaddr_in srv = listen_pep();
    EXPECT_EQ(ip_of(srv), kLoopback);
    EXPECT_NE(port_of(srv), 0);
    EXPECT_RC(-FI_EOPBADSTATE, fi_listen(pep_.get())) << "second listen";
    sockaddr_in other = make_sin(kLoopback, 0);
    EXPECT_RC(-FI_EOPBADSTATE, fi_setname(pep_.fid(), &other, sizeof(other))) << "already bound";
    size_t sz = 0, len = sizeof(sz);
    ASSERT_OK(fi_getopt(pep_.fid(), FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &sz, &len));
    EXPECT_EQ(sz, kCmDataMax);
    len = 4;
    EXPECT_RC(-FI_ETOOSMALL,
              fi_getopt(pep_.fid(), FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &sz, &len));
}

TEST_F(CmTest, SetnameBeforeListen) {
    InfoPtr info = info_of(FI_EP_MSG);
    open_domain(info.get());
    Fid<fid_pep> pep;
    ASSERT_OK(USNICT_OPEN(pep, fi_passive_ep(fabric(), info.get(), OUT, nullptr)));
    sockaddr_in foreign = make_sin("127.0.0.2", 0);
    EXPECT_RC(-FI_EADDRNOTAVAIL, fi_setname(pep.fid(), &foreign, sizeof(foreign)));
    sockaddr_in mine = make_sin(kLoopback, 0);
    EXPECT_OK(fi_setname(pep.fid(), &mine, sizeof(mine)));
}

TEST_F(CmTest, ConnectAcceptWithPrivateData) {
    const sockaddr_in srv = listen_pep();
    const std::vector<uint8_t> hello = bytes("hello from the client"), welcome = bytes("welcome!");
    CmEvent req = connect(srv, hello);
    EXPECT_EQ(req.fid, pep_.fid());
    EXPECT_NE(req.info->handle, nullptr);
    EXPECT_EQ(req.info->ep_attr->type, FI_EP_MSG);
    EXPECT_EQ(req.rc, static_cast<long>(sizeof(fi_eq_cm_entry) + hello.size()));
    EXPECT_EQ(req.data, hello);
    b_ = endpoint(Kind::msg, {}, req.info.get());
    ASSERT_OK(fi_accept(b_->ep.get(), welcome.data(), welcome.size()));
    expect_connected(*b_, {});
    expect_connected(*a_, welcome);
    for (Endpoint *e : {a_.get(), b_.get()}) {
        const sockaddr_in name = getname(e->ep.fid());
        EXPECT_EQ(ip_of(name), kLoopback);
        EXPECT_NE(port_of(name), 0) << "a connected endpoint has its port";
    }

    // The connection carries data both ways.
    for (int dir = 0; dir < 2; dir++) {
        Endpoint &from = dir ? *b_ : *a_, &to = dir ? *a_ : *b_;
        char out[40], in[40] = {};
        fill_pattern(out, sizeof(out), dir);
        recv(to, in, sizeof(in), nullptr);
        send(from, out, sizeof(out), nullptr);
        EXPECT_EQ(wait_rx(to).len, sizeof(out));
        EXPECT_EQ(check_pattern(in, sizeof(out), dir), sizeof(out));
        wait_tx(from);
    }
}

TEST_F(CmTest, RejectCarriesPrivateData) {
    const sockaddr_in srv = listen_pep();
    CmEvent req = connect(srv, bytes("may I?"));
    const std::vector<uint8_t> no = bytes("no, thanks");
    ASSERT_OK(fi_reject(pep_.get(), req.info->handle, no.data(), no.size()));
    CmEvent e = read_cm(a_->eq.get());
    ASSERT_RC(-FI_EAVAIL, e.rc);
    EXPECT_EQ(e.err.err, FI_ECONNREFUSED);
    EXPECT_EQ(e.err.fid, a_->ep.fid());
    EXPECT_EQ(e.err_data, no);
}

TEST_F(CmTest, PrivateDataLimit) {
    const sockaddr_in srv = listen_pep();
    const std::vector<uint8_t> max(kCmDataMax, 0x5a), over(kCmDataMax + 1, 0x5a);
    {
        auto c = endpoint(Kind::msg);
        EXPECT_RC(-FI_EINVAL, fi_connect(c->ep.get(), &srv, over.data(), over.size()));
    }
    CmEvent req = connect(srv, max);
    EXPECT_EQ(req.data, max);
    b_ = endpoint(Kind::msg, {}, req.info.get());
    EXPECT_RC(-FI_EINVAL, fi_accept(b_->ep.get(), over.data(), over.size()));
    EXPECT_RC(-FI_EINVAL, fi_reject(pep_.get(), req.info->handle, over.data(), over.size()));
    ASSERT_OK(fi_accept(b_->ep.get(), max.data(), max.size()));
    expect_connected(*b_, {});
    expect_connected(*a_, max);
}

// Each side of a connection gets exactly one FI_SHUTDOWN: from its own fi_shutdown
// or from the peer's, whichever comes first (fabtests' fi_cm_data waits for it on both).
TEST_P(ShutdownTest, EachSideGetsOneShutdownEvent) {
    connected_pair();
    Endpoint &first = GetParam() ? *b_ : *a_, &second = GetParam() ? *a_ : *b_;
    EXPECT_OK(fi_shutdown(first.ep.get(), 0));
    expect_shutdown(first);
    expect_shutdown(second);
    EXPECT_OK(fi_shutdown(second.ep.get(), 0)) << "after the peer's: nothing to do";
    EXPECT_OK(fi_shutdown(first.ep.get(), 0)) << "a second fi_shutdown";
    expect_no_event(first);
    expect_no_event(second);
    char c = 0;
    EXPECT_RC(-FI_ENOTCONN, fi_send(first.ep.get(), &c, 1, nullptr, 0, nullptr));
}

TEST_P(ShutdownTest, BothSidesShutDownAtOnce) {
    connected_pair();
    EXPECT_OK(fi_shutdown(a_->ep.get(), 0));
    EXPECT_OK(fi_shutdown(b_->ep.get(), 0));
    expect_shutdown(*a_);
    expect_shutdown(*b_);
    expect_no_event(*a_);
    expect_no_event(*b_);
}

INSTANTIATE_TEST_SUITE_P(, ShutdownTest, ::testing::Values(false, true),
                         [](const auto &info) { return info.param ? "server" : "client"; });

TEST_F(CmTest, ShutdownBeforeConnectingIsNotConnected) {
    a_ = endpoint(Kind::msg);
    EXPECT_RC(-FI_ENOTCONN, fi_shutdown(a_->ep.get(), 0));
}

TEST_F(CmTest, CmDataSizeOnAnActiveEndpoint) {
    a_ = endpoint(Kind::msg);
    size_t sz = 0, len = sizeof(sz);
    ASSERT_OK(fi_getopt(&a_->ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &sz, &len));
    EXPECT_EQ(sz, kCmDataMax);
    EXPECT_EQ(len, sizeof(size_t));
    len = 4;
    EXPECT_RC(-FI_ETOOSMALL,
              fi_getopt(&a_->ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &sz, &len));
    EXPECT_RC(-FI_ENOPROTOOPT,
              fi_setopt(&a_->ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &sz, sizeof(sz)));
    auto rdm = endpoint(Kind::rdm);
    len = sizeof(sz);
    EXPECT_RC(-FI_ENOPROTOOPT,
              fi_getopt(&rdm->ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &sz, &len))
        << "RDM endpoints have no connection data";
}

// A TCP port nobody uses right now on 127.0.0.1.
uint16_t free_tcp_port() {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = make_sin(kLoopback, 0);
    socklen_t len = sizeof(a);
    if (s < 0 || bind(s, reinterpret_cast<sockaddr *>(&a), sizeof(a)) ||
        getsockname(s, reinterpret_cast<sockaddr *>(&a), &len))
        fatal("no free TCP port");
    close(s);
    return port_of(a);
}

// An endpoint opened from a passive endpoint's info (info->handle, as fabtests'
// fi_msg_sockets does) takes that address as its name, and connects from it; the
// accepting endpoint's name is the listener's address.
TEST_F(CmTest, EndpointTakesThePassiveEndpointsName) {
    const sockaddr_in srv = listen_pep();
    const sockaddr_in name = make_sin(kLoopback, free_tcp_port());
    InfoPtr info = info_of(FI_EP_MSG);
    Fid<fid_pep> mine;
    ASSERT_OK(USNICT_OPEN(mine, fi_passive_ep(fabric(), info.get(), OUT, nullptr)));
    ASSERT_OK(fi_setname(mine.fid(), const_cast<sockaddr_in *>(&name), sizeof(name)));
    info->handle = mine.fid();
    a_ = endpoint(Kind::msg, {}, info.get());
    EXPECT_EQ(sin_str(getname(a_->ep.fid())), sin_str(name)) << "before connecting";
    ASSERT_OK(mine.close());
    ASSERT_OK(fi_connect(a_->ep.get(), &srv, nullptr, 0));
    CmEvent req = read_cm(pep_eq_.get());
    ASSERT_EQ(req.event, static_cast<uint32_t>(FI_CONNREQ));
    b_ = endpoint(Kind::msg, {}, req.info.get());
    ASSERT_OK(fi_accept(b_->ep.get(), nullptr, 0));
    expect_connected(*b_, {});
    expect_connected(*a_, {});
    EXPECT_EQ(sin_str(getname(a_->ep.fid())), sin_str(name)) << "connected";
    EXPECT_EQ(sin_str(getname(b_->ep.fid())), sin_str(srv)) << "the listener's address";
    auto *rdm_info = info_of(FI_EP_RDM).release();
    rdm_info->handle = pep_.fid();
    Fid<fid_ep> rdm;
    EXPECT_RC(-FI_EINVAL, USNICT_OPEN(rdm, fi_endpoint(domain(), rdm_info, OUT, nullptr)))
        << "only MSG endpoints take a passive endpoint's name";
    rdm_info->handle = nullptr;
    fi_freeinfo(rdm_info);
}

// A passive endpoint opened without a source address still hands out CONNREQ infos
// whose src_addr is the address the request came in on, good for fi_domain.
TEST_F(CmTest, ConnreqInfoCarriesTheListenersAddress) {
    InfoPtr info = info_of(FI_EP_MSG);
    open_domain(info.get());
    free(info->src_addr);
    info->src_addr = nullptr;
    info->src_addrlen = 0;
    pep_eq_ = open_eq();
    ASSERT_OK(USNICT_OPEN(pep_, fi_passive_ep(fabric(), info.get(), OUT, nullptr)));
    ASSERT_OK(fi_pep_bind(pep_.get(), pep_eq_.fid(), 0));
    ASSERT_OK(fi_listen(pep_.get()));
    const sockaddr_in srv = getname(pep_.fid());
    CmEvent req = connect(srv, {});
    ASSERT_NE(req.info->src_addr, nullptr);
    ASSERT_EQ(req.info->src_addrlen, sizeof(sockaddr_in));
    EXPECT_EQ(sin_str(*static_cast<sockaddr_in *>(req.info->src_addr)), sin_str(srv));
    Fid<fid_domain> dom;
    EXPECT_OK(USNICT_OPEN(dom, fi_domain(fabric(), req.info.get(), OUT, nullptr)));
    ASSERT_OK(fi_reject(pep_.get(), req.info->handle, nullptr, 0));
}

// The server's FI_CONNECTED is queued before the client can read the reply, so a client
// that connects again at once cannot get its next FI_CONNREQ ahead of it on an EQ that
// the passive and the accepting endpoints share (fabtests' fi_multi_ep -e msg).
TEST_F(CmTest, ConnectedIsQueuedBeforeTheClientHearsOfIt) {
    const sockaddr_in srv = listen_pep();
    for (int round = 0; round < 5; round++) {
        SCOPED_TRACE(round);
        CmEvent req = connect(srv, {});
        Fid<fid_cq> cq = open_cq(FI_CQ_FORMAT_MSG);
        Fid<fid_ep> ep;
        ASSERT_OK(USNICT_OPEN(ep, fi_endpoint(domain(), req.info.get(), OUT, nullptr)));
        ASSERT_OK(fi_ep_bind(ep.get(), cq.fid(), FI_TRANSMIT | FI_RECV));
        ASSERT_OK(fi_ep_bind(ep.get(), pep_eq_.fid(), 0));
        ASSERT_OK(fi_accept(ep.get(), nullptr, 0));
        expect_connected(*a_, {});
        auto next = endpoint(Kind::msg);
        ASSERT_OK(fi_connect(next->ep.get(), &srv, nullptr, 0));
        CmEvent first = read_cm(pep_eq_.get());
        EXPECT_EQ(first.event, static_cast<uint32_t>(FI_CONNECTED));
        EXPECT_EQ(first.fid, ep.fid());
        CmEvent second = read_cm(pep_eq_.get());
        ASSERT_EQ(second.event, static_cast<uint32_t>(FI_CONNREQ));
        ASSERT_OK(fi_reject(pep_.get(), second.info->handle, nullptr, 0));
        EXPECT_RC(-FI_EAVAIL, read_cm(next->eq.get()).rc) << "the rejection";
    }
}

// Data the client sends the moment it reads FI_CONNECTED is never lost, even when the
// server has not read its own FI_CONNECTED (nor posted a receive) yet.
TEST_F(CmTest, DataRightAfterConnectedArrives) {
    for (int round = 0; round < 10; round++) {
        SCOPED_TRACE(round);
        connected_pair_client_sends_first();
        a_.reset();
        b_.reset();
        pep_.reset();
        pep_eq_.reset();
    }
}

}  // namespace

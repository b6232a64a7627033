// FI_EP_MSG connection management: passive endpoint rules, connect/accept
// with private data in both directions, reject with private data, shutdown,
// and the private-data size limit.
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

TEST_F(CmTest, ShutdownByClient) {
    connected_pair();
    EXPECT_OK(fi_shutdown(a_->ep.get(), 0));
    CmEvent e = read_cm(b_->eq.get());
    ASSERT_GE(e.rc, 0) << rc_str(e.rc);
    EXPECT_EQ(e.event, static_cast<uint32_t>(FI_SHUTDOWN));
    EXPECT_EQ(e.fid, b_->ep.fid());
}

TEST_F(CmTest, ShutdownByServer) {
    connected_pair();
    EXPECT_OK(fi_shutdown(b_->ep.get(), 0));
    CmEvent e = read_cm(a_->eq.get());
    ASSERT_GE(e.rc, 0) << rc_str(e.rc);
    EXPECT_EQ(e.event, static_cast<uint32_t>(FI_SHUTDOWN));
    EXPECT_EQ(e.fid, a_->ep.fid());
}

}  // namespace

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Address vectors: open rules (FI_AV_TABLE too), synchronous inserts (with FI_SYNC_ERR),
// asynchronous inserts reported on an EQ, remove, lookup, straddr, insertsvc.
#include <cerrno>
#include <cstring>
#include <string>

#include "fixture.hpp"

using namespace usnict;

namespace {

class AvTest : public UsnicTest {
  protected:
    void SetUp() override {
        InfoPtr info = info_of(FI_EP_DGRAM);
        open_domain(info.get());
    }
    long open_av_rc(const fi_av_attr &attr) {
        fi_av_attr copy = attr;
        Fid<fid_av> av;
        return USNICT_OPEN(av, fi_av_open(domain(), &copy, OUT, nullptr));
    }
    // Good, unreachable (another interface), invalid (0.0.0.0:0), good.
    void mixed(sockaddr_in out[4]) {
        out[0] = make_sin(kLoopback, 5001);
        out[1] = make_sin(kUnreachableIp, 5002);
        out[2] = make_sin(0u, 0);
        out[3] = make_sin(kLoopback, 5003);
    }
};

TEST_F(AvTest, OpenRules) {
    fi_av_attr attr{};
    attr.type = static_cast<fi_av_type>(7);
    EXPECT_RC(-FI_EINVAL, open_av_rc(attr));
    attr = {};
    attr.type = FI_AV_MAP;
    attr.flags = FI_SYMMETRIC;
    EXPECT_RC(-FI_EINVAL, open_av_rc(attr));
    attr = {};
    attr.rx_ctx_bits = 2;
    EXPECT_RC(-FI_EINVAL, open_av_rc(attr));
    attr = {};
    attr.name = "shared-av";
    EXPECT_RC(-FI_ENOSYS, open_av_rc(attr));

    attr = {};
    attr.type = FI_AV_UNSPEC;
    Fid<fid_av> av;
    ASSERT_OK(USNICT_OPEN(av, fi_av_open(domain(), &attr, OUT, nullptr)));
    EXPECT_EQ(attr.type, FI_AV_MAP) << "FI_AV_UNSPEC becomes FI_AV_MAP";
}

// FI_AV_TABLE is open to those who ask for it by name (ofi_rxd opens its core's AV so):
// handles are the indexes 0, 1, 2... in insertion order, and lookups take them.
TEST_F(AvTest, TableHandlesAreIndexes) {
    fi_av_attr attr{};
    attr.type = FI_AV_TABLE;
    Fid<fid_av> av;
    ASSERT_OK(USNICT_OPEN(av, fi_av_open(domain(), &attr, OUT, nullptr)));
    EXPECT_EQ(attr.type, FI_AV_TABLE);
    const sockaddr_in addrs[3] = {make_sin(kLoopback, 6001), make_sin(kLoopback, 6002),
                                  make_sin(kLoopback, 6003)};
    ASSERT_RC(1, fi_av_insert(av.get(), &addrs[0], 1, nullptr, 0, nullptr)) << "no fi_addr array";
    fi_addr_t fa[2] = {FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL};
    ASSERT_RC(2, fi_av_insert(av.get(), &addrs[1], 2, fa, 0, nullptr));
    EXPECT_EQ(fa[0], 1u);
    EXPECT_EQ(fa[1], 2u);
    for (fi_addr_t i = 0; i < 3; i++) {
        sockaddr_in got{};
        size_t len = sizeof(got);
        ASSERT_OK(fi_av_lookup(av.get(), i, &got, &len));
        EXPECT_EQ(sin_str(got), sin_str(addrs[i]));
    }
}

TEST_F(AvTest, SyncInsertCountsSuccesses) {
    Fid<fid_av> av = open_av();
    sockaddr_in addrs[4];
    mixed(addrs);
    fi_addr_t fa[4] = {1, 2, 3, 4};
    ASSERT_RC(2, fi_av_insert(av.get(), addrs, 4, fa, 0, nullptr));
    EXPECT_NE(fa[0], FI_ADDR_NOTAVAIL);
    EXPECT_EQ(fa[1], FI_ADDR_NOTAVAIL);
    EXPECT_EQ(fa[2], FI_ADDR_NOTAVAIL);
    EXPECT_NE(fa[3], FI_ADDR_NOTAVAIL);
    EXPECT_NE(fa[0], fa[3]);
}

TEST_F(AvTest, SyncErrReportsEachAddress) {
    Fid<fid_av> av = open_av();
    sockaddr_in addrs[4];
    mixed(addrs);
    fi_addr_t fa[4];
    int errs[4] = {-1, -1, -1, -1};
    ASSERT_RC(2, fi_av_insert(av.get(), addrs, 4, fa, FI_SYNC_ERR, errs));
    EXPECT_EQ(errs[0], 0);
    EXPECT_EQ(errs[1], EHOSTUNREACH);
    EXPECT_EQ(errs[2], EINVAL);
    EXPECT_EQ(errs[3], 0);
}

TEST_F(AvTest, BadInsertFlags) {
    Fid<fid_av> av = open_av();
    sockaddr_in a = make_sin(kLoopback, 5001);
    fi_addr_t fa;
    EXPECT_RC(-FI_EBADFLAGS, fi_av_insert(av.get(), &a, 1, &fa, FI_COMPLETION, nullptr));
    EXPECT_RC(1, fi_av_insert(av.get(), &a, 1, &fa, FI_MORE, nullptr));
}

TEST_F(AvTest, AsyncInsertNeedsEq) {
    Fid<fid_av> av = open_av(FI_EVENT);
    sockaddr_in a = make_sin(kLoopback, 5001);
    fi_addr_t fa;
    EXPECT_RC(-FI_ENOEQ, fi_av_insert(av.get(), &a, 1, &fa, 0, nullptr));
}

TEST_F(AvTest, AsyncInsertEvents) {
    Fid<fid_eq> eq = open_eq();  // closed after the AV bound to it
    Fid<fid_av> av = open_av(FI_EVENT);
    ASSERT_OK(fi_av_bind(av.get(), eq.fid(), 0));
    sockaddr_in addrs[3] = {make_sin(kLoopback, 5001), make_sin(kUnreachableIp, 5002),
                            make_sin(kLoopback, 5003)};
    fi_addr_t fa[3] = {7, 7, 7};
    int ctx = 0;
    ASSERT_OK(fi_av_insert(av.get(), addrs, 3, fa, 0, &ctx));

    // First the error entry of the failed address, then one completion.
    CmEvent err = read_cm(eq.get());
    ASSERT_RC(-FI_EAVAIL, err.rc);
    EXPECT_EQ(err.err.fid, av.fid());
    EXPECT_EQ(err.err.context, &ctx);
    EXPECT_EQ(err.err.data, 1u) << "index of the failed address";
    EXPECT_EQ(err.err.err, EHOSTUNREACH);

    uint32_t ev = 0;
    fi_eq_entry done{};
    long n;
    Deadline d;
    while ((n = fi_eq_sread(eq.get(), &ev, &done, sizeof(done), 100, 0)) == -FI_EAGAIN &&
           !d.expired()) {
    }
    ASSERT_EQ(n, static_cast<long>(sizeof(done)));
    EXPECT_EQ(ev, static_cast<uint32_t>(FI_AV_COMPLETE));
    EXPECT_EQ(done.fid, av.fid());
    EXPECT_EQ(done.context, &ctx);
    EXPECT_EQ(done.data, 2u) << "number of successful inserts";
    EXPECT_NE(fa[0], FI_ADDR_NOTAVAIL);
    EXPECT_EQ(fa[1], FI_ADDR_NOTAVAIL);
    EXPECT_NE(fa[2], FI_ADDR_NOTAVAIL);
    EXPECT_RC(-FI_EAGAIN, fi_eq_read(eq.get(), &ev, &done, sizeof(done), 0));
}

TEST_F(AvTest, AsyncInsertOfNothing) {
    Fid<fid_eq> eq = open_eq();  // closed after the AV bound to it
    Fid<fid_av> av = open_av(FI_EVENT);
    ASSERT_OK(fi_av_bind(av.get(), eq.fid(), 0));
    int ctx = 0;
    ASSERT_OK(fi_av_insert(av.get(), nullptr, 0, nullptr, 0, &ctx));
    CmEvent done = read_cm(eq.get());
    ASSERT_EQ(done.rc, static_cast<long>(sizeof(fi_eq_entry)));
    EXPECT_EQ(done.event, static_cast<uint32_t>(FI_AV_COMPLETE));
}

TEST_F(AvTest, LookupCopiesTheAddress) {
    Fid<fid_av> av = open_av();
    const sockaddr_in a = make_sin(kLoopback, 5001);
    const fi_addr_t fa = av_insert(av.get(), a);
    sockaddr_in got{};
    size_t len = sizeof(got);
    ASSERT_OK(fi_av_lookup(av.get(), fa, &got, &len));
    EXPECT_EQ(len, sizeof(sockaddr_in));
    EXPECT_EQ(got.sin_family, AF_INET);
    EXPECT_EQ(ip_of(got), kLoopback);
    EXPECT_EQ(port_of(got), 5001);

    uint8_t small[16];
    std::memset(small, 0xcc, sizeof(small));
    len = 8;
    const int rc = fi_av_lookup(av.get(), fa, small, &len);
    EXPECT_TRUE(rc == 0 || rc == -FI_ETOOSMALL) << rc_str(rc);
    EXPECT_EQ(len, sizeof(sockaddr_in)) << "the full length is reported";
    EXPECT_EQ(std::memcmp(small, &a, 8), 0);
    EXPECT_EQ(small[8], 0xcc) << "wrote past the given length";

    len = sizeof(got);
    EXPECT_RC(-FI_EINVAL, fi_av_lookup(av.get(), FI_ADDR_NOTAVAIL, &got, &len));
}

TEST_F(AvTest, RemoveOverwritesHandles) {
    Fid<fid_av> av = open_av();
    sockaddr_in addrs[2] = {make_sin(kLoopback, 5001), make_sin(kLoopback, 5002)};
    fi_addr_t fa[2];
    ASSERT_RC(2, fi_av_insert(av.get(), addrs, 2, fa, 0, nullptr));
    ASSERT_OK(fi_av_remove(av.get(), fa, 2, 0));
    EXPECT_EQ(fa[0], FI_ADDR_NOTAVAIL);
    EXPECT_EQ(fa[1], FI_ADDR_NOTAVAIL);
}

TEST_F(AvTest, Straddr) {
    Fid<fid_av> av = open_av();
    const sockaddr_in a = make_sin(kLoopback, 4242);
    const std::string want = "fi_sockaddr_in://127.0.0.1:4242";
    char buf[64] = {};
    size_t len = sizeof(buf);
    const char *s = fi_av_straddr(av.get(), &a, buf, &len);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(std::string(s), want);
    EXPECT_EQ(len, want.size() + 1);

    char small[10];
    len = sizeof(small);
    s = fi_av_straddr(av.get(), &a, small, &len);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(len, want.size() + 1) << "the needed length is reported";
    EXPECT_EQ(std::string(small, 9), want.substr(0, 9));
}

TEST_F(AvTest, InsertService) {
    Fid<fid_av> av = open_av();
    fi_addr_t fa = FI_ADDR_NOTAVAIL;
    ASSERT_RC(1, fi_av_insertsvc(av.get(), "127.0.0.1", "4243", &fa, 0, nullptr));
    sockaddr_in got{};
    size_t len = sizeof(got);
    ASSERT_OK(fi_av_lookup(av.get(), fa, &got, &len));
    EXPECT_EQ(ip_of(got), kLoopback);
    EXPECT_EQ(port_of(got), 4243);
    EXPECT_RC(-FI_EINVAL, fi_av_insertsvc(av.get(), nullptr, "4243", &fa, 0, nullptr));
    EXPECT_RC(-FI_ENOSYS, fi_av_insertsym(av.get(), "127.0.0.1", 1, "4243", 1, &fa, 0, nullptr));
}

}  // namespace

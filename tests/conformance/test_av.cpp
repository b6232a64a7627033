// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Address vectors (spec §9 "Address vector", §2.1 straddr): TABLE and MAP,
// insert/lookup/remove, index reuse, growth, insertsvc, straddr, errors.
// Named shared AVs are exercised across processes in test_multiproc.cpp.
#include <unistd.h>

#include <cstring>
#include <set>

#include "fixture.hpp"

using namespace cxit;

namespace {

// Addresses of endpoints that do not exist; the AV must accept them without
// validation.
std::vector<uint8_t> fake(uint32_t i) {
    return encode_addr(0xABC00 + i, 1 + i % 500);
}

class AvTest : public CxiTest {
  protected:
    Fid<fid_av> open_av(fi_av_type type, size_t count = 0, uint64_t flags = 0) {
        fi_av_attr a{};
        a.type = type;
        a.count = count;
        a.flags = flags;
        Fid<fid_av> av;
        CXIT_CHECK(fi_av_open(domain("cxi0"), &a, av.out(), nullptr));
        return av;
    }
    static fi_addr_t insert1(fid_av *av, const std::vector<uint8_t> &addr) {
        fi_addr_t fa = FI_ADDR_NOTAVAIL;
        long rc = fi_av_insert(av, addr.data(), 1, &fa, 0, nullptr);
        if (rc != 1) CXIT_FAIL("fi_av_insert returned " + rc_str(rc));
        return fa;
    }
    static std::vector<uint8_t> lookup(fid_av *av, fi_addr_t fa) {
        std::vector<uint8_t> out(64);
        size_t len = out.size();
        CXIT_CHECK(fi_av_lookup(av, fa, out.data(), &len));
        out.resize(len);
        return out;
    }
};

TEST_F(AvTest, OpenTableMapAndUnspec) {
    for (fi_av_type t : {FI_AV_TABLE, FI_AV_MAP, FI_AV_UNSPEC}) {
        fi_av_attr a{};
        a.type = t;
        a.count = 16;
        Fid<fid_av> av;
        EXPECT_OK(CXIT_OPEN(av, fi_av_open(domain("cxi0"), &a, OUT, nullptr))) << "type " << t;
        if (av) {
            EXPECT_OK(av.close());
        }
    }
}

TEST_F(AvTest, OpenInvalidAttributes_EINVAL) {
    fid_domain *d = domain("cxi0");
    Fid<fid_av> av;
    EXPECT_RC(-FI_EINVAL, CXIT_OPEN(av, fi_av_open(d, nullptr, OUT, nullptr))) << "NULL attr";
    fi_av_attr a{};
    a.type = static_cast<fi_av_type>(99);
    EXPECT_RC(-FI_EINVAL, CXIT_OPEN(av, fi_av_open(d, &a, OUT, nullptr))) << "bad type";
    a.type = FI_AV_TABLE;
    a.flags = FI_EVENT;
    EXPECT_RC(-FI_EINVAL, CXIT_OPEN(av, fi_av_open(d, &a, OUT, nullptr))) << "FI_EVENT unsupported";
    a.flags = FI_READ;
    EXPECT_RC(-FI_EINVAL, CXIT_OPEN(av, fi_av_open(d, &a, OUT, nullptr))) << "FI_READ needs a name";
}

TEST_F(AvTest, OpenReadOnlyOfMissingNameFails) {
    fi_av_attr a{};
    a.type = FI_AV_TABLE;
    a.flags = FI_READ;
    const std::string name = "cxit_av_missing_" + std::to_string(getpid());
    a.name = name.c_str();
    Fid<fid_av> av;
    long rc = CXIT_OPEN(av, fi_av_open(domain("cxi0"), &a, OUT, nullptr));
    EXPECT_LT(rc, 0) << "FI_READ opens an AV another process created; none exists";
}

// A read-only opener of a shared FI_AV_MAP sees map_addr entries for addresses the
// creator inserts after the open (fabtests' fi_rdm_shared_av reads map_addr[0] then).
TEST_F(AvTest, SharedMapAddrCoversLaterInserts) {
    const std::string name = "cxit_av_map_" + std::to_string(getpid());
    fi_av_attr w{};
    w.type = FI_AV_MAP;
    w.name = name.c_str();
    Fid<fid_av> writer, reader;
    ASSERT_OK(CXIT_OPEN(writer, fi_av_open(domain("cxi0"), &w, OUT, nullptr)));
    fi_av_attr r{};
    r.type = FI_AV_MAP;
    r.name = name.c_str();
    r.flags = FI_READ;
    ASSERT_OK(CXIT_OPEN(reader, fi_av_open(domain("cxi0"), &r, OUT, nullptr)));
    ASSERT_NE(nullptr, r.map_addr) << "map_addr is set even before the first insert";
    EndpointPtr ep = make_ep("cxi0");
    fi_addr_t a = FI_ADDR_NOTAVAIL;
    ASSERT_EQ(1, fi_av_insert(writer.get(), ep->name().data(), 1, &a, 0, nullptr));
    EXPECT_EQ(a, static_cast<fi_addr_t *>(r.map_addr)[0]);
    uint8_t raw[8];
    size_t len = sizeof(raw);
    ASSERT_OK(fi_av_lookup(reader.get(), static_cast<fi_addr_t *>(r.map_addr)[0], raw, &len));
    ASSERT_EQ(ep->name().size(), len);
    EXPECT_EQ(0, std::memcmp(raw, ep->name().data(), len));
}

TEST_F(AvTest, BindControlAndOpenOpsUnsupported_ENOSYS) {
    Fid<fid_av> av = open_av(FI_AV_TABLE);
    fi_cq_attr ca{};
    ca.format = FI_CQ_FORMAT_TAGGED;
    Fid<fid_cq> cq;
    ASSERT_OK(fi_cq_open(domain("cxi0"), &ca, cq.out(), nullptr));
    EXPECT_RC(-FI_ENOSYS, fi_av_bind(av.get(), &cq->fid, 0));
    uint64_t flags = 0;
    EXPECT_RC(-FI_ENOSYS, fi_control(&av->fid, FI_GETOPSFLAG, &flags));
    void *ops = nullptr;
    EXPECT_RC(-FI_ENOSYS, fi_open_ops(&av->fid, "cxi_av_ops", 0, &ops, nullptr));
}

TEST_F(AvTest, TableInsertIsSequentialAndLookupRoundTrips) {
    Fid<fid_av> av = open_av(FI_AV_TABLE, 16);
    std::vector<uint8_t> all;
    for (uint32_t i = 0; i < 10; i++) {
        auto a = fake(i);
        all.insert(all.end(), a.begin(), a.end());
    }
    std::vector<fi_addr_t> fa(10, FI_ADDR_NOTAVAIL);
    ASSERT_EQ(10, fi_av_insert(av.get(), all.data(), 10, fa.data(), 0, nullptr));
    for (uint32_t i = 0; i < 10; i++) {
        EXPECT_EQ(i, fa[i]);
        EXPECT_EQ(fake(i), lookup(av.get(), fa[i])) << "index " << i;
    }
}

TEST_F(AvTest, TableRemovedIndexIsReused) {
    Fid<fid_av> av = open_av(FI_AV_TABLE);
    for (uint32_t i = 0; i < 6; i++)
        ASSERT_EQ(i, insert1(av.get(), fake(i)));
    fi_addr_t hole = 3;
    ASSERT_OK(fi_av_remove(av.get(), &hole, 1, 0));
    uint8_t buf[16];
    size_t len = sizeof(buf);
    EXPECT_RC(-FI_EINVAL, fi_av_lookup(av.get(), hole, buf, &len)) << "removed entry";
    EXPECT_EQ(3u, insert1(av.get(), fake(100))) << "lowest free index";
    EXPECT_EQ(fake(100), lookup(av.get(), 3));
    EXPECT_EQ(6u, insert1(av.get(), fake(101)));
    EXPECT_EQ(fake(5), lookup(av.get(), 5)) << "other entries untouched";
}

TEST_F(AvTest, TableGrowsBeyondAttrCount) {
    Fid<fid_av> av = open_av(FI_AV_TABLE, 4);
    for (uint32_t i = 0; i < 40; i++)
        ASSERT_EQ(i, insert1(av.get(), fake(i)));
    for (uint32_t i = 0; i < 40; i++)
        EXPECT_EQ(fake(i), lookup(av.get(), i));
}

TEST_F(AvTest, DuplicateInsertReturnsExistingEntry) {
    Fid<fid_av> av = open_av(FI_AV_TABLE);
    fi_addr_t a = insert1(av.get(), fake(1));
    insert1(av.get(), fake(2));
    EXPECT_EQ(a, insert1(av.get(), fake(1)));
}

TEST_F(AvTest, RemoveAllEntries) {
    Fid<fid_av> av = open_av(FI_AV_TABLE);
    std::vector<fi_addr_t> fa;
    for (uint32_t i = 0; i < 8; i++)
        fa.push_back(insert1(av.get(), fake(i)));
    ASSERT_OK(fi_av_remove(av.get(), fa.data(), fa.size(), 0));
    for (fi_addr_t x : fa) {
        uint8_t buf[16];
        size_t len = sizeof(buf);
        EXPECT_RC(-FI_EINVAL, fi_av_lookup(av.get(), x, buf, &len)) << "entry " << x;
    }
    EXPECT_EQ(0u, insert1(av.get(), fake(50))) << "table starts over at index 0";
}

TEST_F(AvTest, MapInsertLookupRemove) {
    Fid<fid_av> av = open_av(FI_AV_MAP);
    std::set<fi_addr_t> seen;
    std::vector<fi_addr_t> fa;
    for (uint32_t i = 0; i < 12; i++) {
        fa.push_back(insert1(av.get(), fake(i)));
        EXPECT_NE(FI_ADDR_NOTAVAIL, fa.back());
        seen.insert(fa.back());
    }
    EXPECT_EQ(12u, seen.size()) << "MAP fi_addrs are unique";
    for (uint32_t i = 0; i < 12; i++)
        EXPECT_EQ(fake(i), lookup(av.get(), fa[i]));
    EXPECT_OK(fi_av_remove(av.get(), fa.data(), fa.size(), 0));
}

TEST_F(AvTest, LookupBadIndex_EINVAL) {
    Fid<fid_av> av = open_av(FI_AV_TABLE);
    insert1(av.get(), fake(0));
    uint8_t buf[16];
    size_t len = sizeof(buf);
    EXPECT_RC(-FI_EINVAL, fi_av_lookup(av.get(), 1000, buf, &len));
}

TEST_F(AvTest, LookupShortBufferTruncatesAndReportsLength) {
    Fid<fid_av> av = open_av(FI_AV_TABLE);
    fi_addr_t fa = insert1(av.get(), fake(7));
    uint8_t buf[kAddrLen - 1] = {};
    size_t len = sizeof(buf);
    fi_av_lookup(av.get(), fa, buf, &len);
    EXPECT_EQ(kAddrLen, len);
    EXPECT_EQ(0, std::memcmp(buf, fake(7).data(), sizeof(buf)));
}

TEST_F(AvTest, InsertInvalidFlags_EINVAL) {
    Fid<fid_av> av = open_av(FI_AV_TABLE);
    auto a = fake(0);
    fi_addr_t fa;
    EXPECT_RC(-FI_EINVAL, fi_av_insert(av.get(), a.data(), 1, &fa, FI_PEEK, nullptr));
}

TEST_F(AvTest, InsertsvcParsesNicAndPid) {
    Fid<fid_av> av = open_av(FI_AV_TABLE);
    fi_addr_t fa = FI_ADDR_NOTAVAIL;
    ASSERT_EQ(1, fi_av_insertsvc(av.get(), "0x2a", "17", &fa, 0, nullptr));
    CxiAddr x = decode_addr(lookup(av.get(), fa).data());
    EXPECT_EQ(0x2au, x.nic);
    EXPECT_EQ(17u, x.pid);
    ASSERT_EQ(1, fi_av_insertsvc(av.get(), "99", "3", &fa, 0, nullptr));
    x = decode_addr(lookup(av.get(), fa).data());
    EXPECT_EQ(99u, x.nic);
    EXPECT_EQ(3u, x.pid);
}

TEST_F(AvTest, InsertsvcNullNodeOrService_EINVAL) {
    Fid<fid_av> av = open_av(FI_AV_TABLE);
    fi_addr_t fa;
    EXPECT_RC(-FI_EINVAL, fi_av_insertsvc(av.get(), nullptr, "3", &fa, 0, nullptr));
    EXPECT_RC(-FI_EINVAL, fi_av_insertsvc(av.get(), "0x2a", nullptr, &fa, 0, nullptr));
}

TEST_F(AvTest, StraddrFormat) {
    Fid<fid_av> av = open_av(FI_AV_TABLE);
    auto a = encode_addr(0x12345, 0x1a);
    uint32_t word;
    std::memcpy(&word, a.data(), sizeof(word));
    char expect[64];
    std::snprintf(expect, sizeof(expect), "fi_addr_cxi://0x%08x", word);
    char buf[64] = {};
    size_t len = sizeof(buf);
    const char *s = fi_av_straddr(av.get(), a.data(), buf, &len);
    ASSERT_EQ(buf, s);
    EXPECT_STREQ(expect, buf);
    EXPECT_EQ(std::strlen(expect) + 1, len);

    size_t zero = 0;
    EXPECT_EQ(nullptr, fi_av_straddr(av.get(), a.data(), nullptr, &zero));
    EXPECT_EQ(std::strlen(expect) + 1, zero) << "needed length reported";
}

TEST_F(AvTest, SymmetricAvOpensAndInserts) {
    Fid<fid_av> av = open_av(FI_AV_TABLE, 8, FI_SYMMETRIC);
    for (uint32_t i = 0; i < 4; i++)
        EXPECT_EQ(i, insert1(av.get(), fake(i)));
}

TEST_F(AvTest, EndpointNamesFromBothNicsInsertable) {
    EndpointPtr a = make_ep("cxi0");
    EndpointPtr b = make_ep("cxi1");
    fi_addr_t fb = a->insert(b->name());
    fi_addr_t fself = a->insert(a->name());
    EXPECT_NE(fb, fself);
    EXPECT_EQ(b->name(), lookup(a->av(), fb));
    EXPECT_EQ(a->name(), lookup(a->av(), fself));
}

}  // namespace

// The address form follows the application's API version: 4 bytes (PID and NIC, what
// applications built for libfabric before 1.20 expect: Mercury checks the length) or,
// from 1.20, the 8-byte struct cxip_addr. Either way a name from fi_getname inserts,
// looks up to the same bytes and carries traffic.
TEST(AddressForm, FollowsTheApplicationsApiVersion) {
    std::vector<std::pair<uint32_t, size_t>> forms{{FI_VERSION(1, 13), 4}};
    if (FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION) >= FI_VERSION(1, 20))
        forms.emplace_back(FI_VERSION(1, 20), 8);
    for (auto [version, len] : forms) {
        SCOPED_TRACE(testing::Message() << "api " << FI_MAJOR(version) << "." << FI_MINOR(version));
        InfoPtr hints(fi_allocinfo());
        hints->fabric_attr->prov_name = strdup("cxi");
        hints->domain_attr->name = strdup("cxi0");
        hints->caps = FI_MSG;
        fi_info *raw = nullptr;
        ASSERT_OK(fi_getinfo(version, nullptr, nullptr, 0, hints.get(), &raw));
        InfoPtr info(raw);
        EXPECT_EQ(len, info->src_addrlen);
        Fid<fid_fabric> fabric;
        Fid<fid_domain> domain;
        Fid<fid_av> av;
        Fid<fid_cq> cq;
        Fid<fid_ep> ep;
        ASSERT_OK(CXIT_OPEN(fabric, fi_fabric(info->fabric_attr, OUT, nullptr)));
        ASSERT_OK(CXIT_OPEN(domain, fi_domain(fabric.get(), info.get(), OUT, nullptr)));
        fi_av_attr aa{};
        aa.type = FI_AV_TABLE;
        ASSERT_OK(CXIT_OPEN(av, fi_av_open(domain.get(), &aa, OUT, nullptr)));
        fi_cq_attr ca{};
        ca.format = FI_CQ_FORMAT_MSG;
        ASSERT_OK(CXIT_OPEN(cq, fi_cq_open(domain.get(), &ca, OUT, nullptr)));
        ASSERT_OK(CXIT_OPEN(ep, fi_endpoint(domain.get(), info.get(), OUT, nullptr)));
        ASSERT_OK(fi_ep_bind(ep.get(), &av->fid, 0));
        ASSERT_OK(fi_ep_bind(ep.get(), &cq->fid, FI_TRANSMIT | FI_RECV));
        ASSERT_OK(fi_enable(ep.get()));
        std::vector<uint8_t> names(2 * len);
        size_t got = len;
        ASSERT_OK(fi_getname(&ep->fid, names.data(), &got));
        ASSERT_EQ(len, got);
        auto other = encode_addr(0xABCDE, 42);
        std::memcpy(names.data() + len, other.data(), len);
        fi_addr_t fa[2];
        ASSERT_EQ(2, fi_av_insert(av.get(), names.data(), 2, fa, 0, nullptr));
        for (int i = 0; i < 2; i++) {
            std::vector<uint8_t> back(16, 0xEE);
            size_t blen = back.size();
            ASSERT_OK(fi_av_lookup(av.get(), fa[i], back.data(), &blen));
            ASSERT_EQ(len, blen);
            EXPECT_EQ(0, std::memcmp(back.data(), names.data() + i * len, len)) << "entry " << i;
        }
        EXPECT_EQ(42u, decode_addr(names.data() + len).pid);
        char buf[64];
        size_t slen = sizeof(buf);
        EXPECT_NE(nullptr, fi_av_straddr(av.get(), names.data(), buf, &slen));
        // A message to itself through the compact or full entry.
        char in[8] = {}, out[8] = "softnic";
        ASSERT_OK(fi_recv(ep.get(), in, sizeof(in), nullptr, FI_ADDR_UNSPEC, nullptr));
        ASSERT_OK(fi_send(ep.get(), out, sizeof(out), nullptr, fa[0], nullptr));
        int done = 0;
        for (int spins = 0; done < 2 && spins < 1000000; spins++) {
            fi_cq_msg_entry e;
            long n = fi_cq_read(cq.get(), &e, 1);
            if (n == 1) done++;
            ASSERT_TRUE(n == 1 || n == -FI_EAGAIN) << rc_str(n);
        }
        ASSERT_EQ(2, done);
        EXPECT_STREQ("softnic", in);
    }
}

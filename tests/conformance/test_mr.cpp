// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Memory registration with FI_MR_ENDPOINT (spec §6.1; RMA itself: test_rma.cpp):
// register, bind to an enabled endpoint, enable, key rules for provider keys and
// client keys, close ordering.
#include <set>

#include "fixture.hpp"

using namespace cxit;

namespace {

constexpr uint64_t kRemote = FI_REMOTE_READ | FI_REMOTE_WRITE;

class MrTest : public CxiTest {
  protected:
    void SetUp() override {
        opts_.caps = FI_MSG | FI_RMA;  // remote keys and FI_MR_ENDPOINT come with RMA
        buf_.resize(1 << 16);
    }
    EndpointPtr ep(bool prov_key = true) {
        EpOptions o = opts_;
        o.prov_key = prov_key;
        return make_ep("cxi0", o);
    }
    fid_domain *dom(bool prov_key = true) {
        EpOptions o = opts_;
        o.prov_key = prov_key;
        return domain("cxi0", o);
    }
    // fi_mr_reg + fi_mr_bind + fi_mr_enable; returns the first failing rc.
    long reg_bind_enable(fid_domain *d, Endpoint &e, Fid<fid_mr> &mr, uint64_t key,
                         uint64_t access = kRemote, size_t len = 4096) {
        long rc = CXIT_OPEN(mr, fi_mr_reg(d, buf_.data(), len, access, 0, key, 0, OUT, nullptr));
        if (rc) return rc;
        rc = fi_mr_bind(mr.get(), &e.ep()->fid, 0);
        if (rc) return rc;
        return fi_mr_enable(mr.get());
    }
    EpOptions opts_;
    std::vector<uint8_t> buf_;
};

TEST_F(MrTest, ProviderKeyAvailableOnlyAfterBindAndEnable) {
    EndpointPtr e = ep();
    Fid<fid_mr> mr;
    ASSERT_OK(fi_mr_reg(dom(), buf_.data(), 4096, kRemote, 0, 0, 0, mr.out(), nullptr));
    EXPECT_EQ(FI_KEY_NOTAVAIL, fi_mr_key(mr.get())) << "no key before bind + enable";
    ASSERT_OK(fi_mr_bind(mr.get(), &e->ep()->fid, 0));
    ASSERT_OK(fi_mr_enable(mr.get()));
    const uint64_t key = fi_mr_key(mr.get());
    EXPECT_NE(FI_KEY_NOTAVAIL, key);
    EXPECT_EQ(1u, key >> 63) << std::hex << "provider keys have bit 63 set: 0x" << key;
    EXPECT_OK(mr.close());
}

TEST_F(MrTest, ProviderKeysAreNeverReused) {
    EndpointPtr e = ep();
    std::set<uint64_t> keys;
    for (int i = 0; i < 40; i++) {
        Fid<fid_mr> mr;
        ASSERT_OK(reg_bind_enable(dom(), *e, mr, 0)) << "iteration " << i;
        keys.insert(fi_mr_key(mr.get()));
        ASSERT_OK(mr.close());
    }
    EXPECT_EQ(40u, keys.size());
}

TEST_F(MrTest, ManyLiveProviderKeysAreDistinct) {
    EndpointPtr e = ep();
    std::vector<Fid<fid_mr>> mrs(120);
    std::set<uint64_t> keys;
    for (auto &mr : mrs) {
        ASSERT_OK(reg_bind_enable(dom(), *e, mr, 0, kRemote, 64));
        keys.insert(fi_mr_key(mr.get()));
    }
    EXPECT_EQ(mrs.size(), keys.size());
}

// Provider-key layout (spec §6.1): the first 92 MR ids are optimized (bit 61); an id
// freed by fi_close is optimized again for the next MR, under a new key; an MR with
// FI_RMA_EVENT is never optimized and says so (bit 60).
TEST_F(MrTest, FirstNinetyTwoProviderKeysAreOptimized) {
    constexpr uint64_t kOptimized = 1ULL << 61, kEvents = 1ULL << 60;
    opts_.caps = FI_MSG | FI_RMA | FI_RMA_EVENT;
    EndpointPtr e = ep();
    std::vector<Fid<fid_mr>> mrs(100);
    for (size_t i = 0; i < mrs.size(); i++) {
        ASSERT_OK(reg_bind_enable(dom(), *e, mrs[i], 0, kRemote, 64));
        uint64_t key = fi_mr_key(mrs[i].get());
        EXPECT_EQ(i < 92, (key & kOptimized) != 0) << "MR " << i << std::hex << " key 0x" << key;
        EXPECT_EQ(0u, key & kEvents);
    }
    const uint64_t old = fi_mr_key(mrs[10].get());
    ASSERT_OK(mrs[10].close());
    ASSERT_OK(reg_bind_enable(dom(), *e, mrs[10], 0, kRemote, 64));
    const uint64_t fresh = fi_mr_key(mrs[10].get());
    EXPECT_NE(old, fresh) << "keys are never reused";
    EXPECT_NE(0u, fresh & kOptimized) << "the freed optimized id is used again";
    ASSERT_OK(mrs[10].close());
    Fid<fid_mr> ev;
    ASSERT_OK(CXIT_OPEN(
        ev, fi_mr_reg(dom(), buf_.data(), 64, kRemote, 0, 0, FI_RMA_EVENT, OUT, nullptr)));
    ASSERT_OK(fi_mr_bind(ev.get(), &e->ep()->fid, 0));
    ASSERT_OK(fi_mr_enable(ev.get()));
    EXPECT_EQ(kEvents, fi_mr_key(ev.get()) & (kEvents | kOptimized)) << "events, not optimized";
}

TEST_F(MrTest, EnableWithoutBind_EINVAL) {
    Fid<fid_mr> mr;
    ASSERT_OK(fi_mr_reg(dom(), buf_.data(), 4096, kRemote, 0, 0, 0, mr.out(), nullptr));
    EXPECT_RC(-FI_EINVAL, fi_mr_enable(mr.get()));
}

TEST_F(MrTest, BindToDisabledOrSecondEndpoint_EINVAL) {
    EpOptions o = opts_;
    o.enable = false;
    EndpointPtr disabled = make_ep("cxi0", o);
    EndpointPtr e1 = ep(), e2 = ep();
    Fid<fid_mr> mr;  // declared after the EPs: closed before them
    ASSERT_OK(fi_mr_reg(dom(), buf_.data(), 4096, kRemote, 0, 0, 0, mr.out(), nullptr));
    EXPECT_RC(-FI_EINVAL, fi_mr_bind(mr.get(), &disabled->ep()->fid, 0)) << "EP not enabled";
    ASSERT_OK(fi_mr_bind(mr.get(), &e1->ep()->fid, 0));
    EXPECT_RC(-FI_EINVAL, fi_mr_bind(mr.get(), &e2->ep()->fid, 0)) << "already bound";
}

// An MR registered with FI_RMA_EVENT counts remote events: its endpoint needs the cap.
TEST_F(MrTest, RmaEventMrNeedsTheCapOnTheEndpoint_EINVAL) {
    EndpointPtr plain = ep();
    opts_.caps = FI_MSG | FI_RMA | FI_RMA_EVENT;
    EndpointPtr evented = ep();
    Fid<fid_mr> mr;
    ASSERT_OK(fi_mr_reg(dom(), buf_.data(), 4096, kRemote, 0, 0, FI_RMA_EVENT, mr.out(), nullptr));
    EXPECT_RC(-FI_EINVAL, fi_mr_bind(mr.get(), &plain->ep()->fid, 0));
    EXPECT_OK(fi_mr_bind(mr.get(), &evented->ep()->fid, 0));
    EXPECT_OK(fi_mr_enable(mr.get()));
}

TEST_F(MrTest, IovCountRules) {
    iovec iov[2] = {{buf_.data(), 100}, {buf_.data() + 200, 100}};
    Fid<fid_mr> mr;
    EXPECT_RC(-FI_ENOSYS, CXIT_OPEN(mr, fi_mr_regv(dom(), iov, 2, kRemote, 0, 0, 0, OUT, nullptr)));
    EXPECT_RC(-FI_EINVAL, CXIT_OPEN(mr, fi_mr_regv(dom(), iov, 0, kRemote, 0, 0, 0, OUT, nullptr)));
    EXPECT_OK(CXIT_OPEN(mr, fi_mr_regv(dom(), iov, 1, kRemote, 0, 0, 0, OUT, nullptr)));
}

TEST_F(MrTest, DirectedRecvFlag_EINVAL) {
    Fid<fid_mr> mr;
    EXPECT_RC(-FI_EINVAL, CXIT_OPEN(mr, fi_mr_reg(dom(), buf_.data(), 4096, kRemote, 0, 0,
                                                  FI_DIRECTED_RECV, OUT, nullptr)));
}

TEST_F(MrTest, ZeroLengthRegionGetsAKey) {
    EndpointPtr e = ep();
    Fid<fid_mr> mr;
    ASSERT_OK(reg_bind_enable(dom(), *e, mr, 0, kRemote, 0));
    EXPECT_NE(FI_KEY_NOTAVAIL, fi_mr_key(mr.get()));
}

TEST_F(MrTest, LocalOnlyRegionHasNoRemoteKey) {
    EndpointPtr e = ep();
    Fid<fid_mr> mr;
    ASSERT_OK(reg_bind_enable(dom(), *e, mr, 0, FI_SEND | FI_RECV));
    EXPECT_EQ(FI_KEY_NOTAVAIL, fi_mr_key(mr.get()));
}

TEST_F(MrTest, RegattrWithOneIov) {
    EndpointPtr e = ep();
    iovec iov{buf_.data(), 8192};
    fi_mr_attr a{};
    a.mr_iov = &iov;
    a.iov_count = 1;
    a.access = kRemote;
    Fid<fid_mr> mr;
    ASSERT_OK(fi_mr_regattr(dom(), &a, 0, mr.out()));
    ASSERT_OK(fi_mr_bind(mr.get(), &e->ep()->fid, 0));
    ASSERT_OK(fi_mr_enable(mr.get()));
    EXPECT_NE(FI_KEY_NOTAVAIL, fi_mr_key(mr.get()));
}

TEST_F(MrTest, EndpointCloseWithBoundMr_EBUSY) {
    EndpointPtr e = ep();
    Fid<fid_mr> mr;
    ASSERT_OK(reg_bind_enable(dom(), *e, mr, 0));
    EXPECT_RC(-FI_EBUSY, e->close_ep());
    EXPECT_OK(mr.close());
    EXPECT_OK(e->close_ep());
}

TEST_F(MrTest, ClientKeyIsTheRequestedKey) {
    EndpointPtr e = ep(false);
    ASSERT_EQ(4u, e->info()->domain_attr->mr_key_size);
    Fid<fid_mr> mr;
    ASSERT_OK(reg_bind_enable(dom(false), *e, mr, 0x1234));
    EXPECT_EQ(0x1234u, fi_mr_key(mr.get()));
}

TEST_F(MrTest, ClientKeysZeroTo199AllUsable) {
    EndpointPtr e = ep(false);
    std::vector<Fid<fid_mr>> mrs(200);
    for (uint64_t k = 0; k < mrs.size(); k++) {
        ASSERT_OK(reg_bind_enable(dom(false), *e, mrs[k], k, kRemote, 64)) << "key " << k;
        EXPECT_EQ(k, fi_mr_key(mrs[k].get()));
    }
}

TEST_F(MrTest, ClientKeyAbove32Bits_EKEYREJECTED) {
    Fid<fid_mr> mr;
    EXPECT_RC(-FI_EKEYREJECTED, CXIT_OPEN(mr, fi_mr_reg(dom(false), buf_.data(), 64, kRemote, 0,
                                                        1ULL << 32, 0, OUT, nullptr)));
}

TEST_F(MrTest, DuplicateRemoteClientKey_ENOKEY) {
    EndpointPtr e = ep(false);
    Fid<fid_mr> first, second;
    ASSERT_OK(reg_bind_enable(dom(false), *e, first, 500));
    EXPECT_RC(-FI_ENOKEY, reg_bind_enable(dom(false), *e, second, 500))
        << "a remote client key is unique in its domain";
    Fid<fid_mr> local1, local2;
    EXPECT_OK(reg_bind_enable(dom(false), *e, local1, 600, FI_SEND));
    EXPECT_OK(reg_bind_enable(dom(false), *e, local2, 600, FI_SEND))
        << "local-only MRs may share a client key";
}

TEST_F(MrTest, ClientKeyReusableAfterClose) {
    EndpointPtr e = ep(false);
    for (int i = 0; i < 3; i++) {
        Fid<fid_mr> mr;
        ASSERT_OK(reg_bind_enable(dom(false), *e, mr, 777)) << "round " << i;
        ASSERT_OK(mr.close());
    }
}

}  // namespace

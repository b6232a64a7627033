// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Authorization keys, VNIs and CXI services (spec §3): the rules for keys in hints,
// domains and endpoints; the default key from the SLINGSHOT_* variables and the
// service scan; VNI isolation over both transports; the limits of a service; and the
// libcxi service calls. Tests that change services need root (as on real nodes) and
// use a private registry (SOFTNIC_CXI_SERVICES).
#include <libcxi/libcxi.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "fixture.hpp"

namespace cxit {
namespace {

constexpr unsigned kVniDropped = 2525;  // softnic's counter of packets of another VNI

cxi_auth_key key(uint32_t svc, uint16_t vni) {
    cxi_auth_key k{};
    k.svc_id = svc;
    k.vni = vni;
    return k;
}

// The fields of a returned key (its padding bytes carry nothing).
void expect_key(const cxi_auth_key &want, const uint8_t *got) {
    cxi_auth_key k;
    memcpy(&k, got, sizeof(k));
    EXPECT_EQ(want.svc_id, k.svc_id);
    EXPECT_EQ(want.vni, k.vni);
}

// A service descriptor with a list of VNIs.
cxi_svc_desc desc_with_vnis(std::initializer_list<uint16_t> vnis) {
    cxi_svc_desc d{};
    d.restricted_vnis = 1;
    for (uint16_t v : vnis)
        d.vnis[d.num_vld_vnis++] = v;
    return d;
}

class AuthKeyTest : public CxiTest {
  protected:
    void SetUp() override {
        if (geteuid() != 0) return;  // the default registry; service changes are skipped
        char t[] = "/tmp/softnic-svc-XXXXXX";
        ASSERT_NE(nullptr, mkdtemp(t));
        dir_ = t;
        ASSERT_EQ(0, chmod(t, 0755));
        setenv("SOFTNIC_CXI_SERVICES", t, 1);
        for (unsigned i = 0; i < 2; i++)
            ASSERT_EQ(0, cxil_open_device(i, &dev_[i]));
    }
    void TearDown() override {
        for (const char *v : {"SLINGSHOT_VNIS", "SLINGSHOT_DEVICES", "SLINGSHOT_SVC_IDS"})
            unsetenv(v);
        for (cxil_dev *d : dev_)
            if (d) cxil_close_device(d);
        if (dir_.empty()) return;
        unsetenv("SOFTNIC_CXI_SERVICES");
        std::string cmd = "rm -rf '" + dir_ + "'";
        EXPECT_EQ(0, system(cmd.c_str()));
    }
    bool root() const { return !dir_.empty(); }
    // A new service on cxi`dev`; its id.
    unsigned create(cxi_svc_desc d, unsigned dev = 0) {
        int id = cxil_alloc_svc(dev_[dev], &d, nullptr);
        EXPECT_GT(id, 1) << strerror(-id);
        return unsigned(id);
    }
    // fi_getinfo for `domain` with keys in the domain and/or endpoint attributes.
    long getinfo(const char *domain, const void *dk, size_t dsize, const void *ek, size_t esize,
                 InfoPtr *out = nullptr) {
        InfoPtr h = make_hints(EpOptions{}, domain);
        auto put = [](uint8_t *&dst, size_t &size, const void *k, size_t s) {
            if (k) {
                dst = static_cast<uint8_t *>(calloc(1, 16));
                memcpy(dst, k, sizeof(cxi_auth_key));  // (the size claimed may differ)
            }
            size = s;
        };
        put(h->domain_attr->auth_key, h->domain_attr->auth_key_size, dk, dsize);
        put(h->ep_attr->auth_key, h->ep_attr->auth_key_size, ek, esize);
        fi_info *i = nullptr;
        long rc = fi_getinfo(kApiVersion, nullptr, nullptr, 0, h.get(), &i);
        if (out)
            out->reset(i);
        else
            fi_freeinfo(i);
        return rc;
    }
    // fi_domain on `domain` with this domain key (none: the default).
    long open_domain(const char *domain, const cxi_auth_key *k, Fid<fid_domain> &d) {
        InfoPtr info = get_info(EpOptions{}, domain);
        if (k) {
            info->domain_attr->auth_key = static_cast<uint8_t *>(malloc(sizeof(*k)));
            memcpy(info->domain_attr->auth_key, k, sizeof(*k));
            info->domain_attr->auth_key_size = sizeof(*k);
        }
        return fi_domain(fabric(), info.get(), d.out(), nullptr);
    }
    const cxip_nic_attr &nic_attr(const char *domain, InfoPtr &keep) {
        keep = get_info(EpOptions{}, domain);
        return *static_cast<const cxip_nic_attr *>(keep->nic->prov_attr);
    }
    std::string dir_;
    cxil_dev *dev_[2] = {nullptr, nullptr};
};

TEST_F(AuthKeyTest, HintKeysMustBeACxiAuthKey) {
    cxi_auth_key k = key(1, 1);
    EXPECT_RC(-FI_ENODATA, getinfo("cxi0", &k, 4, nullptr, 0));
    EXPECT_RC(-FI_ENODATA, getinfo("cxi0", &k, 0, nullptr, 0)) << "a key without its size";
    EXPECT_RC(-FI_ENODATA, getinfo("cxi0", nullptr, 8, nullptr, 0)) << "a size without a key";
    EXPECT_RC(-FI_ENODATA, getinfo("cxi0", nullptr, 0, &k, 16));
}

TEST_F(AuthKeyTest, DefaultServiceKeysAreAcceptedAndReturned) {
    for (uint16_t vni : {1, 10}) {
        cxi_auth_key k = key(1, vni);
        InfoPtr out;
        ASSERT_RC(0, getinfo("cxi0", &k, sizeof(k), nullptr, 0, &out));
        ASSERT_EQ(sizeof(k), out->domain_attr->auth_key_size);
        expect_key(k, out->domain_attr->auth_key);
        Fid<fid_domain> d;
        EXPECT_RC(0, open_domain("cxi0", &k, d));
    }
    InfoPtr plain = get_info(EpOptions{}, "cxi0");
    EXPECT_EQ(nullptr, plain->domain_attr->auth_key) << "no key unless the hints gave one";
    EXPECT_EQ(0u, plain->domain_attr->auth_key_size);
}

TEST_F(AuthKeyTest, UnknownServicesAndForeignVnisAreRefused) {
    cxi_auth_key bad_svc = key(99, 1), bad_vni = key(1, 5);
    EXPECT_RC(-FI_ENODATA, getinfo("cxi0", &bad_svc, sizeof(bad_svc), nullptr, 0));
    EXPECT_RC(-FI_ENODATA, getinfo("cxi0", &bad_vni, sizeof(bad_vni), nullptr, 0));
    EXPECT_RC(-FI_ENODATA, getinfo("cxi0", nullptr, 0, &bad_vni, sizeof(bad_vni)));
    Fid<fid_domain> d1, d2;
    EXPECT_RC(-FI_EINVAL, open_domain("cxi0", &bad_svc, d1));
    EXPECT_RC(-FI_EINVAL, open_domain("cxi0", &bad_vni, d2));
}

TEST_F(AuthKeyTest, AnEndpointKeyAloneServesTheDomain) {
    cxi_auth_key k = key(1, 10);
    InfoPtr out;
    ASSERT_RC(0, getinfo("cxi0", nullptr, 0, &k, sizeof(k), &out));
    ASSERT_EQ(sizeof(k), out->domain_attr->auth_key_size);
    expect_key(k, out->domain_attr->auth_key);
    ASSERT_EQ(sizeof(k), out->ep_attr->auth_key_size);
}

TEST_F(AuthKeyTest, EndpointKeysFollowTheDomainService) {
    fid_domain *d = domain("cxi0");  // the default key: service 1, VNI 1
    auto try_ep = [&](const cxi_auth_key &k) {
        InfoPtr info = get_info(EpOptions{}, "cxi0");
        info->ep_attr->auth_key = static_cast<uint8_t *>(malloc(sizeof(k)));
        memcpy(info->ep_attr->auth_key, &k, sizeof(k));
        info->ep_attr->auth_key_size = sizeof(k);
        Fid<fid_ep> ep;
        return fi_endpoint(d, info.get(), ep.out(), nullptr);
    };
    EXPECT_RC(-FI_EINVAL, try_ep(key(2, 1))) << "another service";
    EXPECT_RC(-FI_EINVAL, try_ep(key(1, 5))) << "a VNI the service does not allow";
    EXPECT_RC(0, try_ep(key(1, 10))) << "another VNI of the same service";
}

TEST_F(AuthKeyTest, NicAttributesNameTheDefaultKey) {
    InfoPtr keep;
    const cxip_nic_attr &a = nic_attr("cxi0", keep);
    EXPECT_EQ(1u, a.default_rgroup_id);
    EXPECT_EQ(1u, a.default_vni) << "the first VNI of the default service";
}

TEST_F(AuthKeyTest, SlingshotVariablesChooseTheKeyPerDevice) {
    setenv("SLINGSHOT_VNIS", "10,20", 1);
    setenv("SLINGSHOT_DEVICES", "cxi1,cxi0", 1);
    setenv("SLINGSHOT_SVC_IDS", "1,3", 1);
    InfoPtr k0, k1;
    EXPECT_EQ(3u, nic_attr("cxi0", k0).default_rgroup_id);
    EXPECT_EQ(10u, nic_attr("cxi0", k0).default_vni) << "only the first VNI is used";
    EXPECT_EQ(1u, nic_attr("cxi1", k1).default_rgroup_id);
    EXPECT_EQ(10u, nic_attr("cxi1", k1).default_vni);
    Fid<fid_domain> ok, bad, user;
    EXPECT_RC(0, open_domain("cxi1", nullptr, ok));
    EXPECT_RC(-FI_EINVAL, open_domain("cxi0", nullptr, bad)) << "service 3 does not exist";
    cxi_auth_key k = key(1, 1);
    EXPECT_RC(0, open_domain("cxi0", &k, user)) << "the user's key wins";
    setenv("SLINGSHOT_DEVICES", "cxi7", 1);  // this device is not listed: scan services
    EXPECT_EQ(1u, nic_attr("cxi0", k0).default_rgroup_id);
    EXPECT_EQ(1u, nic_attr("cxi0", k0).default_vni);
}

TEST_F(AuthKeyTest, ServiceScanPrefersUidThenGidThenOpen) {
    if (!root()) GTEST_SKIP() << "creating services needs root";
    cxi_svc_desc g = desc_with_vnis({100});
    g.restricted_members = 1;
    g.members[0].type = CXI_SVC_MEMBER_GID;
    g.members[0].svc_member.gid = getegid();
    cxi_svc_desc u = desc_with_vnis({200});
    u.restricted_members = 1;
    u.members[0].type = CXI_SVC_MEMBER_UID;
    u.members[0].svc_member.uid = geteuid();
    unsigned uid_svc = create(u), gid_svc = create(g);  // the gid one has the higher id
    InfoPtr keep;
    EXPECT_EQ(uid_svc, nic_attr("cxi0", keep).default_rgroup_id);
    EXPECT_EQ(200u, nic_attr("cxi0", keep).default_vni);
    ASSERT_EQ(0, cxil_destroy_svc(dev_[0], uid_svc));
    EXPECT_EQ(gid_svc, nic_attr("cxi0", keep).default_rgroup_id);
    EXPECT_EQ(100u, nic_attr("cxi0", keep).default_vni);
    ASSERT_EQ(0, cxil_destroy_svc(dev_[0], gid_svc));
    EXPECT_EQ(1u, nic_attr("cxi0", keep).default_rgroup_id);
}

TEST_F(AuthKeyTest, WithoutAnEnabledServiceDomainsFail) {
    if (!root()) GTEST_SKIP() << "disabling services needs root";
    ASSERT_EQ(0, cxil_svc_enable(dev_[0], 1, false));
    InfoPtr keep;
    EXPECT_EQ(0u, nic_attr("cxi0", keep).default_rgroup_id) << "getinfo still answers";
    Fid<fid_domain> d;
    EXPECT_RC(-FI_ENOSYS, open_domain("cxi0", nullptr, d));
    cxi_auth_key k = key(1, 1);
    EXPECT_RC(-FI_EINVAL, open_domain("cxi0", &k, d)) << "a disabled service";
}

TEST_F(AuthKeyTest, NonMembersAreRefused) {
    if (!root()) GTEST_SKIP() << "creating services needs root";
    cxi_svc_desc d = desc_with_vnis({300});
    d.restricted_members = 1;
    d.members[0].type = CXI_SVC_MEMBER_UID;
    d.members[0].svc_member.uid = 4242;
    cxi_auth_key k = key(create(d), 300);
    EXPECT_RC(-FI_ENODATA, getinfo("cxi0", &k, sizeof(k), nullptr, 0));
    Fid<fid_domain> dom;
    EXPECT_RC(-FI_EPERM, open_domain("cxi0", &k, dom));
}

TEST_F(AuthKeyTest, RangeServicesWaitForTheirRange) {
    if (!root()) GTEST_SKIP() << "creating services needs root";
    cxi_svc_desc d{};  // no VNI list: a range comes later, and the service starts disabled
    unsigned id = create(d);
    EXPECT_EQ(-EINVAL, cxil_svc_set_vni_range(dev_[0], id, 64, 100)) << "not a power of two";
    EXPECT_EQ(-EINVAL, cxil_svc_set_vni_range(dev_[0], id, 65, 128)) << "not aligned";
    ASSERT_EQ(0, cxil_svc_set_vni_range(dev_[0], id, 64, 127));
    cxi_auth_key in = key(id, 127), out = key(id, 128);
    EXPECT_RC(-FI_ENODATA, getinfo("cxi0", &in, sizeof(in), nullptr, 0)) << "still disabled";
    ASSERT_EQ(0, cxil_svc_enable(dev_[0], id, true));
    EXPECT_RC(0, getinfo("cxi0", &in, sizeof(in), nullptr, 0));
    EXPECT_RC(-FI_ENODATA, getinfo("cxi0", &out, sizeof(out), nullptr, 0));
}

TEST_F(AuthKeyTest, LimitsRefuseTheNextResource) {
    if (!root()) GTEST_SKIP() << "creating services needs root";
    cxi_svc_desc d = desc_with_vnis({400});
    d.resource_limits = 1;
    for (int t = 0; t < CXI_RSRC_TYPE_MAX; t++)
        d.limits.type[t].max = 16;
    d.limits.acs.max = 1;
    d.limits.eqs.max = 2;
    d.limits.cts.max = 1;
    d.limits.txqs.max = 1;
    unsigned id = create(d);
    cxi_auth_key k = key(id, 400);
    Fid<fid_domain> dom, second;
    ASSERT_RC(0, open_domain("cxi0", &k, dom));
    EXPECT_RC(-FI_ENOSPC, open_domain("cxi0", &k, second)) << "one address context";
    fi_cq_attr ca{};
    ca.format = FI_CQ_FORMAT_TAGGED;
    Fid<fid_cq> cq1, cq2, cq3;
    ASSERT_RC(0, fi_cq_open(dom.get(), &ca, cq1.out(), nullptr));
    ASSERT_RC(0, fi_cq_open(dom.get(), &ca, cq2.out(), nullptr));
    EXPECT_RC(-FI_ENOSPC, fi_cq_open(dom.get(), &ca, cq3.out(), nullptr));
    cq2.reset();
    EXPECT_RC(0, fi_cq_open(dom.get(), &ca, cq3.out(), nullptr)) << "a closed CQ is given back";
    fi_cntr_attr na{};
    na.events = FI_CNTR_EVENTS_COMP;
    Fid<fid_cntr> c1, c2;
    ASSERT_RC(0, fi_cntr_open(dom.get(), &na, c1.out(), nullptr));
    EXPECT_RC(-FI_ENOSPC, fi_cntr_open(dom.get(), &na, c2.out(), nullptr));
    InfoPtr info = get_info(EpOptions{}, "cxi0");
    Fid<fid_ep> ep1, ep2;
    ASSERT_RC(0, fi_endpoint(dom.get(), info.get(), ep1.out(), nullptr));
    EXPECT_RC(-FI_ENOSPC, fi_endpoint(dom.get(), info.get(), ep2.out(), nullptr));
    cxi_rsrc_use use{};
    ASSERT_EQ(0, cxil_get_svc_rsrc_use(dev_[0], id, &use));
    EXPECT_EQ(1u, use.in_use[CXI_RSRC_TYPE_AC]);
    EXPECT_EQ(2u, use.in_use[CXI_RSRC_TYPE_EQ]);
    EXPECT_EQ(1u, use.in_use[CXI_RSRC_TYPE_CT]);
    EXPECT_EQ(1u, use.in_use[CXI_RSRC_TYPE_TXQ]);
    EXPECT_EQ(-EBUSY, cxil_destroy_svc(dev_[0], id)) << "in use";
    ep1.reset();
    c1.reset();
    cq1.reset();
    cq3.reset();
    dom.reset();
    ASSERT_EQ(0, cxil_get_svc_rsrc_use(dev_[0], id, &use));
    for (int t = 0; t < CXI_RSRC_TYPE_MAX; t++)
        EXPECT_EQ(0u, use.in_use[t]) << cxi_rsrc_type_to_str(cxi_rsrc_type(t));
    EXPECT_EQ(0, cxil_destroy_svc(dev_[0], id));
}

TEST_F(AuthKeyTest, ServiceCallsCheckWhatTheyAreGiven) {
    if (!root()) GTEST_SKIP() << "creating services needs root";
    cxi_svc_desc overlap = desc_with_vnis({1});
    EXPECT_EQ(-EEXIST, cxil_alloc_svc(dev_[0], &overlap, nullptr)) << "VNI 1 is the default's";
    cxi_svc_desc too_many = desc_with_vnis({501, 502, 503, 504});
    too_many.num_vld_vnis = 5;
    EXPECT_EQ(-EINVAL, cxil_alloc_svc(dev_[0], &too_many, nullptr));
    cxi_svc_desc res_over_max = desc_with_vnis({510});
    res_over_max.resource_limits = 1;
    res_over_max.limits.ptes = cxi_limits{1, 2};
    EXPECT_EQ(-EINVAL, cxil_alloc_svc(dev_[0], &res_over_max, nullptr));
    EXPECT_EQ(-EINVAL, cxil_destroy_svc(dev_[0], 1)) << "the default service stays";
    EXPECT_EQ(-EINVAL, cxil_destroy_svc(dev_[0], 9001));
    cxi_svc_desc got{};
    EXPECT_EQ(-EINVAL, cxil_get_svc(dev_[0], 99, &got));
    cxi_svc_desc big = desc_with_vnis({520});
    big.resource_limits = 1;
    for (int t = 0; t < CXI_RSRC_TYPE_MAX; t++)
        big.limits.type[t].max = 8;
    big.limits.ptes = cxi_limits{2000, 2000};
    unsigned id = create(big);
    cxi_svc_desc more = big;
    more.vnis[0] = 521;
    more.limits.ptes = cxi_limits{100, 100};
    cxi_svc_fail_info fail{};
    EXPECT_EQ(-ENOSPC, cxil_alloc_svc(dev_[0], &more, &fail)) << "reservations past the device";
    EXPECT_EQ(48u, fail.rsrc_avail[CXI_RSRC_TYPE_PTE]);
    ASSERT_EQ(0, cxil_get_svc(dev_[0], id, &got));
    EXPECT_EQ(8u, got.limits.tles.res) << "a TLE pool of at least 8";
    EXPECT_EQ(got.limits.tles.res, got.limits.tles.max);
    cxil_svc_list *list = nullptr;
    ASSERT_EQ(0, cxil_get_svc_list(dev_[0], &list));
    EXPECT_EQ(2u, list->count);
    cxil_free_svc_list(list);
    pid_t child = fork();
    if (child == 0) {  // an ordinary user may look, not change
        if (setgid(4242) != 0 || setuid(4242) != 0) _exit(2);
        cxi_svc_desc d = desc_with_vnis({530});
        cxi_svc_desc seen{};
        bool ok = cxil_alloc_svc(dev_[0], &d, nullptr) == -EPERM &&
                  cxil_destroy_svc(dev_[0], id) == -EPERM &&
                  cxil_svc_enable(dev_[0], id, false) == -EPERM &&
                  cxil_get_svc(dev_[0], id, &seen) == 0;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(child, waitpid(child, &status, 0));
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

// Two VNIs never deliver to each other, over either transport.
class VniTest : public TransportTest {};

TEST_P(VniTest, EndpointsOnOtherVnisCannotTalk) {
    EpOptions vni10;
    vni10.auth_key = key(1, 10);
    // a: the default VNI 1; b: VNI 10, at a PID no endpoint of VNI 1 has (each VNI has
    // its own PIDs: on VNI 1 that PID would be someone else).
    std::vector<uint8_t> buf(64);  // before p: b's receive of it stays posted to the end
    Pair p;
    p.a = make_ep("cxi0");
    uint32_t pid = 0;
    p.b = make_ep_at_pid(peer_domain(), vni10, pid);
    p.a2b = p.a->insert(p.b->name());
    int ctx = 0;
    ASSERT_RC(0, fi_recv(p.b->ep(), buf.data(), buf.size(), nullptr, FI_ADDR_UNSPEC, nullptr));
    ASSERT_RC(0, fi_send(p.a->ep(), buf.data(), buf.size(), nullptr, p.a2b, &ctx));
    ErrComp e = wait_err(p.a->tx(), &ctx, "send to another VNI");
    EXPECT_EQ(FI_EIO, e.e.err);
    EXPECT_EQ(C_RC_PTLTE_NOT_FOUND, e.e.prov_errno);
    expect_quiet(p.b->rx(), "a packet of another VNI");
}

TEST_P(VniTest, EndpointsOnTheSameOtherVniTalk) {
    EpOptions vni10;
    vni10.auth_key = key(1, 10);
    Pair p = make_pair(vni10, vni10);
    ping(*p.a, p.a2b, *p.b, 100, 7);
    ping(*p.b, p.b2a, *p.a, 5000, 8);
}

CXIT_INSTANTIATE_TRANSPORTS(VniTest);

// Over UDP, VNIs 16 apart share a port space: the receiving NIC refuses the foreign
// packets, counts them, and the sender learns why.
TEST_F(AuthKeyTest, ForeignVniPacketsAreRefusedByTheRemoteNic) {
    if (!root()) GTEST_SKIP() << "creating services needs root";
    cxi_svc_desc d = desc_with_vnis({3, 19});
    unsigned id0 = create(d, 0), id1 = create(d, 1);
    EpOptions oa, ob;
    oa.auth_key = key(id0, 3);
    ob.auth_key = key(id1, 19);
    uint32_t pid = 0;
    EndpointPtr b = make_ep_at_pid("cxi1", ob, pid);
    std::string svc = std::to_string(pid);
    oa.src_service = svc.c_str();
    EndpointPtr a = make_ep("cxi0", oa);
    fi_addr_t a2b = a->insert(b->name());
    std::vector<uint8_t> buf(64);
    int ctx = 0;
    ASSERT_RC(0, fi_send(a->ep(), buf.data(), buf.size(), nullptr, a2b, &ctx));
    ErrComp e = wait_err(a->tx(), &ctx, "send to the same PID on VNI 19");
    EXPECT_EQ(FI_ENOTCONN, e.e.err);
    EXPECT_EQ(C_RC_VNI_NOT_FOUND, e.e.prov_errno);
    fi_cxi_dom_ops *ops = nullptr;
    fid_domain *bd = domain("cxi1", ob);
    ASSERT_RC(0,
              fi_open_ops(&bd->fid, FI_CXI_DOM_OPS_6, 0, reinterpret_cast<void **>(&ops), nullptr));
    uint64_t dropped = 0;
    wait_until(
        [&] {
            progress_all();
            return ops->cntr_read(&bd->fid, kVniDropped, &dropped, nullptr) == 0 && dropped > 0;
        },
        "the receiver counts the foreign packet");
}

}  // namespace
}  // namespace cxit

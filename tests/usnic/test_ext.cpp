// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The usnic extensions: fabric getinfo (versions 1 and 2) and the AV's
// get_distance, reached through fi_open_ops.
#include <arpa/inet.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

#include "fixture.hpp"

using namespace usnict;

namespace {

constexpr const char *kCapNames[] = {"USD_CAP_CQ_SHARING", "USD_CAP_MAP_PER_RES", "USD_CAP_PIO",
                                     "USD_CAP_CQ_INTR", "USD_CAP_GRP_INTR"};

// lo's MAC address as sysfs shows it ("00:00:00:00:00:00").
bool read_lo_mac(uint8_t mac[6]) {
    std::ifstream f("/sys/class/net/lo/address");
    std::string s;
    if (!(f >> s)) return false;
    unsigned v[6];
    if (std::sscanf(s.c_str(), "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
        return false;
    for (int i = 0; i < 6; i++)
        mac[i] = static_cast<uint8_t>(v[i]);
    return true;
}

class ExtTest : public UsnicTest {
  protected:
    void SetUp() override {
        InfoPtr info = info_of(FI_EP_DGRAM);
        open_domain(info.get());
    }
    fi_usnic_ops_fabric *fabric_ops() {
        void *ops = nullptr;
        const int rc = fi_open_ops(&fabric()->fid, FI_USNIC_FABRIC_OPS_1, 0, &ops, nullptr);
        if (rc != 0 || !ops) fatal("fi_open_ops(fabric) returned " + rc_str(rc));
        return static_cast<fi_usnic_ops_fabric *>(ops);
    }
    fi_usnic_ops_av *av_ops(fid_av *av) {
        void *ops = nullptr;
        const int rc = fi_open_ops(&av->fid, FI_USNIC_AV_OPS_1, 0, &ops, nullptr);
        if (rc != 0 || !ops) fatal("fi_open_ops(av) returned " + rc_str(rc));
        return static_cast<fi_usnic_ops_av *>(ops);
    }
};

TEST_F(ExtTest, FabricOpsTable) {
    fi_usnic_ops_fabric *ops = fabric_ops();
    EXPECT_EQ(ops->size, sizeof(fi_usnic_ops_fabric));
    EXPECT_NE(ops->getinfo, nullptr);
}

TEST_F(ExtTest, OpenOpsUnknownNames) {
    void *ops = nullptr;
    EXPECT_RC(-FI_EINVAL, fi_open_ops(&fabric()->fid, "fabric_ops 2", 0, &ops, nullptr));
    EXPECT_RC(-FI_EINVAL, fi_open_ops(&fabric()->fid, FI_USNIC_AV_OPS_1, 0, &ops, nullptr));
    Fid<fid_av> av = open_av();
    EXPECT_RC(-FI_EINVAL, fi_open_ops(&av->fid, "av_ops 2", 0, &ops, nullptr));
    EXPECT_RC(-FI_EINVAL, fi_open_ops(&av->fid, FI_USNIC_FABRIC_OPS_1, 0, &ops, nullptr));
}

TEST_F(ExtTest, OpenOpsOnOtherObjects) {
    void *ops = nullptr;
    EXPECT_RC(-FI_ENOSYS, fi_open_ops(&domain()->fid, FI_USNIC_FABRIC_OPS_1, 0, &ops, nullptr));
    Fid<fid_cq> cq = open_cq(FI_CQ_FORMAT_CONTEXT);
    EXPECT_RC(-FI_ENOSYS, fi_open_ops(&cq->fid, FI_USNIC_AV_OPS_1, 0, &ops, nullptr));
}

TEST_F(ExtTest, GetinfoV1) {
    fi_usnic_info info;
    std::memset(&info, 0xab, sizeof(info));
    ASSERT_OK(fabric_ops()->getinfo(1, fabric(), &info));
    EXPECT_EQ(info.ui_version, 1u);
    const fi_usnic_info_v1 &v1 = info.ui.v1;
    EXPECT_STREQ(v1.ui_ifname, "lo");
    EXPECT_EQ(v1.ui_netmask_be, htonl(0xff000000U));
    EXPECT_GE(v1.ui_num_vf, 8u);
    EXPECT_GE(v1.ui_qp_per_vf, 2u);
    EXPECT_GE(v1.ui_cq_per_vf, 2u);
    // Version 1 writes its six fields only.
    const auto *raw = reinterpret_cast<const uint8_t *>(&info);
    for (size_t off = offsetof(fi_usnic_info, ui) + sizeof(fi_usnic_info_v1); off < sizeof(info);
         off++)
        ASSERT_EQ(raw[off], 0xab) << "byte " << off << " beyond the v1 fields was written";
}

TEST_F(ExtTest, GetinfoV2) {
    fi_usnic_info info;
    std::memset(&info, 0, sizeof(info));
    ASSERT_OK(fabric_ops()->getinfo(2, fabric(), &info));
    EXPECT_EQ(info.ui_version, 2u);
    const fi_usnic_info_v2 &v2 = info.ui.v2;
    EXPECT_STREQ(v2.ui_ifname, "lo");
    EXPECT_STREQ(v2.ui_devname, "usnic_0");
    EXPECT_EQ(v2.ui_netmask_be, htonl(0xff000000U));
    EXPECT_EQ(v2.ui_ipaddr_be, htonl(kLoopback));
    EXPECT_EQ(v2.ui_prefixlen, 8u);
    EXPECT_EQ(v2.ui_mtu, static_cast<uint32_t>(iface_mtu("lo")));
    EXPECT_EQ(v2.ui_mtu, 65536u);
    EXPECT_EQ(v2.ui_link_up, 1u);
    EXPECT_GE(v2.ui_num_vf, 8u);
    EXPECT_GE(v2.ui_qp_per_vf, 2u);
    EXPECT_GE(v2.ui_cq_per_vf, 2u);
    EXPECT_NE(v2.ui_nicname, nullptr);
    EXPECT_NE(v2.ui_pid, nullptr);
    EXPECT_NE(std::memchr(v2.ui_firmware, 0, sizeof(v2.ui_firmware)), nullptr);
    uint8_t mac[6];
    if (read_lo_mac(mac)) {
        EXPECT_EQ(std::memcmp(v2.ui_mac_addr, mac, 6), 0);
    }

    ASSERT_NE(v2.ui_caps, nullptr);
    for (size_t i = 0; i < 5; i++) {
        ASSERT_NE(v2.ui_caps[i], nullptr) << "entry " << i;
        EXPECT_STREQ(v2.ui_caps[i]->uc_capability, kCapNames[i]);
        EXPECT_TRUE(v2.ui_caps[i]->uc_present == 0 || v2.ui_caps[i]->uc_present == 1);
    }
    EXPECT_EQ(v2.ui_caps[5], nullptr);
    // The caller owns the array and its entries.
    for (size_t i = 0; v2.ui_caps[i]; i++)
        free(v2.ui_caps[i]);
    free(v2.ui_caps);
}

TEST_F(ExtTest, GetinfoV1AndV2Agree) {
    fi_usnic_info a, b;
    std::memset(&a, 0, sizeof(a));
    std::memset(&b, 0, sizeof(b));
    ASSERT_OK(fabric_ops()->getinfo(1, fabric(), &a));
    ASSERT_OK(fabric_ops()->getinfo(2, fabric(), &b));
    EXPECT_EQ(a.ui.v1.ui_link_speed, b.ui.v2.ui_link_speed);
    EXPECT_EQ(a.ui.v1.ui_netmask_be, b.ui.v2.ui_netmask_be);
    EXPECT_STREQ(a.ui.v1.ui_ifname, b.ui.v2.ui_ifname);
    EXPECT_EQ(a.ui.v1.ui_num_vf, b.ui.v2.ui_num_vf);
    EXPECT_EQ(a.ui.v1.ui_qp_per_vf, b.ui.v2.ui_qp_per_vf);
    EXPECT_EQ(a.ui.v1.ui_cq_per_vf, b.ui.v2.ui_cq_per_vf);
    if (b.ui.v2.ui_caps) {
        for (size_t i = 0; b.ui.v2.ui_caps[i]; i++)
            free(b.ui.v2.ui_caps[i]);
        free(b.ui.v2.ui_caps);
    }
}

TEST_F(ExtTest, GetinfoBadVersions) {
    fi_usnic_info info;
    std::memset(&info, 0, sizeof(info));
    EXPECT_RC(-FI_EINVAL, fabric_ops()->getinfo(3, fabric(), &info));
    EXPECT_RC(-FI_EINVAL, fabric_ops()->getinfo(0, fabric(), &info));
}

TEST_F(ExtTest, AvOpsTable) {
    Fid<fid_av> av = open_av();
    fi_usnic_ops_av *ops = av_ops(av.get());
    EXPECT_EQ(ops->size, sizeof(fi_usnic_ops_av));
    EXPECT_NE(ops->get_distance, nullptr);
}

TEST_F(ExtTest, GetDistance) {
    Fid<fid_av> av = open_av();
    fi_usnic_ops_av *ops = av_ops(av.get());
    struct Case {
        const char *ip;
        int metric;
    };
    for (const Case &c : {Case{"127.0.0.1", 0}, Case{"127.1.2.3", 0}, Case{kUnreachableIp, -1}}) {
        SCOPED_TRACE(c.ip);
        sockaddr_in sin = make_sin(c.ip, 0);
        int metric = 42;
        EXPECT_OK(ops->get_distance(av.get(), &sin, &metric));
        EXPECT_EQ(metric, c.metric);
    }
}

}  // namespace

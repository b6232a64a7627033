// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// <rdma/fi_ext_usnic.h>: exact macro values and the packed layouts that
// binaries built against the VIC provider's header depend on (x86-64 LP64).
#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <rdma/fi_ext_usnic.h>

#include <cstddef>
#include <cstring>
#include <type_traits>

namespace {

// The union members of fi_usnic_info, reached through the outer struct.
constexpr size_t kUnion = offsetof(struct fi_usnic_info, ui);

TEST(HeaderAbiTest, Macros) {
    EXPECT_EQ(FI_PROTO_RUDP, 0x80000064U);
    EXPECT_EQ(FI_PROTO_RUDP, 100U | FI_PROV_SPECIFIC);
    EXPECT_EQ(FI_EXT_USNIC_INFO_VERSION, 2);
    EXPECT_EQ(FI_EXT_USNIC_MAX_DEVNAME, 16);
    EXPECT_STREQ(FI_USNIC_FABRIC_OPS_1, "fabric_ops 1");
    EXPECT_STREQ(FI_USNIC_AV_OPS_1, "av_ops 1");
    EXPECT_EQ(IFNAMSIZ, 16);
}

TEST(HeaderAbiTest, Sizes) {
    EXPECT_EQ(sizeof(struct fi_usnic_cap), 12u);
    EXPECT_EQ(sizeof(struct fi_usnic_info_v1), 36u);
    EXPECT_EQ(sizeof(struct fi_usnic_info_v2), 200u);
    EXPECT_EQ(sizeof(struct fi_usnic_info), 208u);
    EXPECT_EQ(sizeof(struct fi_usnic_ops_fabric), 16u);
    EXPECT_EQ(sizeof(struct fi_usnic_ops_av), 16u);
}

TEST(HeaderAbiTest, PackedAlignment) {
    EXPECT_EQ(alignof(struct fi_usnic_cap), 1u);
    EXPECT_EQ(alignof(struct fi_usnic_info_v1), 1u);
    EXPECT_EQ(alignof(struct fi_usnic_info_v2), 1u);
    EXPECT_EQ(alignof(struct fi_usnic_info), 1u);
    EXPECT_EQ(alignof(struct fi_usnic_ops_fabric), alignof(void *));
    EXPECT_EQ(alignof(struct fi_usnic_ops_av), alignof(void *));
}

TEST(HeaderAbiTest, CapLayout) {
    EXPECT_EQ(offsetof(struct fi_usnic_cap, uc_capability), 0u);
    EXPECT_EQ(offsetof(struct fi_usnic_cap, uc_present), 8u);
    EXPECT_TRUE((std::is_same_v<decltype(fi_usnic_cap::uc_capability), const char *>));
    EXPECT_TRUE((std::is_same_v<decltype(fi_usnic_cap::uc_present), int>));
}

TEST(HeaderAbiTest, InfoV1Layout) {
    EXPECT_EQ(offsetof(struct fi_usnic_info_v1, ui_link_speed), 0u);
    EXPECT_EQ(offsetof(struct fi_usnic_info_v1, ui_netmask_be), 4u);
    EXPECT_EQ(offsetof(struct fi_usnic_info_v1, ui_ifname), 8u);
    EXPECT_EQ(sizeof(fi_usnic_info_v1::ui_ifname), 16u);
    EXPECT_EQ(offsetof(struct fi_usnic_info_v1, ui_num_vf), 24u);
    EXPECT_EQ(offsetof(struct fi_usnic_info_v1, ui_qp_per_vf), 28u);
    EXPECT_EQ(offsetof(struct fi_usnic_info_v1, ui_cq_per_vf), 32u);
}

TEST(HeaderAbiTest, InfoV2Layout) {
    using V2 = struct fi_usnic_info_v2;
    EXPECT_EQ(offsetof(V2, ui_link_speed), 0u);
    EXPECT_EQ(offsetof(V2, ui_netmask_be), 4u);
    EXPECT_EQ(offsetof(V2, ui_ifname), 8u);
    EXPECT_EQ(offsetof(V2, ui_num_vf), 24u);
    EXPECT_EQ(offsetof(V2, ui_qp_per_vf), 28u);
    EXPECT_EQ(offsetof(V2, ui_cq_per_vf), 32u);
    EXPECT_EQ(offsetof(V2, ui_devname), 36u);
    EXPECT_EQ(sizeof(V2::ui_devname), 16u);
    EXPECT_EQ(offsetof(V2, ui_mac_addr), 52u);
    EXPECT_EQ(sizeof(V2::ui_mac_addr), 6u);
    EXPECT_EQ(offsetof(V2, ui_pad0), 58u);
    EXPECT_EQ(sizeof(V2::ui_pad0), 2u);
    EXPECT_EQ(offsetof(V2, ui_ipaddr_be), 60u);
    EXPECT_EQ(offsetof(V2, ui_prefixlen), 64u);
    EXPECT_EQ(offsetof(V2, ui_mtu), 68u);
    EXPECT_EQ(offsetof(V2, ui_link_up), 72u);
    EXPECT_EQ(offsetof(V2, ui_pad1), 73u);
    EXPECT_EQ(sizeof(V2::ui_pad1), 3u);
    EXPECT_EQ(offsetof(V2, ui_vendor_id), 76u);
    EXPECT_EQ(offsetof(V2, ui_vendor_part_id), 80u);
    EXPECT_EQ(offsetof(V2, ui_device_id), 84u);
    EXPECT_EQ(offsetof(V2, ui_firmware), 88u);
    EXPECT_EQ(sizeof(V2::ui_firmware), 64u);
    EXPECT_EQ(offsetof(V2, ui_intr_per_vf), 152u);
    EXPECT_EQ(offsetof(V2, ui_max_cq), 156u);
    EXPECT_EQ(offsetof(V2, ui_max_qp), 160u);
    EXPECT_EQ(offsetof(V2, ui_max_cqe), 164u);
    EXPECT_EQ(offsetof(V2, ui_max_send_credits), 168u);
    EXPECT_EQ(offsetof(V2, ui_max_recv_credits), 172u);
    EXPECT_EQ(offsetof(V2, ui_nicname), 176u);
    EXPECT_EQ(offsetof(V2, ui_pid), 184u);
    EXPECT_EQ(offsetof(V2, ui_caps), 192u);
    EXPECT_TRUE((std::is_same_v<decltype(V2::ui_caps), struct fi_usnic_cap **>));
    EXPECT_TRUE((std::is_same_v<decltype(V2::ui_nicname), const char *>));
}

TEST(HeaderAbiTest, InfoLayout) {
    EXPECT_EQ(offsetof(struct fi_usnic_info, ui_version), 0u);
    EXPECT_EQ(offsetof(struct fi_usnic_info, ui_pad0), 4u);
    EXPECT_EQ(sizeof(fi_usnic_info::ui_pad0), 4u);
    EXPECT_EQ(kUnion, 8u);
    EXPECT_EQ(sizeof(fi_usnic_info::ui), 200u);
}

// v1 is a prefix of v2 inside the union: the same bytes name the same fields.
TEST(HeaderAbiTest, V1IsPrefixOfV2) {
    struct fi_usnic_info info;
    std::memset(&info, 0, sizeof(info));
    info.ui.v2.ui_link_speed = 40000;
    info.ui.v2.ui_netmask_be = 0x00ffffffU;
    std::strcpy(info.ui.v2.ui_ifname, "eth4");
    info.ui.v2.ui_num_vf = 16;
    info.ui.v2.ui_qp_per_vf = 4;
    info.ui.v2.ui_cq_per_vf = 5;
    EXPECT_EQ(info.ui.v1.ui_link_speed, 40000u);
    EXPECT_EQ(info.ui.v1.ui_netmask_be, 0x00ffffffU);
    EXPECT_STREQ(info.ui.v1.ui_ifname, "eth4");
    EXPECT_EQ(info.ui.v1.ui_num_vf, 16u);
    EXPECT_EQ(info.ui.v1.ui_qp_per_vf, 4u);
    EXPECT_EQ(info.ui.v1.ui_cq_per_vf, 5u);
    const auto *raw = reinterpret_cast<const unsigned char *>(&info);
    EXPECT_EQ(raw[kUnion + 8], 'e');  // ui_ifname at union offset 8
}

TEST(HeaderAbiTest, OpsLayout) {
    EXPECT_EQ(offsetof(struct fi_usnic_ops_fabric, size), 0u);
    EXPECT_EQ(offsetof(struct fi_usnic_ops_fabric, getinfo), 8u);
    EXPECT_EQ(offsetof(struct fi_usnic_ops_av, size), 0u);
    EXPECT_EQ(offsetof(struct fi_usnic_ops_av, get_distance), 8u);
    using GetinfoFn = int (*)(uint32_t, struct fid_fabric *, struct fi_usnic_info *);
    using DistanceFn = int (*)(struct fid_av *, void *, int *);
    EXPECT_TRUE((std::is_same_v<decltype(fi_usnic_ops_fabric::getinfo), GetinfoFn>));
    EXPECT_TRUE((std::is_same_v<decltype(fi_usnic_ops_av::get_distance), DistanceFn>));
}

}  // namespace

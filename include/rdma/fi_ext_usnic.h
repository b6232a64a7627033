// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fi_ext_usnic.h - public extensions of the libfabric "usnic" provider.
 *
 * softnic's own text. The macro names and values, the structure names and
 * their packed byte layouts are those applications written for the Cisco VIC
 * usNIC provider expect (Open MPI's usnic BTL among them), so that such code
 * compiles and runs unchanged against softnic's software usNIC.
 *
 * Usable from C and C++.
 */
#ifndef SOFTNIC_FI_EXT_USNIC_H
#define SOFTNIC_FI_EXT_USNIC_H

#include <net/if.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Strict ISO modes hide the BSD name; the POSIX one has the same value (16). */
#ifndef IFNAMSIZ
#define IFNAMSIZ IF_NAMESIZE
#endif

/* libfabric 2.x headers no longer define it; the value of 1.x. */
#ifndef FI_PROV_SPECIFIC
#define FI_PROV_SPECIFIC (1U << 31)
#endif

/* ep_attr->protocol of the reliable (FI_EP_MSG / FI_EP_RDM) endpoints. */
#define FI_PROTO_RUDP (100U | FI_PROV_SPECIFIC)

/* Newest version understood by the fabric "getinfo" extension. */
#define FI_EXT_USNIC_INFO_VERSION 2

/* Size of fi_usnic_info_v2.ui_devname ("usnic_<n>" plus NUL). */
#define FI_EXT_USNIC_MAX_DEVNAME 16

/* One device capability, as listed by the version 2 getinfo extension. The
 * name is a static string; uc_present is 0 or 1. */
struct fi_usnic_cap {
    const char *uc_capability;
    int uc_present;
} __attribute__((packed));

/* Version 1 of the device description: 36 bytes. */
struct fi_usnic_info_v1 {
    uint32_t ui_link_speed; /* Mbit/s */
    uint32_t ui_netmask_be; /* network byte order */
    char ui_ifname[IFNAMSIZ];

    uint32_t ui_num_vf;
    uint32_t ui_qp_per_vf;
    uint32_t ui_cq_per_vf;
} __attribute__((packed));

/* Version 2: version 1's fields first, then the rest. 200 bytes. The
 * ui_caps array ends with a NULL pointer; the caller owns it (each entry and
 * the array itself). ui_nicname and ui_pid are static strings. */
struct fi_usnic_info_v2 {
    uint32_t ui_link_speed;
    uint32_t ui_netmask_be;
    char ui_ifname[IFNAMSIZ];
    unsigned ui_num_vf;
    unsigned ui_qp_per_vf;
    unsigned ui_cq_per_vf;

    char ui_devname[FI_EXT_USNIC_MAX_DEVNAME];
    uint8_t ui_mac_addr[6];

    uint8_t ui_pad0[2];

    uint32_t ui_ipaddr_be; /* network byte order */
    uint32_t ui_prefixlen;
    uint32_t ui_mtu;
    uint8_t ui_link_up;

    uint8_t ui_pad1[3];

    uint32_t ui_vendor_id;
    uint32_t ui_vendor_part_id;
    uint32_t ui_device_id;
    char ui_firmware[64];

    unsigned ui_intr_per_vf;
    unsigned ui_max_cq;
    unsigned ui_max_qp;

    unsigned ui_max_cqe;
    unsigned ui_max_send_credits;
    unsigned ui_max_recv_credits;

    const char *ui_nicname;
    const char *ui_pid;

    struct fi_usnic_cap **ui_caps;
} __attribute__((packed));

/* What getinfo fills: the version actually written, then the union member of
 * that version. The explicit pad keeps the union at offset 8. 208 bytes. */
struct fi_usnic_info {
    uint32_t ui_version;
    uint8_t ui_pad0[4];
    union {
        struct fi_usnic_info_v1 v1;
        struct fi_usnic_info_v2 v2;
    } ui;
} __attribute__((packed));

/* Fabric extension: fi_open_ops(&fabric->fid, FI_USNIC_FABRIC_OPS_1, 0,
 * (void **)&ops, NULL). getinfo returns 0 or a negative FI error code
 * (-FI_EINVAL for a version other than 1 or 2). */
#define FI_USNIC_FABRIC_OPS_1 "fabric_ops 1"

struct fi_usnic_ops_fabric {
    size_t size;
    int (*getinfo)(uint32_t version, struct fid_fabric *fabric, struct fi_usnic_info *info);
};

/* Address-vector extension: fi_open_ops(&av->fid, FI_USNIC_AV_OPS_1, 0,
 * (void **)&ops, NULL). get_distance reads addr as a struct sockaddr_in and
 * sets *metric to -1 (unreachable from this device), 0 (directly connected)
 * or 1 (through a gateway). */
#define FI_USNIC_AV_OPS_1 "av_ops 1"

struct fi_usnic_ops_av {
    size_t size;
    int (*get_distance)(struct fid_av *av, void *addr, int *metric);
};

#ifdef __cplusplus
}
#endif

#endif /* SOFTNIC_FI_EXT_USNIC_H */

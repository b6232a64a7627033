// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * libcxi.h: softnic's CXI device and service library.
 *
 * The device and service calls of HPE's libCXI, with the same names, values and
 * structure layouts, so that launchers and tools written for Slingshot hosts drive
 * soft NICs unchanged. Only the calls listed here exist; the rest of libCXI (command
 * queues, event queues, memory descriptors...) has no meaning without the hardware.
 *
 * Services live in a per-host registry only root may change (see cxi_service(1)).
 * Every call returns 0 (or a documented positive value) on success and a negative
 * errno on failure.
 */
#ifndef SOFTNIC_LIBCXI_H
#define SOFTNIC_LIBCXI_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CXI_SVC_MAX_MEMBERS 2
#define CXI_SVC_MAX_VNIS 4
#define CXI_DEFAULT_SVC_ID 1

#define CXIL_DEVNAME_MAX 13
#define CXIL_DRVNAME_MAX 8
#define CXIL_FRUDESC_MAX 16

enum cxi_traffic_class {
    CXI_TC_DEDICATED_ACCESS = 0,
    CXI_TC_LOW_LATENCY = 1,
    CXI_TC_BULK_DATA = 2,
    CXI_TC_BEST_EFFORT = 3,
    CXI_TC_ETH = 4,
    CXI_TC_MAX = 5,
};

enum cxi_rsrc_type {
    CXI_RSRC_TYPE_PTE = 0,
    CXI_RSRC_TYPE_TXQ = 1,
    CXI_RSRC_TYPE_TGQ = 2,
    CXI_RSRC_TYPE_EQ = 3,
    CXI_RSRC_TYPE_CT = 4,
    CXI_RSRC_TYPE_LE = 5,
    CXI_RSRC_TYPE_TLE = 6,
    CXI_RSRC_TYPE_AC = 7,
    CXI_RSRC_TYPE_MAX = 8,
};

/* Names of the resource types, indexed by enum cxi_rsrc_type (launchers print them). */
#if defined(__GNUC__)
__attribute__((unused))
#endif
static const char *const cxi_rsrc_type_strs[CXI_RSRC_TYPE_MAX] = {
    "PTEs", "TXQs", "TGQs", "EQs", "CTs", "LEs", "TLEs", "ACs",
};

enum cxi_svc_member_type {
    CXI_SVC_MEMBER_IGNORE = 0,
    CXI_SVC_MEMBER_UID = 1,
    CXI_SVC_MEMBER_GID = 2,
    CXI_SVC_MEMBER_NET_NS = 3,
    CXI_SVC_MEMBER_MAX = 4,
};

struct cxi_limits {
    uint16_t max; /* at most this many in use at once */
    uint16_t res; /* reserved for the service */
};

struct cxi_rsrc_limits {
    union {
        struct {
            struct cxi_limits ptes;
            struct cxi_limits txqs;
            struct cxi_limits tgqs;
            struct cxi_limits eqs;
            struct cxi_limits cts;
            struct cxi_limits les;
            struct cxi_limits tles;
            struct cxi_limits acs;
        };
        struct cxi_limits type[CXI_RSRC_TYPE_MAX];
    };
};

struct cxi_rsrc_use {
    unsigned int svc_id;
    unsigned int tle_pool_id;
    uint16_t in_use[CXI_RSRC_TYPE_MAX];
};

struct cxi_svc_fail_info {
    uint16_t rsrc_avail[CXI_RSRC_TYPE_MAX]; /* what was left of each resource asked for */
    bool no_le_pools;
    bool no_tle_pools;
    bool no_cntr_pools;
};

union cxi_svc_member {
    uid_t uid;
    gid_t gid;
};

struct cxi_svc_desc {
    uint8_t restricted_members : 1, /* only the members below may use it */
        restricted_vnis : 1,        /* only vnis[] (else the VNI range) */
        restricted_tcs : 1,         /* only the tcs[] marked true */
        resource_limits : 1,        /* limits below are enforced */
        enable : 1,                 /* (read back only; see cxil_svc_enable) */
        is_system_svc : 1, cntr_pool_id : 2;
    uint8_t num_vld_vnis;
    uint16_t vnis[CXI_SVC_MAX_VNIS];
    bool tcs[CXI_TC_MAX];
    struct {
        union cxi_svc_member svc_member;
        enum cxi_svc_member_type type;
    } members[CXI_SVC_MAX_MEMBERS];
    struct cxi_rsrc_limits limits;
    unsigned int svc_id;
};

enum cassini_version {
    CASSINI_1 = 0x10,
    CASSINI_2 = 0x20,
    CASSINI_1_0 = CASSINI_1 | 0x01,
    CASSINI_1_1 = CASSINI_1 | 0x02,
    CASSINI_2_0 = CASSINI_2 | 0x01,
};

enum system_type_identifier {
    CASSINI_MIX = 0,
    CASSINI_1_ONLY = 1,
    CASSINI_2_ONLY = 2,
};

struct cxil_devinfo {
    unsigned int dev_id;
    union {
        unsigned int nic_addr; /* obsolete name of nid */
        unsigned int nid;
    };
    unsigned int pid_bits;
    unsigned int pid_count;
    unsigned int pid_granule;
    unsigned int min_free_shift;
    unsigned int rdzv_get_idx;
    char device_name[CXIL_DEVNAME_MAX + 1];
    char driver_name[CXIL_DRVNAME_MAX + 1];
    unsigned int vendor_id;
    unsigned int device_id;
    unsigned int device_rev;
    unsigned int device_proto;
    unsigned int device_platform;
    uint16_t num_ptes;
    uint16_t num_txqs;
    uint16_t num_tgqs;
    uint16_t num_eqs;
    uint16_t num_cts;
    uint16_t num_acs;
    uint16_t num_tles;
    uint16_t num_les;
    uint16_t pci_domain;
    uint8_t pci_bus;
    uint8_t pci_device;
    uint8_t pci_function;
    size_t link_mtu;
    size_t link_speed;
    uint8_t link_state;
    int uc_nic;
    unsigned int pct_eq;
    enum cassini_version cassini_version;
    char fru_description[CXIL_FRUDESC_MAX];
    bool is_vf;
    enum system_type_identifier system_type_identifier;
};

struct cxil_dev {
    struct cxil_devinfo info;
};

struct cxil_device_list {
    unsigned int count;
    struct cxil_devinfo info[];
};

struct cxil_svc_list {
    unsigned int count;
    struct cxi_svc_desc descs[];
};

struct cxil_svc_rsrc_list {
    unsigned int count;
    struct cxi_rsrc_use rsrcs[];
};

/* Devices: one per soft NIC of the host (FI_CXI_SOFT_NICS, FI_CXI_DEVICE_NAME). */
int cxil_get_device_list(struct cxil_device_list **dev_list);
void cxil_free_device_list(struct cxil_device_list *dev_list);
int cxil_open_device(uint32_t dev_id, struct cxil_dev **dev);
void cxil_close_device(struct cxil_dev *dev);

/* Services. Changing calls need root (-EPERM); an unknown svc_id is -EINVAL. */
int cxil_alloc_svc(struct cxil_dev *dev, const struct cxi_svc_desc *svc_desc,
                   struct cxi_svc_fail_info *fail_info);
int cxil_destroy_svc(struct cxil_dev *dev, unsigned int svc_id);
int cxil_update_svc(struct cxil_dev *dev, const struct cxi_svc_desc *svc_desc,
                    struct cxi_svc_fail_info *fail_info);
int cxil_get_svc(struct cxil_dev *dev, unsigned int svc_id, struct cxi_svc_desc *svc_desc);
int cxil_get_svc_list(struct cxil_dev *dev, struct cxil_svc_list **svc_list);
void cxil_free_svc_list(struct cxil_svc_list *svc_list);
int cxil_get_svc_rsrc_use(struct cxil_dev *dev, unsigned int svc_id, struct cxi_rsrc_use *rsrcs);
int cxil_get_svc_rsrc_list(struct cxil_dev *dev, struct cxil_svc_rsrc_list **rsrc_list);
void cxil_free_svc_rsrc_list(struct cxil_svc_rsrc_list *rsrc_list);
int cxil_set_svc_lpr(struct cxil_dev *dev, unsigned int svc_id, unsigned int lnis_per_rgid);
int cxil_get_svc_lpr(struct cxil_dev *dev, unsigned int svc_id);
int cxil_svc_enable(struct cxil_dev *dev, unsigned int svc_id, bool enable);
int cxil_svc_set_exclusive_cp(struct cxil_dev *dev, unsigned int svc_id, bool exclusive_cp);
int cxil_svc_get_exclusive_cp(struct cxil_dev *dev, unsigned int svc_id, bool *exclusive_cp);
int cxil_svc_set_vni_range(struct cxil_dev *dev, unsigned int svc_id, uint16_t vni_min,
                           uint16_t vni_max);
int cxil_svc_get_vni_range(struct cxil_dev *dev, unsigned int svc_id, uint16_t *vni_min,
                           uint16_t *vni_max);
int cxil_svc_set_netns(struct cxil_dev *dev, unsigned int svc_id, unsigned int netns);
int cxil_svc_get_netns(struct cxil_dev *dev, unsigned int svc_id, unsigned int *netns);

/* Names of resources and traffic classes, "(invalid)" when out of range. */
const char *cxi_rsrc_type_to_str(enum cxi_rsrc_type type);
const char *cxi_tc_to_str(enum cxi_traffic_class tc);

#ifdef __cplusplus
}
#endif

#endif /* SOFTNIC_LIBCXI_H */

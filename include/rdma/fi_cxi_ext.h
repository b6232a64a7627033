// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * fi_cxi_ext.h - public extensions of the libfabric "cxi" provider.
 *
 * softnic's own text. The names, numeric values and structure layouts are
 * those of the HPE Slingshot provider so that applications written for the
 * hardware compile unchanged against softnic's software Cassini.
 */
#ifndef SOFTNIC_FI_CXI_EXT_H
#define SOFTNIC_FI_CXI_EXT_H

#include <errno.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Base of the provider-specific enum space (fi_ext.h convention). */
#define FI_PROV_SPECIFIC_CXI (0xccc << 16)

/* The receiver-not-ready protocol is newer than some libfabric headers. */
#if FI_MAJOR_VERSION == 1 && FI_MINOR_VERSION < 20
#define FI_PROTO_CXI_RNR 29
#endif

/* Authorization key: a CXI service id and the VNI the endpoint uses. */
struct cxi_auth_key {
    uint32_t svc_id; /* CXI service (resource group) */
    uint16_t vni;    /* Virtual Network ID */
};

/* info->nic->prov_attr of a cxi info. `version` must stay first. */
#define FI_CXI_NIC_ATTR_VER 1
struct cxip_nic_attr {
    uint32_t version;
    const unsigned int addr;              /* 20-bit NIC address */
    const unsigned int default_rgroup_id; /* service chosen when no key is given */
    const unsigned int default_vni;       /* VNI chosen when no key is given */
};

/* Operation flag bits owned by the provider (the high, provider-reserved bits). */
#define FI_CXI_CNTR_EVENTS_BYTES 1 /* counter counts bytes, not events */
#define FI_CXI_CNTR_CACHED (1ULL << 32)
#define FI_CXI_TRUNC (1ULL << 56)
#define FI_CXI_PCIE_AMO (1ULL << 57)
#define FI_CXI_PRE_REDUCED (1ULL << 57)
#define FI_CXI_HRP (1ULL << 60)
#define FI_CXI_UNRELIABLE (1ULL << 61)
#define FI_CXI_CNTR_WB (1ULL << 62)
#define FI_CXI_WEAK_FENCE (1ULL << 63)

/* Options for fi_control / fi_setopt / fi_set_val. */
enum {
    FI_OPT_CXI_SET_TCLASS = -FI_PROV_SPECIFIC_CXI, /* uint32_t */
    FI_OPT_CXI_SET_MSG_ORDER,                      /* uint64_t */
    FI_OPT_CXI_NIC_REFRESH_ATTR,
    FI_OPT_CXI_SET_MR_MATCH_EVENTS, /* bool */
    FI_OPT_CXI_GET_MR_MATCH_EVENTS, /* bool */
    FI_OPT_CXI_SET_OPTIMIZED_MRS,   /* bool */
    FI_OPT_CXI_GET_OPTIMIZED_MRS,   /* bool */
    FI_OPT_CXI_SET_PROV_KEY_CACHE,  /* bool */
    FI_OPT_CXI_GET_PROV_KEY_CACHE,  /* bool */
    FI_OPT_CXI_SET_RNR_MAX_RETRY_TIME,
    FI_OPT_CXI_SET_RX_MATCH_MODE_OVERRIDE, /* char * */
    FI_OPT_CXI_GET_RX_MATCH_MODE_OVERRIDE, /* char * */
    FI_OPT_CXI_SET_REQ_BUF_SIZE_OVERRIDE,  /* size_t */
    FI_OPT_CXI_GET_REQ_BUF_SIZE_OVERRIDE,  /* size_t */
    FI_OPT_CXI_GET_RNR_APPEND_RETRY_ATTEMPTS,
};

/* Domain extensions, opened with fi_open_ops(&domain->fid, name, 0, &ops, NULL).
 * Every name returns the same, complete table. */
#define FI_CXI_DOM_OPS_1 "dom_ops_v1"
#define FI_CXI_DOM_OPS_2 "dom_ops_v2"
#define FI_CXI_DOM_OPS_3 "dom_ops_v3"
#define FI_CXI_DOM_OPS_4 "dom_ops_v4"
#define FI_CXI_DOM_OPS_5 "dom_ops_v5"
#define FI_CXI_DOM_OPS_6 "dom_ops_v6"

struct fi_cxi_dom_ops {
    int (*cntr_read)(struct fid *fid, unsigned int cntr, uint64_t *value, struct timespec *ts);
    int (*topology)(struct fid *fid, unsigned int *group_id, unsigned int *switch_id,
                    unsigned int *port_id);
    int (*enable_hybrid_mr_desc)(struct fid *fid, bool enable);
    size_t (*ep_get_unexp_msgs)(struct fid_ep *fid_ep, struct fi_cq_tagged_entry *entry,
                                size_t count, fi_addr_t *src_addr, size_t *ux_count);
    int (*get_dwq_depth)(struct fid *fid, size_t *depth);
    int (*enable_mr_match_events)(struct fid *fid, bool enable);
    int (*enable_optimized_mrs)(struct fid *fid, bool enable);
};

/* Counter extensions: fi_open_ops(&cntr->fid, FI_CXI_COUNTER_OPS, 0, &ops, NULL). */
#define FI_CXI_COUNTER_OPS "cxi_counter_ops"

struct fi_cxi_cntr_ops {
    /* Where the counter writes its 8-byte writeback word. */
    int (*set_wb_buffer)(struct fid *fid, void *buf, size_t len);
    /* The counter's doorbell window: add/reset success and failure. */
    int (*get_mmio_addr)(struct fid *fid, void **addr, size_t *len);
};

#define FI_CXI_CNTR_SUCCESS_MAX ((1ULL << 48) - 1)
#define FI_CXI_CNTR_FAILURE_MAX ((1ULL << 7) - 1)

/* Writeback word: bits 0-47 success, 48-54 failure, bit 63 "written". */
#define FI_CXI_CNTR_WB_VALID (1ULL << 63)

static inline uint64_t fi_cxi_cntr_success(uint64_t wb) {
    return wb & FI_CXI_CNTR_SUCCESS_MAX;
}

static inline uint64_t fi_cxi_cntr_failure(uint64_t wb) {
    return (wb >> 48) & FI_CXI_CNTR_FAILURE_MAX;
}

static inline int fi_cxi_cntr_wb_read(const void *wb_buf, uint64_t *value) {
    *value = fi_cxi_cntr_success(*(const volatile uint64_t *)wb_buf);
    return 0;
}

static inline int fi_cxi_cntr_wb_readerr(const void *wb_buf, uint64_t *value) {
    *value = fi_cxi_cntr_failure(*(const volatile uint64_t *)wb_buf);
    return 0;
}

/* A success value as the doorbell expects it (bit 63 set). */
static inline int fi_cxi_gen_cntr_success(uint64_t value, uint64_t *cxi_value) {
    if (value > FI_CXI_CNTR_SUCCESS_MAX) return -FI_EINVAL;
    *cxi_value = (1ULL << 63) | value;
    return 0;
}

/* Doorbell slots, in 8-byte words from the MMIO base. */
#define FI_CXI_CNTR_MMIO_INC_SUCCESS 0
#define FI_CXI_CNTR_MMIO_INC_FAILURE 8
#define FI_CXI_CNTR_MMIO_RST_SUCCESS 16
#define FI_CXI_CNTR_MMIO_RST_FAILURE 24

static inline void *fi_cxi_get_cntr_add_addr(void *mmio) {
    return (uint64_t *)mmio + 0;
}
static inline void *fi_cxi_get_cntr_adderr_addr(void *mmio) {
    return (uint64_t *)mmio + 8;
}
static inline void *fi_cxi_get_cntr_reset_addr(void *mmio) {
    return (uint64_t *)mmio + 16;
}
static inline void *fi_cxi_get_cntr_reseterr_addr(void *mmio) {
    return (uint64_t *)mmio + 24;
}

static inline int fi_cxi_cntr_add(void *mmio, uint64_t value) {
    if (value > FI_CXI_CNTR_SUCCESS_MAX) return -FI_EINVAL;
    *(volatile uint64_t *)fi_cxi_get_cntr_add_addr(mmio) = value;
    return 0;
}

static inline int fi_cxi_cntr_adderr(void *mmio, uint64_t value) {
    if (value > FI_CXI_CNTR_FAILURE_MAX) return -FI_EINVAL;
    *(volatile uint64_t *)fi_cxi_get_cntr_adderr_addr(mmio) = value;
    return 0;
}

/* Only a reset to zero is possible through the doorbell. */
static inline int fi_cxi_cntr_set(void *mmio, uint64_t value) {
    if (value > 0) return -FI_EINVAL;
    *(volatile uint64_t *)fi_cxi_get_cntr_reset_addr(mmio) = value;
    return 0;
}

static inline int fi_cxi_cntr_seterr(void *mmio, uint64_t value) {
    if (value > 0) return -FI_EINVAL;
    *(volatile uint64_t *)fi_cxi_get_cntr_reseterr_addr(mmio) = value;
    return 0;
}

/* Collectives: types the header carries for source compatibility. */
enum cxip_coll_op { FI_CXI_MINMAXLOC = 32, FI_CXI_REPSUM, FI_CXI_OP_LAST };

struct cxip_coll_intminmax {
    int64_t iminval;
    uint64_t iminidx;
    int64_t imaxval;
    uint64_t imaxidx;
};

struct cxip_coll_fltminmax {
    double fminval;
    uint64_t fminidx;
    double fmaxval;
    uint64_t fmaxidx;
};

struct cxip_coll_accumulator {
    uint8_t accum[64];
};

enum cxip_comm_key_type {
    COMM_KEY_NONE = 0,
    COMM_KEY_MULTICAST,
    COMM_KEY_UNICAST,
    COMM_KEY_RANK,
    COMM_KEY_MAX
};

typedef unsigned int cxip_coll_op_t;

struct cxip_comm_key {
    enum cxip_comm_key_type keytype;
    union {
        struct {
            unsigned int hwroot_idx;
            unsigned int mcast_addr;
        } mcast;
        struct {
            unsigned int hwroot_idx;
            unsigned int mcast_addr;
        } ucast;
        struct {
            unsigned int hwroot_idx;
            unsigned int rank;
            bool rx_discard;
        } rank;
    };
};

/* Reduction and join error codes reported in prov_errno. */
enum {
    FI_CXI_ERRNO_RED_FIRST = 1024,
    FI_CXI_ERRNO_RED_FLT_OVERFLOW = 1024,
    FI_CXI_ERRNO_RED_FLT_INVALID,
    FI_CXI_ERRNO_RED_INT_OVERFLOW,
    FI_CXI_ERRNO_RED_CONTR_OVERFLOW,
    FI_CXI_ERRNO_RED_OP_MISMATCH,
    FI_CXI_ERRNO_RED_MC_FAILURE,
    FI_CXI_ERRNO_RED_RDMA_FAILURE,
    FI_CXI_ERRNO_RED_RDMA_DATA_FAILURE,
    FI_CXI_ERRNO_RED_OTHER,
    FI_CXI_ERRNO_RED_LAST,
    FI_CXI_ERRNO_JOIN_FIRST = 2048,
    FI_CXI_ERRNO_JOIN_MCAST_INUSE = 2048,
    FI_CXI_ERRNO_JOIN_HWROOT_INUSE,
    FI_CXI_ERRNO_JOIN_MCAST_INVALID,
    FI_CXI_ERRNO_JOIN_HWROOT_INVALID,
    FI_CXI_ERRNO_JOIN_CURL_FAILED,
    FI_CXI_ERRNO_JOIN_CURL_TIMEOUT,
    FI_CXI_ERRNO_JOIN_SERVER_ERR,
    FI_CXI_ERRNO_JOIN_FAIL_PTE,
    FI_CXI_ERRNO_JOIN_OTHER,
    FI_CXI_ERRNO_JOIN_FAIL_RDMA,
    FI_CXI_ERRNO_JOIN_LAST,
};

/* Return codes of the (emulated) Cassini, surfaced in fi_cq_err_entry.prov_errno. */
enum c_return_code {
    C_RC_NO_EVENT = 0,
    C_RC_OK = 1,
    C_RC_UNDELIVERABLE = 2,
    C_RC_PT_DISABLED = 3,
    C_RC_DROPPED = 4,
    C_RC_PT_EQ_DROPPED = 5,
    C_RC_NO_MATCH = 8,
    C_RC_ENTRY_NOT_FOUND = 18,
    C_RC_VNI_NOT_FOUND = 25,
    C_RC_PTLTE_NOT_FOUND = 26,
};

#ifdef __cplusplus
}
#endif

#endif /* SOFTNIC_FI_CXI_EXT_H */

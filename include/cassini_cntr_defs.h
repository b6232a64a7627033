// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * cassini_cntr_defs.h - names of the Cassini telemetry counters that softnic's
 * software NIC keeps, for fi_cxi_dom_ops->cntr_read().
 *
 * softnic's own text. On Slingshot systems this header comes with the Cassini
 * hardware headers and names every counter; here it names the ones fi_cxi(7)
 * mentions and softnic emulates, with the hardware's numbers, plus softnic's own
 * in the last slots. Other ids read as 0.
 */
#ifndef SOFTNIC_CASSINI_CNTR_DEFS_H
#define SOFTNIC_CASSINI_CNTR_DEFS_H

enum c_cntr_type {
    /* Group bases of the numbering. */
    C_CNTR_PI_IPD_BASE = 96,
    C_CNTR_MB_BASE = 224,
    C_CNTR_CQ_BASE = 480,
    C_CNTR_LPE_BASE = 992,
    C_CNTR_HNI_BASE = 1504,

    /* Target: operations that completed successfully. */
    C_CNTR_LPE_SUCCESS_CNTR = 992,
    /* Target: writes that hit the optimized-MR cache. */
    C_CNTR_LPE_PLEC_HITS = 1047,
    /* Target: packets of the ordinary (unrestricted) format. */
    C_CNTR_IXE_RX_PTL_UNRESTRICTED_PKT = 1175,
    /* Target: low-overhead (restricted) packets: optimized RMA, unreliable AMOs. */
    C_CNTR_IXE_RX_PTL_RESTRICTED_PKT = 1178,
    /* Initiator: high-rate put acknowledgements (FI_CXI_HRP). */
    C_CNTR_HNI_HRP_ACK = 1582,

    /* softnic's own. */
    SOFTNIC_CNTR_HMEM_IPC = 2523,        /* device messages copied device to device (CUDA IPC) */
    SOFTNIC_CNTR_COLL_BOARD = 2524,      /* collective contributions read from a board */
    SOFTNIC_CNTR_VNI_DROPPED = 2525,     /* packets of another VNI, dropped */
    SOFTNIC_CNTR_SINGLE_COPY_RMA = 2526, /* one-sided operations done in one copy */
    SOFTNIC_CNTR_DROPPED_PKTS = 2527,    /* malformed packets, dropped */

    C1_CNTR_SIZE = 2528,
};

#endif /* SOFTNIC_CASSINI_CNTR_DEFS_H */

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// FI_CXI_* runtime parameters: every variable of the seed page, with its software meaning
// (docs/man/fi_cxi.7.md says what each one does here).
#pragma once

#include <cstddef>
#include <string>

#include "transport/udp/fault.hpp"

struct fi_provider;

namespace softnic::cxi {

struct Env {
    // Protocol selection.
    size_t rdzv_threshold = 16384;
    size_t rdzv_get_min = 2049;
    size_t rdzv_eager_size = 2048;
    bool rdzv_offload = true;  // false: the "eager rendezvous" flavour
    // Unexpected-message space and matching.
    size_t oflow_buf_size = 12 * 1024 * 1024;
    size_t oflow_buf_count = 3;
    bool msg_offload = true;  // false: software matching with request buffers
    std::string rx_match_mode = "hardware";
    size_t req_buf_size = 12 * 1024 * 1024;
    size_t req_buf_count = 6;
    bool fc_recovery = true;
    int fc_retry_usec_delay = 1000;
    // FI_PROTO_CXI_RNR: how long a sender keeps retrying a message nobody receives, and
    // whether a truncated receive completes successfully (flagged FI_CXI_TRUNC).
    int rnr_max_timeout_us = 500000;
    bool trunc_ok = false;
    // Collectives: how often a member waited for is looked at, and how long a call may
    // wait for its members before it fails (FI_CXI_COLL_RETRY_USEC / _TIMEOUT_USEC).
    int coll_retry_usec = 32000;
    int coll_timeout_usec = 20000000;
    // Accepted for compatibility; documented as having no effect in software.
    bool odp = false, ats = false, optimized_mrs = true;
    // A soft NIC needs no second MR entry for remote CQ data, so fi_writedata is on by
    // default, towards every provider key. Set to 1 explicitly, the variable also brings
    // upstream's key layout: bit 59 on every key and no optimized keys (writedata_layout).
    bool enable_writedata = true;
    bool writedata_layout = false;
    bool enable_trig_op_limit = false;
    std::string ats_mlock_mode = "all", llring_mode = "idle", cq_policy = "low_empty";
    size_t eq_ack_batch_size = 32;
    // Resources.
    size_t default_vni = 10;
    size_t default_cq_size = 131072;
    size_t default_tx_size = 1024;
    size_t default_rx_size = 1024;
    std::string device_name;  // FI_CXI_DEVICE_NAME filter
    // softnic's own.
    std::string soft_nics;  // FI_CXI_SOFT_NICS
    size_t shm_ring_cells = 256;
    size_t shm_cell_size = 4096;
    bool shm_cma = true;
    size_t shm_stream_max = 512 * 1024;
    int udp_port_base = 20480;
    size_t udp_mtu = 0;
    size_t udp_retry_limit = 20;
    size_t udp_dead_timeout = 10000;               // ms
    bool fork_safe = false, fork_safe_hp = false;  // CXI_FORK_SAFE, CXI_FORK_SAFE_HP
    size_t udp_window = 256;
    bool udp_gso = true;
    std::string faults;
    transport::udp::FaultConfig fault_config;
    bool offload = true;
    bool serial_domain = true;  // FI_THREAD_DOMAIN: no locked instruction on the data path

    // Largest message sent eagerly in full.
    size_t eager_max() const { return rdzv_threshold + rdzv_get_min; }
    // Bytes of unexpected payload the receiver may hold.
    size_t unexpected_budget() const {
        return msg_offload ? oflow_buf_size * oflow_buf_count : req_buf_size * req_buf_count;
    }
};

void define_params(const fi_provider *prov);
// Read the variables and apply the threshold fix-ups (spec §4.3). Called once.
void load_env(const fi_provider *prov);
const Env &env();

}  // namespace softnic::cxi

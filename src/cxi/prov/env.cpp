// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "cxi/prov/env.hpp"

#include <strings.h>

#include <algorithm>
#include <cstdlib>

#include "common/log.hpp"
#include "common/params.hpp"
#include "transport/shm/shm_transport.hpp"
#include "transport/udp/fault.hpp"

namespace softnic::cxi {
namespace {

Env g_env;

struct ParamDef {
    enum Kind { kBool, kInt, kSize, kStr } kind;
    const char *name;
    const char *help;
};

// Name (lower case; the core adds FI_CXI_) and help text of every variable we read.
const ParamDef kParams[] = {
    {ParamDef::kBool, "odp", "Enable on-demand paging (software: memory is never pinned)."},
    {ParamDef::kBool, "ats", "Enable PCIe ATS translation (no effect in software)."},
    {ParamDef::kStr, "ats_mlock_mode", "ATS mlock mode: off or all (no effect in software)."},
    {ParamDef::kBool, "rdzv_offload",
     "Offloaded rendezvous (pull after match); 0 sends the "
     "whole payload with the header (eager rendezvous)."},
    {ParamDef::kSize, "rdzv_threshold", "Message size threshold for the rendezvous protocol."},
    {ParamDef::kBool, "fc_recovery",
     "Enable message flow-control recovery (lossless back-pressure)."},
    {ParamDef::kSize, "rdzv_get_min", "Minimum rendezvous Get payload size."},
    {ParamDef::kSize, "rdzv_eager_size", "Eager data size of a rendezvous message."},
    {ParamDef::kSize, "oflow_buf_size", "Overflow (unexpected message) buffer size."},
    {ParamDef::kSize, "oflow_buf_count", "Overflow buffer count."},
    {ParamDef::kBool, "optimized_mrs", "Enable optimized memory regions (keys 0-99)."},
    {ParamDef::kBool, "enable_writedata",
     "fi_writedata with provider keys and a CQ data size: on by default (softnic); set to "
     "1, also upstream's MR key layout (no optimized keys), to 0, off."},
    {ParamDef::kBool, "enable_trig_op_limit",
     "Enforce the triggered-operation budget across the processes of a NIC "
     "(named semaphore); none left: -FI_ENOSPC."},
    {ParamDef::kStr, "llring_mode", "Low-latency command ring policy: idle, always, never."},
    {ParamDef::kStr, "cq_policy", "Command queue write-back policy (no effect in software)."},
    {ParamDef::kSize, "default_vni", "Default VNI value (masked to 16 bits)."},
    {ParamDef::kSize, "eq_ack_batch_size", "Events processed before acknowledging the queue."},
    {ParamDef::kBool, "msg_offload",
     "Message matching offload; 0 = software matching into "
     "request buffers."},
    {ParamDef::kSize, "req_buf_size", "Size of request buffers (software matching)."},
    {ParamDef::kInt, "req_buf_count", "Number of request buffers (software matching)."},
    {ParamDef::kInt, "fc_retry_usec_delay",
     "Microseconds before retrying a dropped flow-control "
     "message."},
    {ParamDef::kInt, "rnr_max_timeout_us",
     "FI_PROTO_CXI_RNR: microseconds a sender retries a message no receive takes."},
    {ParamDef::kInt, "rnr_append_retry_timeout_us",
     "FI_PROTO_CXI_RNR: retry window for receive-append failures (appends never fail in "
     "software)."},
    {ParamDef::kBool, "trunc_ok",
     "FI_PROTO_CXI_RNR: a truncated receive completes successfully, flagged FI_CXI_TRUNC."},
    {ParamDef::kStr, "rx_match_mode", "Receive match mode: hardware, software or hybrid."},
    {ParamDef::kStr, "coll_job_id", "Collectives: job identity (no fabric manager in software)."},
    {ParamDef::kStr, "coll_job_step_id", "Collectives: job step identity (no effect)."},
    {ParamDef::kStr, "coll_fabric_mgr_url",
     "Collectives: fabric manager URL, http:// or https:// (none is needed in software)."},
    {ParamDef::kStr, "coll_mcast_token", "Collectives: fabric manager token (no effect)."},
    {ParamDef::kBool, "coll_use_dma_put", "Collectives: DMA put for results (no effect)."},
    {ParamDef::kInt, "hwcoll_addrs_per_job", "Collectives: multicast addresses (no effect)."},
    {ParamDef::kInt, "hwcoll_min_nodes", "Collectives: hardware threshold (no effect)."},
    {ParamDef::kInt, "coll_retry_usec",
     "Collectives: microseconds between looks at a member waited for (1..32000)."},
    {ParamDef::kInt, "coll_timeout_usec",
     "Collectives: microseconds a call waits for its members before it fails "
     "(1..20000000)."},
    {ParamDef::kInt, "zbcoll_radix", "Collectives: join tree radix, at least 2 (no effect)."},
    {ParamDef::kSize, "default_cq_size", "CQ size when the application gives none."},
    {ParamDef::kSize, "default_tx_size", "Default transmit queue size (16..16384)."},
    {ParamDef::kSize, "default_rx_size", "Default receive queue size (16..15360)."},
    {ParamDef::kStr, "device_name", "Comma list of devices to expose, e.g. cxi0,cxi1."},
    {ParamDef::kStr, "soft_nics",
     "softnic: comma list of IPv4 addresses or interface names "
     "backing cxi0, cxi1, ... (default: the default-route "
     "interface, else loopback)."},
    {ParamDef::kSize, "shm_ring_cells", "softnic: cells in each endpoint's receive ring."},
    {ParamDef::kSize, "shm_cell_size", "softnic: bytes per receive ring cell."},
    {ParamDef::kBool, "shm_cma",
     "softnic: pull rendezvous data with process_vm_readv (1) or "
     "stream it through the rings (0)."},
    {ParamDef::kSize, "shm_stream_max",
     "softnic: within a host, a rendezvous message up to this size travels whole through "
     "the receiver's ring (an unexpected one keeps its header and is pulled later); "
     "above it the receiver pulls the data. 0: always pull."},
    {ParamDef::kInt, "udp_port_base",
     "softnic: UDP port of PID 0 on VNI 0; an endpoint listens on "
     "base + (VNI % 16) * 512 + PID."},
    {ParamDef::kSize, "udp_mtu", "softnic: path MTU towards other hosts (0: the interface's)."},
    {ParamDef::kSize, "udp_retry_limit",
     "softnic: retransmission timeouts in a row before a peer is "
     "declared dead and its operations fail."},
    {ParamDef::kSize, "udp_dead_timeout",
     "softnic: milliseconds a peer must also have been silent before those "
     "timeouts declare it dead (a descheduled process is slow, not dead)."},
    {ParamDef::kSize, "udp_window", "softnic: packets in flight per peer over UDP."},
    {ParamDef::kBool, "udp_gso",
     "softnic: let the kernel segment runs of datagrams (UDP_SEGMENT) "
     "and coalesce received ones (UDP_GRO) where it can."},
    {ParamDef::kStr, "faults",
     "softnic: fault injection on the UDP send path, e.g. "
     "drop=5,dup=2,reorder=3,delay=1,delay_us=500,seed=7 (percentages)."},
    {ParamDef::kBool, "offload",
     "softnic: run the offload helper thread that acknowledges, "
     "retransmits and serves rendezvous reads while the application "
     "is not calling in."},
    {ParamDef::kBool, "serial_domain",
     "softnic: under FI_THREAD_DOMAIN, take no locked instruction on the "
     "data path, under FI_THREAD_COMPLETION no lock of an endpoint's own (the "
     "offload helper comes in through membarrier(2)); 0 = lock as under "
     "FI_THREAD_SAFE."},
};

// The FI_CXI_COLL_* variables: the two timers are ours; the rest are read and checked
// as upstream does, and have no effect (no fabric manager, no multicast tree).
void read_collectives(const fi_provider *p, Env &e) {
    using namespace params;
    std::string url, ignored;
    if (get_str(p, "coll_fabric_mgr_url", url) && url.rfind("http://", 0) != 0 &&
        url.rfind("https://", 0) != 0)
        SN_WARN(FI_LOG_CORE, "FI_CXI_COLL_FABRIC_MGR_URL must start with http:// or https://\n");
    for (const char *name : {"coll_job_id", "coll_job_step_id", "coll_mcast_token"})
        get_str(p, name, ignored);
    bool dma_put = false;
    get_bool(p, "coll_use_dma_put", dma_put);
    int v = 0;
    get_int(p, "hwcoll_addrs_per_job", v);
    get_int(p, "hwcoll_min_nodes", v);
    if (get_int(p, "zbcoll_radix", v) && v < 2)
        SN_WARN(FI_LOG_CORE, "FI_CXI_ZBCOLL_RADIX must be at least 2\n");
    if (get_int(p, "coll_retry_usec", v)) e.coll_retry_usec = std::clamp(v, 1, 32000);
    if (get_int(p, "coll_timeout_usec", v)) e.coll_timeout_usec = std::clamp(v, 1, 20000000);
}

void define_one(const fi_provider *p, const ParamDef &d) {
    switch (d.kind) {
        case ParamDef::kBool:
            params::define_bool(p, d.name, d.help);
            break;
        case ParamDef::kInt:
            params::define_int(p, d.name, d.help);
            break;
        case ParamDef::kSize:
            params::define_size(p, d.name, d.help);
            break;
        case ParamDef::kStr:
            params::define_str(p, d.name, d.help);
            break;
    }
}

void read_all(const fi_provider *p, Env &e) {
    using namespace params;
    get_bool(p, "odp", e.odp);
    get_bool(p, "ats", e.ats);
    get_str(p, "ats_mlock_mode", e.ats_mlock_mode);
    get_bool(p, "rdzv_offload", e.rdzv_offload);
    get_size(p, "rdzv_threshold", e.rdzv_threshold);
    get_bool(p, "fc_recovery", e.fc_recovery);
    get_size(p, "rdzv_get_min", e.rdzv_get_min);
    get_size(p, "rdzv_eager_size", e.rdzv_eager_size);
    get_size(p, "oflow_buf_size", e.oflow_buf_size);
    get_size(p, "oflow_buf_count", e.oflow_buf_count);
    get_bool(p, "optimized_mrs", e.optimized_mrs);
    e.writedata_layout = get_bool(p, "enable_writedata", e.enable_writedata) && e.enable_writedata;
    get_bool(p, "enable_trig_op_limit", e.enable_trig_op_limit);
    get_str(p, "llring_mode", e.llring_mode);
    get_str(p, "cq_policy", e.cq_policy);
    get_size(p, "default_vni", e.default_vni);
    get_size(p, "eq_ack_batch_size", e.eq_ack_batch_size);
    get_bool(p, "msg_offload", e.msg_offload);
    get_size(p, "req_buf_size", e.req_buf_size);
    int req_bufs = int(e.req_buf_count);
    if (get_int(p, "req_buf_count", req_bufs))
        e.req_buf_count = req_bufs < 0 ? 0 : size_t(req_bufs);
    get_int(p, "fc_retry_usec_delay", e.fc_retry_usec_delay);
    get_str(p, "rx_match_mode", e.rx_match_mode);
    if (get_int(p, "rnr_max_timeout_us", e.rnr_max_timeout_us) && e.rnr_max_timeout_us < 0)
        e.rnr_max_timeout_us = 500000;  // negative: the default
    get_bool(p, "trunc_ok", e.trunc_ok);
    read_collectives(p, e);
    get_size(p, "default_cq_size", e.default_cq_size);
    get_size(p, "default_tx_size", e.default_tx_size);
    get_size(p, "default_rx_size", e.default_rx_size);
    get_str(p, "device_name", e.device_name);
    get_str(p, "soft_nics", e.soft_nics);
    get_size(p, "shm_ring_cells", e.shm_ring_cells);
    get_size(p, "shm_cell_size", e.shm_cell_size);
    get_bool(p, "shm_cma", e.shm_cma);
    get_size(p, "shm_stream_max", e.shm_stream_max);
    get_int(p, "udp_port_base", e.udp_port_base);
    get_size(p, "udp_mtu", e.udp_mtu);
    get_size(p, "udp_retry_limit", e.udp_retry_limit);
    get_size(p, "udp_dead_timeout", e.udp_dead_timeout);
    get_size(p, "udp_window", e.udp_window);
    get_bool(p, "udp_gso", e.udp_gso);
    get_str(p, "faults", e.faults);
    get_bool(p, "offload", e.offload);
    get_bool(p, "serial_domain", e.serial_domain);
}

void check_choice(std::string &v, std::initializer_list<const char *> ok, const char *dflt,
                  const char *name) {
    for (const char *o : ok)
        if (!strcasecmp(v.c_str(), o)) return;
    SN_WARN(FI_LOG_CORE, "FI_CXI_%s=%s is not valid, using %s\n", name, v.c_str(), dflt);
    v = dflt;
}

// The seed's and upstream's threshold rules, in upstream's order.
void fix_up(Env &e) {
    constexpr size_t kInjectSize = 192;
    if (e.rdzv_threshold < kInjectSize) e.rdzv_threshold = kInjectSize;
    if (e.rdzv_eager_size > e.rdzv_threshold) e.rdzv_eager_size = e.rdzv_threshold;
    if (e.rdzv_threshold > e.oflow_buf_size) e.rdzv_threshold = 16384;
    if (e.rdzv_get_min > e.oflow_buf_size - e.rdzv_threshold) e.rdzv_get_min = 0;
    check_choice(e.rx_match_mode, {"hardware", "software", "hybrid"}, "hardware", "RX_MATCH_MODE");
    if (!strcasecmp(e.rx_match_mode.c_str(), "software")) e.msg_offload = false;
    if (!e.msg_offload) {
        size_t min = 63 + e.rdzv_threshold + e.rdzv_get_min;
        if (e.req_buf_size < min) e.req_buf_size = min;
        if (e.req_buf_count < 2) e.req_buf_count = 2;
    }
    if (e.oflow_buf_count == 0) e.oflow_buf_count = 1;
    check_choice(e.llring_mode, {"idle", "always", "never"}, "idle", "LLRING_MODE");
    check_choice(e.cq_policy, {"always", "high_empty", "low_empty", "low"}, "low_empty",
                 "CQ_POLICY");
    check_choice(e.ats_mlock_mode, {"off", "all"}, "all", "ATS_MLOCK_MODE");
    e.default_vni &= 0xffff;
    if (e.eq_ack_batch_size == 0) e.eq_ack_batch_size = 1;
    if (e.fc_retry_usec_delay < 0) e.fc_retry_usec_delay = 0;
    if (e.default_cq_size == 0) e.default_cq_size = 131072;
    if (e.default_tx_size < 16 || e.default_tx_size > 16384) e.default_tx_size = 1024;
    if (e.default_rx_size < 16 || e.default_rx_size > 15360) e.default_rx_size = 1024;
    if (e.shm_ring_cells < 16 || (e.shm_ring_cells & (e.shm_ring_cells - 1)))
        e.shm_ring_cells = 256;
    if (e.shm_cell_size < 512 || e.shm_cell_size > 65536 || e.shm_cell_size % 64)
        e.shm_cell_size = 4096;
    if (e.udp_port_base < 1024 || e.udp_port_base > 65535 - 16 * 512) {
        SN_WARN(FI_LOG_CORE, "FI_CXI_UDP_PORT_BASE=%d leaves no room, using 20480\n",
                e.udp_port_base);
        e.udp_port_base = 20480;
    }
    if (e.udp_mtu && (e.udp_mtu < 576 || e.udp_mtu > 65535)) e.udp_mtu = 0;
    if (e.udp_retry_limit == 0) e.udp_retry_limit = 1;
    e.udp_dead_timeout = std::min<size_t>(e.udp_dead_timeout, 3600 * 1000);
    if (e.udp_window < 16 || e.udp_window > 4096) e.udp_window = 256;
    std::string why;
    if (!transport::udp::parse_faults(e.faults, e.fault_config, why)) {
        SN_WARN(FI_LOG_CORE, "FI_CXI_FAULTS ignored: %s\n", why.c_str());
        e.fault_config = {};
    }
}

}  // namespace

void define_params(const fi_provider *prov) {
    for (const auto &d : kParams)
        define_one(prov, d);
}

// libcxi's fork-safety variables (fi_cxi(7) "Fork"). On the hardware they keep pinned
// buffers out of children; a soft NIC pins nothing, so the parent's transfers are safe
// across fork with or without them and there is nothing more to do.
void read_fork_safety(Env &e) {
    e.fork_safe = std::getenv("CXI_FORK_SAFE") != nullptr;
    e.fork_safe_hp = std::getenv("CXI_FORK_SAFE_HP") != nullptr;
    if (e.fork_safe || e.fork_safe_hp)
        SN_INFO(FI_LOG_CORE,
                "CXI_FORK_SAFE%s: a soft NIC pins no memory; transfers are fork-safe as is\n",
                e.fork_safe_hp ? "_HP" : "");
}

void load_env(const fi_provider *prov) {
    read_all(prov, g_env);
    fix_up(g_env);
    read_fork_safety(g_env);
    transport::shm::set_single_copy(g_env.shm_cma);
}

const Env &env() {
    return g_env;
}

}  // namespace softnic::cxi

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The cxi domain: one soft NIC, its memory registrations, its table of peers (the links
// its endpoints share), and the emulated hardware counters.
#pragma once

#include <cassini_cntr_defs.h>
#include <rdma/fi_domain.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/fi_api.hpp"
#include "common/fid.hpp"
#include "common/mr.hpp"
#include "common/serial.hpp"
#include "cxi/obj/deferred.hpp"
#include "cxi/prov/auth.hpp"
#include "cxi/prov/nic.hpp"
#include "transport/ports.hpp"
#include "transport/shm/window.hpp"

namespace softnic::cxi {

class Fabric;

// Emulated Cassini telemetry, read through the cntr_read domain extension; the ids are
// the public <cassini_cntr_defs.h>'s.
using HwCounter = c_cntr_type;

class Domain {
  public:
    // `hold` has already counted the domain's address context (AC).
    Domain(Fabric &fabric, const fi_info &info, const SoftNic &nic, void *context, AuthKey key,
           std::shared_ptr<ServiceHold> hold);
    ~Domain();
    Domain(const Domain &) = delete;
    Domain &operator=(const Domain &) = delete;

    fid_domain *fid() { return &handle_.fid; }
    const SoftNic &nic() const { return nic_; }
    uint16_t vni() const { return vni_; }
    uint32_t svc_id() const { return svc_id_; }
    // FI_AV_AUTH_KEY: endpoints take their keys (up to max_ep_auth_key) from the AV.
    size_t av_auth_keys() const {
#if SOFTNIC_HAS_AV_AUTH_KEY
        const fi_domain_attr &d = *info_->domain_attr;
        return d.auth_key_size == kAvAuthKey ? std::max<size_t>(d.max_ep_auth_key, 1) : 0;
#else
        return 0;
#endif
    }
    // The service's resource accounting; objects keep a reference until they close.
    const std::shared_ptr<ServiceHold> &service() const {
        return hold_;
    }
    const fi_info &info() const {
        return *info_;
    }
    // The application's libfabric API version (the fabric's).
    uint32_t api_version() const;
    MrTable &mrs() {
        return mrs_;
    }
    DeferredQueue &deferred() {
        return deferred_;
    }
    // FI_THREAD_DOMAIN (and membarrier(2), and FI_CXI_SERIAL_DOMAIN): the data path's
    // locks become one flag the application writes (common/serial.hpp); else null.
    DomainSerial *serial() {
        return serial_.get();
    }
    // FI_THREAD_COMPLETION (with membarrier(2) and FI_CXI_SERIAL_DOMAIN): each engine is
    // serialised on its own (PidEngine's own DomainSerial); the domain keeps its locks.
    bool completion_serial() const {
        return completion_serial_;
    }
    // fi_writedata needs FI_CXI_ENABLE_WRITEDATA, provider keys and CQ data.
    bool writedata() const;
    // Whether a remote key names an optimized MR (the restricted, unordered path).
    bool optimized_key(uint64_t key) const;
    RefCount &refs() {
        return refs_;
    }
    int bind_eq(struct fid *eq);

    // Settings changed through fi_control / the domain extensions.
    struct Options {
        bool optimized_mrs = true, mr_match_events = false, prov_key_cache = true;
        bool hybrid_mr_desc = false;
        std::string rx_match_mode = "hardware";
        size_t req_buf_size = 0;
    };
    Options &options() {
        return options_;
    }

    // How this NIC's endpoints talk to other hosts (path MTU, window, faults...).
    const transport::udp::UdpConfig &udp_config() const {
        return udp_cfg_;
    }

    // The links the endpoints of this NIC share, by peer (those of a transport that
    // can share them: shared memory). They live as long as the domain.
    transport::PeerTable &peers() {
        return peers_;
    }

    // Single-copy one-sided operations within the host (local_rma.cpp): the word our
    // rings publish, and the window of the endpoint behind a shared-memory link (null
    // when it has none we can use).
    uint64_t window_attachment(bool needs_events) const;
    transport::shm::WindowView *window_of(transport::Link *link);
    transport::shm::Window *window() {
        return window_.get();
    }  // null: none could be made

    // Our own counting stays in process memory (the message path counts); what local
    // initiators count for us (single-copy writes) lands in the window's copy.
    // Every caller holds an engine's lock: in a serialised domain, that makes this
    // thread the only writer.
    void count(unsigned id, uint64_t n = 1) {
        if (serial_)
            hw_[id].store(hw_[id].load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
        else
            hw_[id].fetch_add(n, std::memory_order_relaxed);
    }
    uint64_t hw_counter(unsigned id) const {
        uint64_t v = hw_[id].load(std::memory_order_relaxed);
        return remote_hw_ ? v + remote_hw_[id].load(std::memory_order_relaxed) : v;
    }

  private:
    void open_window();
    uint64_t prov_key(const Mr &mr, uint64_t seq);
    void mr_withdrawn(uint64_t key);

    Handle<fid_domain, Domain> handle_;
    Fabric &fabric_;
    const SoftNic nic_;
    uint16_t vni_;
    uint32_t svc_id_;
    std::shared_ptr<ServiceHold> hold_;
    fi_info *info_;
    MrTable mrs_;
    DeferredQueue deferred_;
    struct fid *eq_ = nullptr;
    Options options_;
    transport::udp::UdpConfig udp_cfg_;
    transport::PeerTable peers_;
    std::mutex views_lock_;
    std::unordered_map<const transport::Link *, std::unique_ptr<transport::shm::WindowView>>
        views_;  // by link, null when unusable; under views_lock_
    std::vector<bool> mr_ids_ = std::vector<bool>(1u << 16);  // provider-key MR ids in use
    uint32_t mr_id_free_ = 0;                                 // the lowest id that may be free
    std::unique_ptr<transport::shm::Window> window_;
    uint32_t window_seq_ = 0;
    std::array<std::atomic<uint64_t>, C1_CNTR_SIZE> hw_{};
    std::atomic<uint64_t> *remote_hw_ = nullptr;  // in the window
    std::unique_ptr<DomainSerial> serial_;
    bool completion_serial_ = false;
    RefCount refs_;
};

int domain_open(fid_fabric *fabric, fi_info *info, fid_domain **domain, void *context);

}  // namespace softnic::cxi

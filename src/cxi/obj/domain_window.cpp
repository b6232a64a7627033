// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The domain's memory window: the remotely accessible MRs (and the telemetry counters)
// it publishes in shared memory for initiators on the same soft NIC (local_rma.cpp), the
// attachment word its rings carry, and the windows of the peers behind its links.
#include <unistd.h>

#include "common/log.hpp"
#include "cxi/obj/domain.hpp"

namespace softnic::cxi {
namespace {

constexpr uint32_t kWindowSlots = 1024;
constexpr uint32_t kWindowBoards = 64;  // collective groups of the domain's endpoints
// The attachment word of our rings: which window, and whether it may be used.
constexpr uint64_t kAttachValid = 1ULL << 63;
constexpr uint64_t kAttachEvents = 1ULL << 62;  // the endpoint counts remote operations

std::atomic<uint32_t> g_window_seq{0};

}  // namespace

void Domain::open_window() {
    int err = 0;
    window_seq_ = ++g_window_seq;
    window_ = transport::shm::Window::create(transport::shm::window_name(getpid(), window_seq_),
                                             C1_CNTR_SIZE, kWindowSlots, kWindowBoards, err);
    if (!window_) {
        SN_WARN(FI_LOG_DOMAIN, "no memory window (%s): local RMA goes through the rings\n",
                strerror(-err));
        return;
    }
    remote_hw_ = window_->counters();
    mrs_.on_publish = [this](const Mr &mr, uint64_t key) {
        // A peer's process_vm_* cannot reach device memory: the packet path (whose target
        // copies through the driver) is the only one.
        if (!mr.where().host()) return;
        if (!window_->publish(key, reinterpret_cast<uint64_t>(mr.base()), mr.len(), mr.access()))
            SN_DBG(FI_LOG_MR, "window full: key 0x%lx is reached by packets only\n", key);
    };
}

uint64_t Domain::window_attachment(bool needs_events) const {
    if (!window_) return 0;
    return kAttachValid | (needs_events ? kAttachEvents : 0) | window_seq_;
}

transport::shm::WindowView *Domain::window_of(transport::Link *link) {
    std::lock_guard<std::mutex> g(views_lock_);
    auto it = views_.find(link);
    if (it != views_.end()) return it->second.get();
    std::unique_ptr<transport::shm::WindowView> view;
    if (transport::BulkAccess *b = link->bulk()) {
        uint64_t att = b->attachment();
        if ((att & kAttachValid) && !(att & kAttachEvents))
            view = transport::shm::WindowView::open(
                transport::shm::window_name(b->process(), uint32_t(att)), b->process());
    }
    return (views_[link] = std::move(view)).get();
}

}  // namespace softnic::cxi

// Single-copy one-sided operations within a host. Each domain publishes its remotely
// accessible MRs (and its telemetry counters) in a shared-memory window; its rings
// name the window. An initiator on the same soft NIC checks key, bounds and access in
// the target's window and copies with process_vm_writev/readv: no packet, and no help
// from the target process. Anything the window cannot settle (an unknown key, a
// target that wants events, earlier operations still in flight) takes the packet path,
// whose target gives the verdict.
#include <rdma/fi_cxi_ext.h>
#include <unistd.h>

#include "common/log.hpp"
#include "cxi/context.hpp"
#include "cxi/domain.hpp"

namespace softnic::cxi {
namespace {

constexpr uint32_t kWindowSlots = 1024;
// The attachment word of our rings: which window, and whether it may be used.
constexpr uint64_t kAttachValid = 1ULL << 63;
constexpr uint64_t kAttachEvents = 1ULL << 62;  // the endpoint counts remote operations

std::atomic<uint32_t> g_window_seq{0};

void bump(transport::shm::WindowView *w, unsigned id) {
    if (std::atomic<uint64_t> *c = w->counter(id)) c->fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

void Domain::open_window() {
    int err = 0;
    window_seq_ = ++g_window_seq;
    window_ = transport::shm::Window::create(transport::shm::window_name(getpid(), window_seq_),
                                             C1_CNTR_SIZE, kWindowSlots, err);
    if (!window_) {
        SN_WARN(FI_LOG_DOMAIN, "no memory window (%s): local RMA goes through the rings\n",
                strerror(-err));
        return;
    }
    remote_hw_ = window_->counters();
    mrs_.on_publish = [this](const Mr &mr, uint64_t key) {
        if (!window_->publish(key, reinterpret_cast<uint64_t>(mr.base()), mr.len(), mr.access()))
            SN_DBG(FI_LOG_MR, "window full: key 0x%lx is reached by packets only\n", key);
    };
}

uint64_t Domain::window_attachment(bool needs_events) const {
    if (!window_) return 0;
    return kAttachValid | (needs_events ? kAttachEvents : 0) | window_seq_;
}

transport::shm::WindowView *Domain::window_of(transport::Link *link) {
    std::lock_guard<std::mutex> g(links_lock_);
    auto it = views_.find(link);
    if (it != views_.end()) return it->second.get();
    std::unique_ptr<transport::shm::WindowView> view;
    for (auto &l : all_links_) {
        if (l.get() != link) continue;
        uint64_t att = l->attachment();
        if ((att & kAttachValid) && !(att & kAttachEvents))
            view = transport::shm::WindowView::open(
                transport::shm::window_name(l->owner(), uint32_t(att)), l->owner());
        break;
    }
    return (views_[link] = std::move(view)).get();
}

transport::shm::WindowView *Context::window_for(transport::Link *link) {
    auto it = windows_.find(link);
    if (it != windows_.end()) return it->second;
    return windows_[link] = domain_.window_of(link);
}

// True when the operation was carried out (and completed) here.
bool Context::rma_single_copy(const SendArgs &a, transport::Link *link) {
    if ((a.kind != OpKind::kWrite && a.kind != OpKind::kRead) || !a.len) return false;
    // Operations still in flight go first, in order (FI_ORDER_*, FI_FENCE).
    if (tx_outstanding_ || (a.flags & FI_REMOTE_CQ_DATA)) return false;
    transport::BulkAccess *bulk = link->bulk();
    if (!bulk) return false;
    transport::shm::WindowView *w = window_for(link);
    if (!w) return false;
    const bool write = a.kind == OpKind::kWrite;
    transport::shm::WindowView::Ticket t;
    uint64_t addr = 0;
    if (!w->enter(a.rkey, a.raddr, a.len, write ? FI_REMOTE_WRITE : FI_REMOTE_READ, addr, t))
        return false;
    ssize_t n = write ? bulk->write(addr, a.buf, a.len)
                      : bulk->read(const_cast<void *>(a.buf), addr, a.len);
    w->leave(t);
    if (n != ssize_t(a.len)) return false;  // e.g. the target unmapped it: its verdict
    if (write) {                            // the target NIC's telemetry, as on the packet path
        bump(w,
             a.restricted ? C_CNTR_IXE_RX_PTL_RESTRICTED_PKT : C_CNTR_IXE_RX_PTL_UNRESTRICTED_PKT);
        if (a.restricted) bump(w, C_CNTR_LPE_PLEC_HITS);
        bump(w, C_CNTR_LPE_SUCCESS_CNTR);
    }
    domain_.count(SOFTNIC_CNTR_SINGLE_COPY_RMA);
    complete_send(a, 0, 0);
    return true;
}

}  // namespace softnic::cxi

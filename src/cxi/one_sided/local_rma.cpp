// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
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
#include "cxi/core/pid_engine.hpp"
#include "cxi/obj/domain.hpp"

namespace softnic::cxi {
namespace {

void bump(transport::shm::WindowView *w, unsigned id) {
    if (std::atomic<uint64_t> *c = w->counter(id)) c->fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

transport::shm::WindowView *OneSided::window_for(transport::Link *link) {
    auto it = windows_.find(link);
    if (it != windows_.end()) return it->second;
    return windows_[link] = domain_.window_of(link);
}

// True when the operation was carried out (and completed) here.
bool OneSided::single_copy(const SendArgs &a, transport::Link *link) {
    if ((a.kind != OpKind::kWrite && a.kind != OpKind::kRead) || !a.len) return false;
    // Operations still in flight go first, in order (FI_ORDER_*, FI_FENCE).
    if (engine_.tx().outstanding() || (a.flags & FI_REMOTE_CQ_DATA)) return false;
    transport::BulkAccess *bulk = link->bulk();
    if (!bulk) return false;
    transport::shm::WindowView *w = window_for(link);
    if (!w) return false;
    const bool write = a.kind == OpKind::kWrite;
    transport::shm::WindowView::Ticket t;
    uint64_t addr = 0;
    if (!w->enter(a.rma.key, a.rma.addr, a.len, write ? FI_REMOTE_WRITE : FI_REMOTE_READ, addr, t))
        return false;
    ssize_t n = write ? bulk->write(addr, a.buf, a.len)
                      : bulk->read(const_cast<void *>(a.buf), addr, a.len);
    w->leave(t);
    if (n != ssize_t(a.len)) return false;  // e.g. the target unmapped it: its verdict
    if (write) {                            // the target NIC's telemetry, as on the packet path
        bump(w, a.rma.restricted ? C_CNTR_IXE_RX_PTL_RESTRICTED_PKT
                                 : C_CNTR_IXE_RX_PTL_UNRESTRICTED_PKT);
        if (a.rma.restricted) bump(w, C_CNTR_LPE_PLEC_HITS);
        bump(w, C_CNTR_LPE_SUCCESS_CNTR);
    }
    domain_.count(SOFTNIC_CNTR_SINGLE_COPY_RMA);
    engine_.tx().complete_send(a, 0, 0);
    return true;
}

}  // namespace softnic::cxi

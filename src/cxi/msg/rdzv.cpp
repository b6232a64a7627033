// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Rendezvous, the receiver's side: it pulls what did not travel eagerly, in one copy from the
// sender's memory when the transport can, or by asking the sender to stream it.
#include <rdma/fi_cxi_ext.h>

#include <unistd.h>

#include <cstring>

#include "common/hmem.hpp"
#include "common/log.hpp"
#include "cxi/core/pid_engine.hpp"
#include "cxi/obj/domain.hpp"

namespace softnic::cxi {

constexpr size_t kRealignMin = 64 * 1024;

// The link back to a message's sender (null when it is gone), and a header for it.
transport::Link *RxEngine::link_back(RxMsg *m) {
    int err = 0;
    PeerLinks &links = engine_.links();
    if (!m->src_link)
        m->src_link = links.link_for(m->src_nic, m->src_pid, links.key_vni(m->src_key), err);
    return m->src_link;
}

WireHdr RxEngine::reply_hdr(const RxMsg *m, Pkt type) const {
    return wire_hdr(type, engine_.links().key_vni(m->src_key), engine_.pid(), domain_.nic().addr);
}

void RxEngine::send_done(RxMsg *m, uint16_t flags) {
    link_back(m);
    WireHdr h = reply_hdr(m, Pkt::kDone);
    h.flags = flags;
    h.cookie = m->cookie;
    h.msg_len = m->want;
    engine_.tx().send_ctrl(m->src_link, h);
}

// Device memory of a sender on this host (kWIpc): its export, read from its memory, is
// mapped and copied from, into the device receive buffer itself or into host memory.
// False when that cannot be done: the sender then streams it, staged on its side.
bool RxEngine::pull_device(RxMsg *m) {
    transport::BulkAccess *b = m->src_link->bulk();
    hmem::IpcRef ref;
    if (!b || b->read(&ref, m->rdzv_addr, sizeof(ref)) != ssize_t(sizeof(ref))) return false;
    RecvOp *op = m->op;
    const bool to_device = op->stage != nullptr;
    void *dst = to_device ? op->stage->device_ptr() : m->dst;
    int device = to_device ? op->stage->device() : 0;
    if (m->want &&
        hmem::ipc_copy(ref, b->process() == getpid(), dst, to_device, device, m->want) != 0)
        return false;
    op->landed = to_device;
    domain_.count(SOFTNIC_CNTR_HMEM_IPC);
    send_done(m, m->want < m->msg_len ? kWTrunc : 0);
    complete_rx(m, 0);
    return true;
}

void RxEngine::start_pull(RxMsg *m) {
    if (!link_back(m)) {
        complete_rx(m, FI_EIO);  // the sender is gone
        return;
    }
    const bool device = m->wflags & kWIpc;  // rdzv_addr names no bytes of the message
    if (device && pull_device(m)) return;
    if (transport::BulkAccess *b = device ? nullptr : m->src_link->bulk()) {
        // One read from the start of the buffer: page-aligned copies run faster than
        // skipping the few eager bytes that already arrived.
        size_t from = m->want >= kRealignMin ? 0 : m->pull_from, n = m->want - from;
        ssize_t r = b->read(m->dst + from, m->rdzv_addr + from, n);
        if (r == ssize_t(n)) {
            send_done(m, m->want < m->msg_len ? kWTrunc : 0);
            complete_rx(m, 0);
            return;
        }
        if (r != -EPERM && r != -ENOSYS) {  // a bad address from the peer: fail, do not retry
            SN_WARN(FI_LOG_EP_DATA, "rendezvous read failed: %s\n", fi_strerror(int(-r)));
            fail_msg(m, FI_EIO);
            return;
        }
    }
    // Fallback: the sender streams the data through our ring.
    size_t from = m->pull_from, n = m->want - from;
    m->pulling = true;
    m->dst_cap = m->want;
    inbound_[InKey{m->src_key | kPulledKey, m->cookie}] = m;
    WireHdr h = reply_hdr(m, Pkt::kGetReq);
    h.cookie = m->cookie;
    h.offset = from;
    h.msg_len = n;
    engine_.tx().send_ctrl(m->src_link, h);
}

void RxEngine::fail_msg(RxMsg *m, int err) {
    send_done(m, kWError);
    complete_rx(m, err);
}

}  // namespace softnic::cxi

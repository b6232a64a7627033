// Rendezvous: the receiver pulls what did not travel eagerly, in one copy from the
// sender's memory when the transport can, or by asking the sender to stream it.
#include <rdma/fi_cxi_ext.h>

#include <cstring>

#include "common/log.hpp"
#include "cxi/context.hpp"
#include "cxi/domain.hpp"

namespace softnic::cxi {

constexpr size_t kRealignMin = 64 * 1024;

// A control packet, with at most 16 payload bytes (`data`).
void Context::send_ctrl(transport::Link *link, const WireHdr &h, const void *data) {
    if (!link) return;
    iovec iov{const_cast<void *>(data), h.payload};
    if (ctrl_backlog_.empty() && link->send(&h, sizeof(h), &iov, h.payload ? 1 : 0)) return;
    CtrlPkt &c = ctrl_backlog_.emplace_back(CtrlPkt{link, h, {}});  // retried by progress
    if (h.payload && data) std::memcpy(c.data, data, std::min<size_t>(h.payload, sizeof(c.data)));
}

void Context::send_done(RxMsg *m, uint16_t flags) {
    int err = 0;
    if (!m->src_link) m->src_link = link_for(m->src_nic, m->src_pid, key_vni(m->src_key), err);
    WireHdr h = wire_hdr(Pkt::kDone, key_vni(m->src_key), pid_, domain_.nic().addr);
    h.flags = flags;
    h.cookie = m->cookie;
    h.msg_len = m->want;
    send_ctrl(m->src_link, h);
}

void Context::start_pull(RxMsg *m) {
    int err = 0;
    if (!m->src_link) m->src_link = link_for(m->src_nic, m->src_pid, key_vni(m->src_key), err);
    if (!m->src_link) {
        complete_rx(m, FI_EIO);  // the sender is gone
        return;
    }
    if (transport::BulkAccess *b = m->src_link->bulk()) {
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
    WireHdr h = wire_hdr(Pkt::kGetReq, key_vni(m->src_key), pid_, domain_.nic().addr);
    h.cookie = m->cookie;
    h.offset = from;
    h.msg_len = n;
    send_ctrl(m->src_link, h);
}

void Context::on_get_req(const WireHdr &h) {
    TxOp *op = tx_by_cookie(h.cookie);
    if (!op || !op->rdzv || h.offset > op->a.len || h.msg_len > op->a.len - h.offset) {
        SN_WARN(FI_LOG_EP_DATA, "dropping invalid rendezvous request\n");
        domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
        return;
    }
    op->stream_off = h.offset;
    op->stream_end = h.offset + h.msg_len;
    if (!op->pending) {
        op->pending = true;
        pending_.push_back(op);
        pending_count_++;
    }
    if (!holding_more_) pump_pending();
}

}  // namespace softnic::cxi

// The receiver-not-ready protocol (FI_PROTO_CXI_RNR). A receiver has no unexpected
// list: a message that finds no posted receive is refused (kDone|kWRnr) and forgotten.
// Its sender keeps the operation and sends it again after delays of 1, 11, 81, 271,
// 641 ... microseconds (1 + 10 n^3), until the endpoint's retry budget is spent; then the
// send fails with FI_EIO and C_RC_ENTRY_NOT_FOUND, as the hardware reports it.
#include <rdma/fi_cxi_ext.h>

#include <algorithm>
#include <chrono>

#include "common/log.hpp"
#include "cxi/context.hpp"
#include "cxi/domain.hpp"

namespace softnic::cxi {
namespace {

uint64_t now_us() {
    using namespace std::chrono;
    return uint64_t(duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count());
}

uint64_t backoff_us(uint32_t tries) {
    uint64_t n = std::min<uint32_t>(tries, 1000);
    return 1 + 10 * n * n * n;
}

}  // namespace

// Receiver side: true when the message was refused (no posted receive, and its sender
// retries). A sender that does not retry still gets its message kept as unexpected.
bool Context::rnr_refuse(const WireHdr &h) {
    if (!rnr_ || !(h.flags & kWRnrOk)) return false;
    int err = 0;
    transport::Link *link = link_for(h.src_nic, h.src_pid, h.vni, err);
    WireHdr d = wire_hdr(Pkt::kDone, h.vni, pid_, domain_.nic().addr);
    d.flags = kWError | kWRnr;
    d.cookie = h.cookie;
    send_ctrl(link, d);
    return true;
}

// Sender side: the peer refused `op`. Send it again later, or fail it when the budget
// is spent.
void Context::rnr_backoff(TxOp *op) {
    uint64_t now = now_us();
    if (!op->rnr_tries) op->rnr_start_us = now;
    if (now - op->rnr_start_us >= rnr_max_us_) {
        SN_DBG(FI_LOG_EP_DATA, "receiver not ready for %lu us: send fails\n", rnr_max_us_);
        complete_tx(op, FI_EIO, C_RC_ENTRY_NOT_FOUND);
        return;
    }
    op->rnr_due_us = now + backoff_us(op->rnr_tries++);
    op->hdr_sent = false;
    op->sent = 0;
    op->done_seen = false;
    rnr_waiting_.push_back(op);
    work_hint_.store(true, std::memory_order_relaxed);
}

void Context::rnr_resend_due() {
    uint64_t now = now_us();
    bool queued = false;
    for (size_t i = 0; i < rnr_waiting_.size();) {
        TxOp *op = rnr_waiting_[i];
        if (op->rnr_due_us > now) {
            i++;
            continue;
        }
        rnr_waiting_[i] = rnr_waiting_.back();
        rnr_waiting_.pop_back();
        op->pending = true;
        pending_.push_back(op);
        pending_count_++;
        queued = true;
    }
    if (queued && !holding_more_) pump_pending();
}

}  // namespace softnic::cxi

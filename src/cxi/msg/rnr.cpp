// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The receiver-not-ready protocol (FI_PROTO_CXI_RNR), the sender's half. A receiver has
// no unexpected list: a message that finds no posted receive is refused (kDone|kWRnr,
// RxEngine::rnr_refuse) and forgotten. Its sender keeps the operation and sends it again
// after delays of 1, 11, 81, 271, 641 ... microseconds (1 + 10 n^3), until the endpoint's
// retry budget is spent; then the send fails with FI_EIO and C_RC_ENTRY_NOT_FOUND, as the
// hardware reports it.
#include <rdma/fi_cxi_ext.h>

#include <algorithm>

#include "common/clock.hpp"
#include "common/log.hpp"
#include "cxi/core/pid_engine.hpp"

namespace softnic::cxi {
namespace {

uint64_t now_us() {
    return monotonic_ns() / 1000;
}

uint64_t backoff_us(uint32_t tries) {
    uint64_t n = std::min<uint32_t>(tries, 1000);
    return 1 + 10 * n * n * n;
}

}  // namespace

// The peer refused `op`. Send it again later, or fail it when the budget is spent.
void TxEngine::rnr_backoff(TxOp *op) {
    uint64_t now = now_us();
    RnrState &r = op->rnr;
    if (!r.tries) r.start_us = now;
    if (now - r.start_us >= engine_.rnr_max_us()) {
        SN_DBG(FI_LOG_EP_DATA, "receiver not ready for %lu us: send fails\n", engine_.rnr_max_us());
        complete(op, FI_EIO, C_RC_ENTRY_NOT_FOUND);
        return;
    }
    r.due_us = now + backoff_us(r.tries++);
    op->eager.hdr_sent = false;
    op->eager.sent = 0;
    op->eager.done_seen = false;
    rnr_waiting_.push_back(op);
    engine_.note_work();
}

void TxEngine::rnr_resend_due() {
    uint64_t now = now_us();
    bool queued = false;
    for (size_t i = 0; i < rnr_waiting_.size();) {
        TxOp *op = rnr_waiting_[i];
        if (op->rnr.due_us > now) {
            i++;
            continue;
        }
        rnr_waiting_[i] = rnr_waiting_.back();
        rnr_waiting_.pop_back();
        enqueue(op);
        queued = true;
    }
    if (queued && !holding_more_) pump_pending();
}

}  // namespace softnic::cxi

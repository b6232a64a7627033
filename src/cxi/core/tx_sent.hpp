// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A send that succeeded: its counter, and its CQ entry unless it asked for none. Inline,
// for the one-packet send that completes as it is queued (tx_engine.cpp) as well as for
// complete_send (tx_complete.cpp), which handles every other kind and outcome.
#pragma once

#include "common/cntr.hpp"
#include "common/cq.hpp"
#include "cxi/core/pid_engine.hpp"

namespace softnic::cxi {

[[gnu::always_inline]] inline void TxEngine::complete_sent(const SendArgs &a) {
    const CompletionBind &b = engine_.tx_bind();
    Cntr *cntr = a.trig.active ? a.trig.cntr : b.cntr;
    if (cntr) cntr->inc(cntr->counts_bytes() ? a.len : 1);
    if (a.inject_call || !b.cq || (b.selective && !(a.flags & FI_COMPLETION))) return;
    b.cq->push(Completion{a.context, (a.tagged ? FI_TAGGED : FI_MSG) | FI_SEND, 0, nullptr, 0, 0,
                          FI_ADDR_NOTAVAIL});
}

}  // namespace softnic::cxi

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Blocking calls (fi_cq_sread, fi_eq_sread, fi_cntr_wait) poll with progress until a
// result or the timeout; negative timeouts wait forever.
#pragma once

#include <rdma/fabric.h>
#include <sched.h>

#include <chrono>

namespace softnic {

// The wait objects that blocking by polling can honour.
inline bool polled_wait_obj(fi_wait_obj w) {
    return w == FI_WAIT_NONE || w == FI_WAIT_UNSPEC || w == FI_WAIT_YIELD;
}

// Calls step() until it returns true; false when timeout_ms elapsed first.
template <class Step>
bool poll_until(int timeout_ms, Step &&step) {
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + std::chrono::milliseconds(timeout_ms);
    for (unsigned spins = 0;; spins++) {
        if (step()) return true;
        if (timeout_ms >= 0 && clock::now() >= deadline) return false;
        if (spins > 1000) sched_yield();
    }
}

}  // namespace softnic

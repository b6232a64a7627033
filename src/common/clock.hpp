// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The monotonic clock every timer of the providers and transports reads.
#pragma once

#include <cstdint>
#include <ctime>

namespace softnic {

inline uint64_t monotonic_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ULL + uint64_t(ts.tv_nsec);
}

}  // namespace softnic

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "common/call_clock.hpp"

#include <unistd.h>

#include <algorithm>

namespace softnic::call_clock {
namespace {

const char *name(Call c) {
    static const char *const names[] = {"read, found", "read, drain", "read, idle",
                                        "inject",      "send",        "recv"};
    return names[unsigned(c)];
}

// Ticks per ns, against the monotonic clock over 20 ms.
double calibrate() {
    const uint64_t start = monotonic_ns(), t0 = now();
    uint64_t ns;
    while ((ns = monotonic_ns() - start) < 20000000) {
    }
    return double(now() - t0) / double(ns);
}

// What two readings of the clock cost by themselves: the least of many, as each call's
// time includes that once.
uint64_t clock_cost() {
    uint64_t least = ~0ULL;
    for (int i = 0; i < 1000; i++) {
        const uint64_t t0 = now();
        least = std::min(least, now() - t0);
    }
    return least;
}

struct Reporter {
    Tally tally;
    ~Reporter() {
        uint64_t any = 0;
        for (unsigned c = 0; c < unsigned(Call::kCount); c++)
            any += tally.calls(Call(c));
        if (any) tally.report(stderr, calibrate(), clock_cost());
    }
};
Reporter g_reporter;

}  // namespace

Tally &tally() {
    return g_reporter.tally;
}

void Tally::report(FILE *out, double ticks_per_ns, uint64_t clock_ticks) const {
    for (unsigned i = 0; i < unsigned(Call::kCount); i++) {
        if (!calls_[i]) continue;
        const double per = double(ticks_[i]) / double(calls_[i]) - double(clock_ticks);
        fprintf(out, "call_clock %d: %-12s %10lu calls %8.1f ns each\n", int(getpid()),
                name(Call(i)), static_cast<unsigned long>(calls_[i]), per / ticks_per_ns);
    }
    if (ab_blocks_[0] && ab_blocks_[1])
        fprintf(
            out,
            "call_clock %d: a/b off %.1f ns, on %.1f ns a message (%lu, %lu blocks): on/off %.4f\n",
            int(getpid()), ab_ticks(false) / ticks_per_ns, ab_ticks(true) / ticks_per_ns,
            static_cast<unsigned long>(ab_blocks_[0]), static_cast<unsigned long>(ab_blocks_[1]),
            ab_ticks(true) / ab_ticks(false));
}

}  // namespace softnic::call_clock

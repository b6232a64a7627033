// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// How long the data-path calls take where they run, by the CPU's time-stamp counter: a
// measuring build's tool (cmake -DSOFTNIC_CALL_CLOCK=ON; bench/call_times.sh), compiled
// out of every other build. Instruction counts say how much work a call does; this says
// what it costs in time, cache misses included, so a message's line crossing shows up in
// the call that waits for it (the read that finds it, the send that claims its cell).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstdio>

#include "common/clock.hpp"
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace softnic::call_clock {

#ifdef SOFTNIC_CALL_CLOCK
inline constexpr bool kOn = true;
#else
inline constexpr bool kOn = false;
#endif

enum class Call : unsigned {
    kReadFound,  // a CQ read that returned entries
    kReadDrain,  // the first empty read after one that found entries (a drain loop's end)
    kReadIdle,   // any other empty read: a wait
    kInject,     // fi_inject, fi_tinject and their data forms
    kSend,       // the other sends
    kRecv,       // receive posts
    kCount,
    kRead = kCount  // for clocked(): a CQ read, one of the first three by its result
};

// Per process, not per thread: the measured programs call from one thread, and a torn
// count in a threaded one only blurs a measurement.
class Tally {
  public:
    void add(Call c, uint64_t ticks) {
        calls_[unsigned(c)]++;
        ticks_[unsigned(c)] += ticks;
    }
    // A read that took `ticks` and ended at `at`.
    void add_read(ssize_t ret, uint64_t ticks, uint64_t at) {
        add(ret > 0 ? Call::kReadFound : last_found_ ? Call::kReadDrain : Call::kReadIdle, ticks);
        last_found_ = ret > 0;
        if (ret > 0) count_messages(uint64_t(ret), at);
    }
    uint64_t calls(Call c) const { return calls_[unsigned(c)]; }
    uint64_t ticks(Call c) const { return ticks_[unsigned(c)]; }

    // A/B within one run. The entries this process reads are counted in blocks of
    // kAbBlock, and every other block is "on": a change under trial, guarded by ab_on(),
    // runs in those only, so that both halves see the same machine (a VM's change of
    // mode moves whole runs by 20 % here). Both sides of a ping-pong read in step, so
    // their blocks agree. The first kAbWarm blocks are left out.
    static constexpr uint64_t kAbBlock = 4096, kAbWarm = 10;
    bool ab_on() const { return (messages_ / kAbBlock) & 1; }
    // Ticks per message in the off and on blocks measured so far (0 before any).
    double ab_ticks(bool on) const {
        return ab_blocks_[on] ? double(ab_ticks_[on]) / double(ab_blocks_[on] * kAbBlock) : 0;
    }

    // One line per kind of call made: calls and ns per call, the clock's own cost taken
    // off; then the A/B line when both halves were measured.
    void report(FILE *out, double ticks_per_ns, uint64_t clock_ticks) const;

  private:
    void count_messages(uint64_t n, uint64_t at) {
        const uint64_t before = messages_ / kAbBlock;
        messages_ += n;
        if (messages_ / kAbBlock == before) return;  // a block ends here
        if (before >= kAbWarm) {
            ab_ticks_[before & 1] += at - block_start_;
            ab_blocks_[before & 1]++;
        }
        block_start_ = at;
    }

    uint64_t calls_[unsigned(Call::kCount)] = {}, ticks_[unsigned(Call::kCount)] = {};
    bool last_found_ = false;
    uint64_t messages_ = 0, block_start_ = 0, ab_ticks_[2] = {}, ab_blocks_[2] = {};
};

// The process's tally, reported to stderr at exit when it counted anything.
Tally &tally();

inline uint64_t now() {
#if defined(__x86_64__)
    return __rdtsc();
#else
    return monotonic_ns();
#endif
}

// An ops table's entry: `Fn` itself, or in a measuring build `Fn` timed as a `C` call
// (kRead: sorted by what it returned). Wrapping the table's entries, not the code behind
// them, leaves every other build's code as it was.
template <Call C, auto Fn>
struct Clocked;
template <Call C, class... A, ssize_t (*Fn)(A...)>
struct Clocked<C, Fn> {
    static ssize_t call(A... a) {
        const uint64_t t0 = now();
        const ssize_t ret = Fn(a...);
        const uint64_t t1 = now();
        if constexpr (C == Call::kRead)
            tally().add_read(ret, t1 - t0, t1);
        else
            tally().add(C, t1 - t0);
        return ret;
    }
};
// Whether a change under trial runs now (Tally's A/B): never outside a measuring build.
inline bool ab_on() {
    if constexpr (kOn) return tally().ab_on();
    return false;
}

template <Call C, auto Fn>
constexpr auto clocked() {
    if constexpr (kOn)
        return &Clocked<C, Fn>::call;
    else
        return Fn;
}

}  // namespace softnic::call_clock

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
#include <ctime>
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
    void add_read(ssize_t ret, uint64_t ticks) {
        add(ret > 0 ? Call::kReadFound : last_found_ ? Call::kReadDrain : Call::kReadIdle, ticks);
        last_found_ = ret > 0;
    }
    uint64_t calls(Call c) const { return calls_[unsigned(c)]; }
    uint64_t ticks(Call c) const { return ticks_[unsigned(c)]; }
    // One line per kind of call made: calls and ns per call, the clock's own cost taken off.
    void report(FILE *out, double ticks_per_ns, uint64_t clock_ticks) const;

  private:
    uint64_t calls_[unsigned(Call::kCount)] = {}, ticks_[unsigned(Call::kCount)] = {};
    bool last_found_ = false;
};

// The process's tally, reported to stderr at exit when it counted anything.
Tally &tally();

inline uint64_t now() {
#if defined(__x86_64__)
    return __rdtsc();
#else
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
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
        if constexpr (C == Call::kRead)
            tally().add_read(ret, now() - t0);
        else
            tally().add(C, now() - t0);
        return ret;
    }
};
template <Call C, auto Fn>
constexpr auto clocked() {
    if constexpr (kOn)
        return &Clocked<C, Fn>::call;
    else
        return Fn;
}

}  // namespace softnic::call_clock

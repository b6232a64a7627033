// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* The bare cache-line exchange under every ping-pong within a host, shared by
 * bench/line_floor.c (the floor alone) and bench/floor_ratio.c (the floor beside a
 * provider's ping-pong): a clock, CPU pinning, and the bounce itself. */
#ifndef SOFTNIC_BENCH_LINE_BOUNCE_H
#define SOFTNIC_BENCH_LINE_BOUNCE_H

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

static inline double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static inline void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof(set), &set);
}

/* Rounds first+1 .. first+count of the exchange: the starting side writes the round's
 * number into `ping` and waits for it in `pong`; the answering side waits for it in
 * `ping` and writes it into `pong`. Two lines a page apart, one writer each. */
static inline void line_bounce(_Atomic uint64_t *ping, _Atomic uint64_t *pong, uint64_t first,
                               uint64_t count, int answering) {
    for (uint64_t i = first + 1; i <= first + count; i++) {
        if (answering) {
            while (atomic_load_explicit(ping, memory_order_acquire) != i) {
            }
            atomic_store_explicit(pong, i, memory_order_release);
        } else {
            atomic_store_explicit(ping, i, memory_order_release);
            while (atomic_load_explicit(pong, memory_order_acquire) != i) {
            }
        }
    }
}

#endif

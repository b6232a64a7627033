// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* line_floor: the floor under any ping-pong through shared memory on this host. Two
 * processes, one per CPU, bounce a counter: each waits for the other's value in one
 * cache line and answers in another. What is measured is a cache line crossing between
 * the two cores, once each way, and nothing else; a transport within a host moves at
 * least one line per message, so its one-way latency is this plus its own work.
 *
 *   line_floor [iterations] [cpu_a cpu_b]
 *
 * Prints "one-way NNN.N ns". */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "line_bounce.h"

int main(int argc, char **argv) {
    long iters = argc > 1 ? atol(argv[1]) : 1000000;
    int cpu_a = argc > 3 ? atoi(argv[2]) : 0, cpu_b = argc > 3 ? atoi(argv[3]) : 1;
    /* two lines a page apart: the ping's and the pong's */
    char *page = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) return 1;
    _Atomic uint64_t *ping = (_Atomic uint64_t *)page, *pong = (_Atomic uint64_t *)(page + 4096);
    pid_t child = fork();
    if (child < 0) return 1;
    if (child == 0) {
        pin(cpu_b);
        line_bounce(ping, pong, 0, (uint64_t)iters, 1);
        _exit(0);
    }
    pin(cpu_a);
    double t0 = now_ns();
    line_bounce(ping, pong, 0, (uint64_t)iters, 0);
    double t = now_ns() - t0;
    waitpid(child, NULL, 0);
    printf("one-way %.1f ns\n", t / iters / 2);
    return 0;
}

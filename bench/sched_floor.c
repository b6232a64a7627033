// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* sched_floor: the floor under any 8-byte allreduce among N processes on this host, with
 * no transport at all. N processes share one page; in each round every process raises
 * its own counter (its "contribution", one store) and waits until every counter reached
 * the round (it "sees every contribution"), yielding the CPU between looks when there are
 * more processes than CPUs, as the ranks of bench/coll.sh do (Open MPI's
 * mpi_yield_when_idle, coll_mpi's sched_yield between CQ polls). What is left is the
 * cost of getting every process scheduled twice a round: once to contribute, once to
 * see the others.
 *
 *   sched_floor [-n processes] [-i iterations]
 *
 * Prints "processes usec_per_round" (the median of the processes' averages). */
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

#define MAX_PROCS 64

struct slot {
    _Atomic uint64_t round;
    double usec; /* this process's average, written at the end */
    char pad[64 - sizeof(uint64_t) - sizeof(double)];
};

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void run(struct slot *s, int me, int n, int iters, int yield) {
    const int warmup = iters / 10;
    double t0 = 0;
    for (int r = 1; r <= warmup + iters; r++) {
        if (r == warmup + 1) t0 = now_us();
        atomic_store_explicit(&s[me].round, (uint64_t)r, memory_order_release);
        for (int p = 0; p < n; p++)
            while (atomic_load_explicit(&s[p].round, memory_order_acquire) < (uint64_t)r)
                if (yield) sched_yield();
    }
    s[me].usec = (now_us() - t0) / iters;
}

int main(int argc, char **argv) {
    int n = 4, iters = 20000, opt;
    while ((opt = getopt(argc, argv, "n:i:")) != -1) {
        if (opt == 'n')
            n = atoi(optarg);
        else if (opt == 'i')
            iters = atoi(optarg);
        else {
            fprintf(stderr, "usage: %s [-n processes] [-i iterations]\n", argv[0]);
            return 1;
        }
    }
    if (n < 1 || n > MAX_PROCS || iters < 10) {
        fprintf(stderr, "sched_floor: 1-%d processes, at least 10 iterations\n", MAX_PROCS);
        return 1;
    }
    struct slot *s = mmap(NULL, sizeof(struct slot) * MAX_PROCS, PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    int yield = n > sysconf(_SC_NPROCESSORS_ONLN);
    for (int p = 1; p < n; p++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) {
            run(s, p, n, iters, yield);
            _exit(0);
        }
    }
    run(s, 0, n, iters, yield);
    int bad = 0;
    for (int p = 1; p < n; p++) {
        int st;
        if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) bad = 1;
    }
    double v[MAX_PROCS];
    for (int p = 0; p < n; p++)
        v[p] = s[p].usec;
    qsort(v, (size_t)n, sizeof(v[0]), cmp);
    printf("%d %.3f\n", n, v[n / 2]);
    return bad;
}

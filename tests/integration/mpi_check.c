// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* Open MPI over the cxi provider: point-to-point traffic whose results are checked.
 * Exits non-zero (and says why) on any wrong byte or failed call. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_fail.h"

static int rank, size;

static void fill(unsigned char *b, size_t n, int seed) {
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(i * 7 + seed);
}

static int verify(const unsigned char *b, size_t n, int seed) {
    for (size_t i = 0; i < n; i++)
        if (b[i] != (unsigned char)(i * 7 + seed)) return 0;
    return 1;
}

/* Blocking and synchronous sends of every size class, both directions. */
static void sizes(void) {
    static const size_t lens[] = {0, 1, 8, 192, 193, 4000, 18433, 18434, 65536, 1 << 20, 4 << 20};
    unsigned char *buf = malloc(4 << 20);
    int peer = rank ^ 1;
    for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
        size_t n = lens[k];
        for (int round = 0; round < 2; round++) {
            int sender = round;
            if (rank == sender) {
                fill(buf, n, (int)k);
                if (k % 2)
                    MPI_Ssend(buf, (int)n, MPI_BYTE, peer, (int)k, MPI_COMM_WORLD);
                else
                    MPI_Send(buf, (int)n, MPI_BYTE, peer, (int)k, MPI_COMM_WORLD);
            } else {
                MPI_Status st;
                int got = -1;
                memset(buf, 0, n);
                MPI_Recv(buf, (int)n, MPI_BYTE, MPI_ANY_SOURCE, (int)k, MPI_COMM_WORLD, &st);
                MPI_Get_count(&st, MPI_BYTE, &got);
                CHECK(got == (int)n && st.MPI_SOURCE == peer, "size %zu: got %d from %d", n, got,
                      st.MPI_SOURCE);
                CHECK(verify(buf, n, (int)k), "size %zu: corrupted data", n);
            }
        }
    }
    free(buf);
}

/* Many unexpected messages, received in reverse tag order, then probes. */
static void unexpected_and_probe(void) {
    enum { N = 64 };
    int peer = rank ^ 1, v;
    if (rank == 0) {
        for (int i = 0; i < N; i++)
            MPI_Send(&i, 1, MPI_INT, peer, 1000 + i, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        for (int i = N - 1; i >= 0; i--) {
            MPI_Status st;
            int flag = 0;
            while (!flag)
                MPI_Iprobe(peer, 1000 + i, MPI_COMM_WORLD, &flag, &st);
            MPI_Message msg;
            MPI_Mprobe(peer, 1000 + i, MPI_COMM_WORLD, &msg, &st);
            MPI_Mrecv(&v, 1, MPI_INT, &msg, &st);
            CHECK(v == i, "tag %d carried %d", 1000 + i, v);
        }
    }
}

/* Non-blocking exchange plus a cancelled receive. */
static void nonblocking(void) {
    enum { N = 32, LEN = 100000 };
    int peer = rank ^ 1;
    unsigned char *out = malloc((size_t)N * LEN), *in = malloc((size_t)N * LEN);
    MPI_Request req[2 * N];
    for (int i = 0; i < N; i++) {
        fill(out + (size_t)i * LEN, LEN, i + rank);
        MPI_Irecv(in + (size_t)i * LEN, LEN, MPI_BYTE, peer, i, MPI_COMM_WORLD, &req[i]);
    }
    for (int i = 0; i < N; i++)
        MPI_Isend(out + (size_t)i * LEN, LEN, MPI_BYTE, peer, i, MPI_COMM_WORLD, &req[N + i]);
    MPI_Waitall(2 * N, req, MPI_STATUSES_IGNORE);
    for (int i = 0; i < N; i++)
        CHECK(verify(in + (size_t)i * LEN, LEN, i + peer), "message %d corrupted", i);
    MPI_Request r;
    MPI_Status st;
    int cancelled = 0, dummy;
    MPI_Irecv(&dummy, 1, MPI_INT, peer, 99999, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &cancelled);
    CHECK(cancelled, "receive was not cancelled");
    free(out);
    free(in);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2, "run with 2 ranks");
    sizes();
    unexpected_and_probe();
    nonblocking();
    long sum = 0, mine = rank + 1;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == 3, "allreduce gave %ld", sum);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("mpi_check: all checks passed\n");
    MPI_Finalize();
    return 0;
}

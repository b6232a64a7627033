// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* mpi_soak: all-to-all and incast traffic between every rank of an MPI job for a bounded
 * time, every byte checked.
 *
 * Each round every rank sends one message to every other rank, all with one tag, so that
 * MPI's non-overtaking rule fixes which receive each message lands in: the message's
 * header (round, source, destination) and its bytes must be exactly those of that round.
 * A lost message shows as a hang (the job's timeout), a duplicated one as the wrong
 * round in a later receive or as a message left over at the end, a damaged one as a wrong
 * byte. Every fourth round the others also send BURST messages each to one rank
 * (incast), received from MPI_ANY_SOURCE. Rank 0 decides when SOAK_SECONDS (default 20)
 * are over. At the end, after a barrier, no message may be left unreceived.
 *
 * SOAK_PID_DIR: each rank writes its process id to DIR/rank.R (for the killed-rank run).
 * Prints "all checks passed" and the totals on rank 0; aborts on the first wrong byte.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../integration/mpi_fail.h" /* CHECK, which names `rank` */
#include "pattern.h"

#define TAG_A2A 11
#define TAG_INCAST 12
#define BURST 8
#define MAXLEN (128 * 1024)

struct msg_hdr {
    uint32_t round, src, dst, idx, len, pad;
};

static int rank, size;

static uint64_t key(const struct msg_hdr *h) {
    return ((uint64_t)h->round << 32) ^ ((uint64_t)h->src << 20) ^ ((uint64_t)h->dst << 8) ^ h->idx;
}

/* Eager and rendezvous sizes alike, from a bare header to MAXLEN. */
static uint32_t msg_len(const struct msg_hdr *h) {
    static const uint32_t lens[] = {sizeof(struct msg_hdr), 100, 4000, 16384, 65536, MAXLEN};
    uint64_t r = mix(key(h) ^ 0x5a5a);
    uint32_t base = lens[r % (sizeof(lens) / sizeof(lens[0]))];
    uint32_t jitter = (uint32_t)(r >> 32) % 97;
    return base + jitter > MAXLEN ? MAXLEN : base + jitter;
}

static int build(unsigned char *buf, uint32_t round, int dst, uint32_t idx) {
    struct msg_hdr h = {round, (uint32_t)rank, (uint32_t)dst, idx, 0, 0};
    h.len = msg_len(&h);
    uint64_t k = key(&h);
    memcpy(buf, &h, sizeof(h));
    for (uint32_t i = sizeof(h); i < h.len; i++)
        buf[i] = body_byte(k, i);
    return (int)h.len;
}

/* The message must be round's message from src (any source when src < 0). */
static struct msg_hdr verify(const unsigned char *buf, const MPI_Status *st, uint32_t round,
                             int src) {
    struct msg_hdr h;
    int got = 0;
    MPI_Get_count(st, MPI_BYTE, &got);
    CHECK(got >= (int)sizeof(h), "round %u: runt of %d bytes from %d", round, got, st->MPI_SOURCE);
    memcpy(&h, buf, sizeof(h));
    CHECK(h.round == round && (int)h.src == st->MPI_SOURCE && (src < 0 || (int)h.src == src) &&
              (int)h.dst == rank,
          "round %u: message of round %u from %u to %u (duplicated or misdelivered)", round,
          h.round, h.src, h.dst);
    CHECK(h.len == msg_len(&h) && (int)h.len == got, "round %u: length %d from %u, expected %u",
          round, got, h.src, msg_len(&h));
    uint64_t k = key(&h);
    for (uint32_t i = sizeof(h); i < h.len; i++)
        CHECK(buf[i] == body_byte(k, i), "round %u: message from %u corrupted at byte %u", round,
              h.src, i);
    return h;
}

static void write_pid(void) {
    const char *dir = getenv("SOAK_PID_DIR");
    if (!dir) return;
    char path[4096];
    snprintf(path, sizeof(path), "%s/rank.%d", dir, rank);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    write_pid();
    double seconds = getenv("SOAK_SECONDS") ? atof(getenv("SOAK_SECONDS")) : 20;
    int n = size;
    unsigned char *sbuf = malloc((size_t)n * MAXLEN), *rbuf = malloc((size_t)n * MAXLEN);
    unsigned char *ibuf = malloc((size_t)BURST * MAXLEN);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)(2 * n + BURST * n));
    MPI_Status *sts = malloc(sizeof(MPI_Status) * (size_t)(2 * n + BURST * n));
    uint64_t *next_idx = calloc((size_t)n, sizeof(uint64_t));
    CHECK(sbuf && rbuf && ibuf && reqs && sts && next_idx, "out of memory");
    double t0 = MPI_Wtime();
    uint64_t msgs = 0, bytes = 0;
    uint32_t round = 0;
    for (int stop = 0; !stop; round++) {
        int nr = 0;
        for (int s = 0; s < n; s++)
            if (s != rank)
                MPI_Irecv(rbuf + (size_t)s * MAXLEN, MAXLEN, MPI_BYTE, s, TAG_A2A, MPI_COMM_WORLD,
                          &reqs[nr++]);
        for (int i = 1; i < n; i++) {
            int d = (rank + i) % n;
            int len = build(sbuf + (size_t)d * MAXLEN, round, d, 0);
            MPI_Isend(sbuf + (size_t)d * MAXLEN, len, MPI_BYTE, d, TAG_A2A, MPI_COMM_WORLD,
                      &reqs[nr++]);
            bytes += (uint64_t)len;
            msgs++;
        }
        MPI_Waitall(nr, reqs, sts);
        for (int s = 0, k = 0; s < n; s++)
            if (s != rank) verify(rbuf + (size_t)s * MAXLEN, &sts[k++], round, s);

        if (round % 4 == 3) { /* incast: everybody else sends BURST messages to root */
            int root = (int)(round / 4) % n;
            nr = 0;
            if (rank == root) {
                for (int m = 0; m < BURST * (n - 1); m++) {
                    MPI_Status st;
                    MPI_Recv(ibuf, MAXLEN, MPI_BYTE, MPI_ANY_SOURCE, TAG_INCAST, MPI_COMM_WORLD,
                             &st);
                    struct msg_hdr h = verify(ibuf, &st, round, -1);
                    CHECK(h.idx == next_idx[h.src] % BURST,
                          "incast from %u: message %u, expected %u", h.src, h.idx,
                          (unsigned)(next_idx[h.src] % BURST));
                    next_idx[h.src]++;
                }
            } else {
                for (int m = 0; m < BURST; m++) {
                    int len = build(ibuf + (size_t)m * MAXLEN, round, root, (uint32_t)m);
                    MPI_Isend(ibuf + (size_t)m * MAXLEN, len, MPI_BYTE, root, TAG_INCAST,
                              MPI_COMM_WORLD, &reqs[nr++]);
                    bytes += (uint64_t)len;
                    msgs++;
                }
                MPI_Waitall(nr, reqs, MPI_STATUSES_IGNORE);
            }
        }
        stop = rank == 0 && MPI_Wtime() - t0 >= seconds;
        MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    /* Nothing may be left over: a duplicate of a last message would wait here. */
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 100; i++) {
        int flag = 0;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
        CHECK(!flag, "a message from %d (tag %d) left over at the end", st.MPI_SOURCE, st.MPI_TAG);
        usleep(1000);
    }
    uint64_t tot[2] = {msgs, bytes}, sum[2];
    MPI_Reduce(tot, sum, 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf(
            "mpi_soak: %d ranks, %u rounds in %.1f s: %lu messages, %lu bytes, every one "
            "checked: 0 lost, 0 duplicated, 0 corrupted\nall checks passed\n",
            n, round, MPI_Wtime() - t0, (unsigned long)sum[0], (unsigned long)sum[1]);
    free(sbuf);
    free(rbuf);
    free(ibuf);
    free(reqs);
    free(sts);
    free(next_idx);
    MPI_Finalize();
    return 0;
}

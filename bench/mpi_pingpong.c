// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* An MPI ping-pong in the manner of IMB PingPong: rank 0 sends, rank 1 sends back, for
 * each size; prints "size usec_one_way MB/s" per size (one-way time is half the round
 * trip, as IMB reports it). Used by bench/mpi.sh to compare transports in one run.
 *
 *   mpi_pingpong [iterations] [size ...]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double pingpong(int rank, char *buf, int size, int iters) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        if (rank == 0) {
            MPI_Send(buf, size, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
            MPI_Recv(buf, size, MPI_BYTE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, size, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, size, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) / iters / 2 * 1e6;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n != 2) {
        if (rank == 0) fprintf(stderr, "mpi_pingpong: run it with 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int iters = argc > 1 ? atoi(argv[1]) : 10000;
    int sizes[32], nsizes = 0;
    for (int i = 2; i < argc && nsizes < 32; i++)
        sizes[nsizes++] = atoi(argv[i]);
    if (!nsizes) sizes[nsizes++] = 8;
    int max = 0;
    for (int i = 0; i < nsizes; i++)
        if (sizes[i] > max) max = sizes[i];
    char *buf = malloc(max ? max : 1);
    memset(buf, 1, max ? max : 1);
    for (int i = 0; i < nsizes; i++) {
        int it = sizes[i] >= (1 << 20) ? iters / 20 + 1 : sizes[i] >= 65536 ? iters / 4 + 1 : iters;
        pingpong(rank, buf, sizes[i], it / 10 + 1); /* warm-up */
        double us = pingpong(rank, buf, sizes[i], it);
        if (rank == 0) printf("%d %.3f %.1f\n", sizes[i], us, sizes[i] / us);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}

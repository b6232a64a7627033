// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* What a job of N ranks on one host costs: MPI_Init, an all-to-all (1 KiB to each peer),
 * an allreduce and a barrier, every result checked, then MPI_Finalize. Rank 0 prints one
 * line:
 *
 *   scale: ranks N init_max S rss_avg B rss_max B fds_max F shm B finalize_max S
 *
 * init_max: the longest MPI_Init of any rank, in seconds; rss: peak resident bytes per
 * process by the end of the all-to-all; fds: open descriptors per process then; shm: bytes used in
 * /dev/shm then, less SCALE_SHM_BASE (the script's reading before the job);
 * finalize_max: the longest MPI_Finalize, reported through a file (SCALE_OUT) since no
 * rank may communicate after it. Exit status 1 when a result is wrong.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 1024

static double wall(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double peak_rss(void) { /* bytes: the most this process has had resident */
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) ? 0 : (double)u.ru_maxrss * 1024.0;
}

static double open_fds(void) {
    double n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n - 1; /* the directory itself */
}

static double shm_used(void) {
    struct statvfs v;
    if (statvfs("/dev/shm", &v)) return 0;
    return (double)(v.f_blocks - v.f_bfree) * (double)v.f_frsize;
}

static unsigned char cell(int from, int to, int i) {
    return (unsigned char)(from * 131 + to * 7 + i);
}

/* Every byte of the all-to-all, and the allreduce's sum. */
static int exchange(int rank, int size) {
    unsigned char *out = malloc((size_t)size * CHUNK), *in = malloc((size_t)size * CHUNK);
    int bad = 0;
    if (!out || !in) return 1;
    for (int p = 0; p < size; p++)
        for (int i = 0; i < CHUNK; i++)
            out[p * CHUNK + i] = cell(rank, p, i);
    MPI_Alltoall(out, CHUNK, MPI_BYTE, in, CHUNK, MPI_BYTE, MPI_COMM_WORLD);
    for (int p = 0; p < size && !bad; p++)
        for (int i = 0; i < CHUNK; i++)
            if (in[p * CHUNK + i] != cell(p, rank, i)) {
                fprintf(stderr, "rank %d: byte %d from %d wrong\n", rank, i, p);
                bad = 1;
                break;
            }
    long mine = rank + 1, sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (sum != (long)size * (size + 1) / 2) {
        fprintf(stderr, "rank %d: allreduce %ld\n", rank, sum);
        bad = 1;
    }
    free(out);
    free(in);
    return bad;
}

int main(int argc, char **argv) {
    double t0 = wall();
    MPI_Init(&argc, &argv);
    double init = wall() - t0;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int bad = exchange(rank, size);
    double mine[4] = {init, peak_rss(), open_fds(), (double)bad}, max[4], sum[4];
    MPI_Reduce(mine, max, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(mine, sum, 4, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    double shm = rank == 0 ? shm_used() : 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double f0 = wall();
    MPI_Finalize();
    double fin = wall() - f0;
    const char *out = getenv("SCALE_OUT");
    if (out) { /* each rank appends its finalize time; the script takes the largest */
        FILE *f = fopen(out, "a");
        if (f) {
            fprintf(f, "%.6f\n", fin);
            fclose(f);
        }
    }
    if (rank == 0) {
        const char *base = getenv("SCALE_SHM_BASE");
        printf("scale: ranks %d init_max %.3f rss_avg %.0f rss_max %.0f fds_max %.0f shm %.0f\n",
               size, max[0], sum[1] / size, max[1], max[2], shm - (base ? atof(base) : 0));
    }
    return rank == 0 ? (max[3] > 0 || bad) : bad;
}

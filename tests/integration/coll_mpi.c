// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* cxi collectives between processes: MPI starts the ranks and trades their cxi addresses;
 * everything else is libfabric. Every rank opens a cxi endpoint, inserts every rank's
 * address in rank order, makes an AV set of them and joins it.
 *
 *   coll_mpi check          barrier, broadcast from every root, reduce, and allreduce of
 *                           every op x datatype fi_cxi(7) lists; results checked
 *   coll_mpi bench [iters]  the checks, then 8-byte allreduce (INT64 SUM): fi_allreduce over cxi,
 * then MPI_Allreduce over whatever mpirun chose, in the same run; rank 0 prints "members fi_usec
 * mpi_usec"
 *
 * With more ranks than CPUs, an idle rank yields the CPU between polls of its CQ, as Open
 * MPI's progress loop does when it is oversubscribed.
 *
 * Exits non-zero (and says why) on any wrong result or failed call. */
#include <mpi.h>
#include <rdma/fabric.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_cxi_ext.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_fail.h"

#define OK(call) CHECK((call) == 0, "%s failed", #call)

static int rank, size;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_ep *ep;
static struct fid_cq *cq;
static struct fid_av *av;
static struct fid_eq *eq;
static struct fid_av_set *set;
static struct fid_mc *mc;
static fi_addr_t *addrs;
static int yield_when_idle; /* more ranks than CPUs: let the others run, as Open MPI does */

static void open_cxi(void) {
    struct fi_info *hints = fi_allocinfo(), *info = NULL;
    hints->caps = FI_MSG | FI_COLLECTIVE;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = FI_MR_ENDPOINT | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->fabric_attr->prov_name = strdup("cxi");
    OK(fi_getinfo(FI_VERSION(1, 15), NULL, NULL, 0, hints, &info));
    OK(fi_fabric(info->fabric_attr, &fabric, NULL));
    OK(fi_domain(fabric, info, &domain, NULL));
    OK(fi_endpoint(domain, info, &ep, NULL));
    struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_CONTEXT};
    OK(fi_cq_open(domain, &ca, &cq, NULL));
    struct fi_av_attr aa = {.type = FI_AV_TABLE};
    OK(fi_av_open(domain, &aa, &av, NULL));
    struct fi_eq_attr ea = {0};
    OK(fi_eq_open(fabric, &ea, &eq, NULL));
    OK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
    OK(fi_ep_bind(ep, &av->fid, 0));
    OK(fi_ep_bind(ep, &eq->fid, 0));
    OK(fi_enable(ep));
    fi_freeinfo(hints);
    fi_freeinfo(info);
}

static void join(void) {
    char name[8] = {0}, *all = malloc(8 * (size_t)size);
    size_t len = sizeof(name);
    OK(fi_getname(&ep->fid, name, &len));
    MPI_Allgather(name, 8, MPI_BYTE, all, 8, MPI_BYTE, MPI_COMM_WORLD);
    addrs = calloc((size_t)size, sizeof(*addrs));
    for (int r = 0; r < size; r++)
        CHECK(fi_av_insert(av, all + 8 * r, 1, &addrs[r], 0, NULL) == 1, "av insert");
    struct fi_av_set_attr sa = {.start_addr = addrs[0], .end_addr = addrs[size - 1], .stride = 1};
    OK(fi_av_set(av, &sa, &set, NULL));
    fi_addr_t coll;
    OK(fi_av_set_addr(set, &coll));
    OK(fi_join_collective(ep, coll, set, 0, &mc, NULL));
    uint32_t event;
    struct fi_eq_entry ev;
    CHECK(fi_eq_read(eq, &event, &ev, sizeof(ev), 0) == sizeof(ev), "no join event");
    CHECK(event == FI_JOIN_COMPLETE && ev.fid == &mc->fid, "wrong join event");
    free(all);
}

/* Waits for the completion of `ctx`; returns its prov_errno (0: success). */
static int wait_ctx(void *ctx) {
    struct fi_cq_entry e;
    for (;;) {
        ssize_t n = fi_cq_read(cq, &e, 1);
        if (n == 1) {
            CHECK(e.op_context == ctx, "a completion of another call");
            return 0;
        }
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry err = {0};
            CHECK(fi_cq_readerr(cq, &err, 0) == 1, "readerr");
            return err.prov_errno ? err.prov_errno : -1;
        }
        CHECK(n == -FI_EAGAIN, "fi_cq_read: %zd", n);
        if (yield_when_idle) sched_yield();
    }
}

static void allreduce(const void *in, void *out, size_t count, enum fi_datatype dt, int op) {
    int ctx;
    ssize_t r;
    while ((r = fi_allreduce(ep, in, count, NULL, out, NULL, fi_mc_addr(mc), dt, (enum fi_op)op, 0,
                             &ctx)) == -FI_EAGAIN)
        fi_cq_read(cq, NULL, 0);
    CHECK(r == 0, "fi_allreduce op %d dt %d: %zd", op, (int)dt, r);
    CHECK(wait_ctx(&ctx) == 0, "allreduce op %d dt %d failed", op, (int)dt);
}

static void check_bitwise(void) {
    static const enum fi_datatype dts[] = {FI_INT8,  FI_UINT8,  FI_INT16, FI_UINT16,
                                           FI_INT32, FI_UINT32, FI_UINT64};
    static const size_t sz[] = {1, 1, 2, 2, 4, 4, 8};
    static const int ops[] = {FI_BOR, FI_BAND, FI_BXOR};
    for (size_t d = 0; d < 7; d++)
        for (size_t o = 0; o < 3; o++) {
            unsigned char in[32], out[32], want[32];
            for (int i = 0; i < 32; i++)
                in[i] = (unsigned char)(rank * 37 + i * 11 + 1);
            for (int i = 0; i < 32; i++) {
                unsigned char w = ops[o] == FI_BAND ? 0xff : 0;
                for (int r = 0; r < size; r++) {
                    unsigned char v = (unsigned char)(r * 37 + i * 11 + 1);
                    w = ops[o] == FI_BOR ? w | v : ops[o] == FI_BAND ? w & v : w ^ v;
                }
                want[i] = w;
            }
            allreduce(in, out, 32 / sz[d], dts[d], ops[o]);
            CHECK(!memcmp(out, want, 32), "bitwise op %d dt %d wrong", ops[o], (int)dts[d]);
        }
}

static void check_arith(void) {
    int64_t in[4], out[4];
    double din[4], dout[4];
    for (int i = 0; i < 4; i++) {
        in[i] = (rank + 1) * (i + 1) * (i % 2 ? -1 : 1);
        din[i] = 0.5 * (rank + 1) * (i + 1);
    }
    allreduce(in, out, 4, FI_INT64, FI_SUM);
    for (int i = 0; i < 4; i++)
        CHECK(out[i] == (int64_t)size * (size + 1) / 2 * (i + 1) * (i % 2 ? -1 : 1), "sum");
    allreduce(in, out, 4, FI_INT64, FI_MIN);
    CHECK(out[0] == 1 && out[1] == -2 * size, "int64 min");
    allreduce(in, out, 4, FI_INT64, FI_MAX);
    CHECK(out[0] == size && out[1] == -2, "int64 max");
    allreduce(din, dout, 4, FI_DOUBLE, FI_SUM);
    CHECK(dout[1] == 0.5 * 2 * size * (size + 1) / 2, "double sum");
    allreduce(din, dout, 4, FI_DOUBLE, FI_MIN);
    CHECK(dout[3] == 2.0, "double min");
    allreduce(din, dout, 4, FI_DOUBLE, FI_MAX);
    CHECK(dout[0] == 0.5 * size, "double max");
    allreduce(din, dout, 4, FI_DOUBLE, FI_CXI_REPSUM);
    double all[4 * 64];
    MPI_Allgather(dout, 4, MPI_DOUBLE, all, 4, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        CHECK(!memcmp(all + 4 * r, dout, sizeof(dout)), "REPSUM bits differ between ranks");
    struct cxip_coll_intminmax im = {rank * 3 - 4, (uint64_t)rank, rank * 3 - 4, (uint64_t)rank},
                               imo;
    allreduce(&im, &imo, 1, FI_INT64, FI_CXI_MINMAXLOC);
    CHECK(imo.iminval == -4 && imo.iminidx == 0, "minloc");
    CHECK(imo.imaxval == (size - 1) * 3 - 4 && imo.imaxidx == (uint64_t)size - 1, "maxloc");
    struct cxip_coll_fltminmax fm = {rank * 0.5, (uint64_t)rank, rank * 0.5, (uint64_t)rank}, fmo;
    allreduce(&fm, &fmo, 1, FI_DOUBLE, FI_CXI_MINMAXLOC);
    CHECK(fmo.fminidx == 0 && fmo.fmaxidx == (uint64_t)size - 1, "double minmaxloc");
}

static void check_rooted(void) {
    for (int root = 0; root < size; root++) {
        uint64_t v[4] = {0};
        if (rank == root)
            for (int i = 0; i < 4; i++)
                v[i] = (uint64_t)root * 1000 + (uint64_t)i;
        int ctx;
        OK((int)fi_broadcast(ep, v, 4, NULL, fi_mc_addr(mc), addrs[root], FI_UINT64, 0, &ctx));
        CHECK(wait_ctx(&ctx) == 0, "broadcast");
        for (int i = 0; i < 4; i++)
            CHECK(v[i] == (uint64_t)root * 1000 + (uint64_t)i, "bcast");
        int64_t in = rank + 1, out = -1;
        OK((int)fi_reduce(ep, &in, 1, NULL, &out, NULL, fi_mc_addr(mc), addrs[root], FI_INT64,
                          FI_SUM, 0, &ctx));
        CHECK(wait_ctx(&ctx) == 0, "reduce");
        CHECK(rank != root || out == (int64_t)size * (size + 1) / 2, "reduce result");
        OK((int)fi_barrier(ep, fi_mc_addr(mc), &ctx));
        CHECK(wait_ctx(&ctx) == 0, "barrier");
    }
}

static void bench(int iters) {
    int64_t in = rank, out = 0, want = (int64_t)size * (size - 1) / 2, mout = 0;
    for (int i = 0; i < iters / 10 + 1; i++)
        allreduce(&in, &out, 1, FI_INT64, FI_SUM);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++)
        allreduce(&in, &out, 1, FI_INT64, FI_SUM);
    double fi_us = (MPI_Wtime() - t0) / iters * 1e6;
    CHECK(out == want, "fi_allreduce result %ld", (long)out);
    for (int i = 0; i < iters / 10 + 1; i++)
        MPI_Allreduce(&in, &mout, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++)
        MPI_Allreduce(&in, &mout, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    double mpi_us = (MPI_Wtime() - t0) / iters * 1e6;
    CHECK(mout == want, "MPI_Allreduce result");
    if (rank == 0) printf("%d %.3f %.3f\n", size, fi_us, mpi_us);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size <= 64, "at most 64 ranks");
    yield_when_idle = size > sysconf(_SC_NPROCESSORS_ONLN);
    const char *mode = argc > 1 ? argv[1] : "check";
    open_cxi();
    join();
    check_bitwise();
    check_arith();
    check_rooted();
    if (rank == 0) printf("all collective checks passed (%d members)\n", size);
    if (!strcmp(mode, "bench")) bench(argc > 2 ? atoi(argv[2]) : 10000);
    MPI_Barrier(MPI_COMM_WORLD);
    fi_close(&mc->fid);
    fi_close(&set->fid);
    fi_close(&ep->fid);
    fi_close(&av->fid);
    fi_close(&cq->fid);
    fi_close(&eq->fid);
    fi_close(&domain->fid);
    fi_close(&fabric->fid);
    free(addrs);
    MPI_Finalize();
    return 0;
}

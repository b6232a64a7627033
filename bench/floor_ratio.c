// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* floor_ratio: an 8-byte fi_send/fi_recv ping-pong within a host, in line floors.
 *
 * On a VM whose two vCPUs move between host cores, the time a cache line takes to cross
 * them changes from one second to the next (this project's AMD VM: 53-301 ns), so a
 * latency and a line floor measured a minute apart cannot be divided. Here the same two
 * processes, pinned one per CPU, take turns: a block of provider ping-pongs (as
 * fi_pingpong makes them: a receive posted ahead, the send's and the receive's
 * completions read from one CQ), then a block of bare line bounces (bench/line_floor.c),
 * and so on. Each block pair gives one ratio; the median ratio is the provider's one-way
 * latency in line floors, whatever mode the VM is in.
 *
 *   FI_PROVIDER_PATH=build/lib floor_ratio [provider] [blocks] [iterations per block]
 *
 * Prints the median and quartiles of the ratio and of both one-way times. */
#define _GNU_SOURCE
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "line_bounce.h"

struct shared {
    _Atomic uint64_t ping __attribute__((aligned(4096)));
    _Atomic uint64_t pong __attribute__((aligned(4096)));
    _Atomic int named[2] __attribute__((aligned(64)));
    char name[2][256];
    size_t namelen[2];
};

struct fab {
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_cq *cq;
    struct fid_av *av;
    struct fid_ep *ep;
    fi_addr_t peer;
    int me;
    char tx[8], rx[8];
};

#define CHECK(call)                                                             \
    do {                                                                        \
        int rc_ = (int)(call);                                                  \
        if (rc_) {                                                              \
            fprintf(stderr, "floor_ratio: %s: %s\n", #call, fi_strerror(-rc_)); \
            exit(2);                                                            \
        }                                                                       \
    } while (0)

static void open_fabric(struct fab *f, const char *prov, struct shared *sh, int me) {
    struct fi_info *hints = fi_allocinfo(), *info;
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->fabric_attr->prov_name = strdup(prov);
    CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT, .size = 64};
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
    CHECK(fi_fabric(info->fabric_attr, &f->fabric, NULL));
    CHECK(fi_domain(f->fabric, info, &f->domain, NULL));
    CHECK(fi_cq_open(f->domain, &cq_attr, &f->cq, NULL));
    CHECK(fi_av_open(f->domain, &av_attr, &f->av, NULL));
    CHECK(fi_endpoint(f->domain, info, &f->ep, NULL));
    CHECK(fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV));
    CHECK(fi_ep_bind(f->ep, &f->av->fid, 0));
    CHECK(fi_enable(f->ep));
    sh->namelen[me] = sizeof(sh->name[me]);
    CHECK(fi_getname(&f->ep->fid, sh->name[me], &sh->namelen[me]));
    atomic_store(&sh->named[me], 1);
    while (!atomic_load(&sh->named[!me]))
        sched_yield();
    if (fi_av_insert(f->av, sh->name[!me], 1, &f->peer, 0, NULL) != 1) exit(2);
    fi_freeinfo(hints);
    fi_freeinfo(info);
}

// Waits for `n` completions on the CQ.
static void reap(struct fab *f, int n) {
    struct fi_cq_entry e[2];
    while (n > 0) {
        ssize_t r = fi_cq_read(f->cq, e, n);
        if (r > 0)
            n -= (int)r;
        else if (r == -FI_EAVAIL) {
            struct fi_cq_err_entry err = {0};
            fi_cq_readerr(f->cq, &err, 0);
            fprintf(stderr, "floor_ratio: side %d: a completion in error: %s (%d)\n", f->me,
                    fi_strerror(err.err), err.prov_errno);
            exit(2);
        } else if (r != -FI_EAGAIN) {
            fprintf(stderr, "floor_ratio: fi_cq_read: %s\n", fi_strerror((int)-r));
            exit(2);
        }
    }
}

// Both retry after a progress call (a read of nothing) while the provider says EAGAIN.
static void post_recv(struct fab *f, struct fi_context2 *ctx) {
    ssize_t fi_recv_rc;
    while ((fi_recv_rc = fi_recv(f->ep, f->rx, sizeof(f->rx), NULL, f->peer, ctx)) == -FI_EAGAIN)
        fi_cq_read(f->cq, NULL, 0);
    CHECK(fi_recv_rc);
}

static void send_one(struct fab *f, struct fi_context2 *ctx) {
    ssize_t fi_send_rc;
    while ((fi_send_rc = fi_send(f->ep, f->tx, sizeof(f->tx), NULL, f->peer, ctx)) == -FI_EAGAIN)
        fi_cq_read(f->cq, NULL, 0);
    CHECK(fi_send_rc);
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void quartiles(const char *what, double *v, int n) {
    qsort(v, n, sizeof(*v), cmp);
    printf("%s median %.2f (quartiles %.2f-%.2f)\n", what, v[n / 2], v[n / 4], v[3 * n / 4]);
}

int main(int argc, char **argv) {
    const char *prov = argc > 1 ? argv[1] : "cxi";
    int blocks = argc > 2 ? atoi(argv[2]) : 200, iters = argc > 3 ? atoi(argv[3]) : 2000;
    struct shared *sh =
        mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED || blocks < 4 || iters < 1) return 2;
    pid_t child = fork();
    int me = child == 0;
    alarm(120);  // a side that failed leaves the other waiting for ever: end both
    pin(me);
    struct fab f = {0};
    struct fi_context2 sctx, rctx;
    f.me = me;
    open_fabric(&f, prov, sh, me);
    double *ratio = calloc(blocks, sizeof(double)), *fab_ns = calloc(blocks, sizeof(double));
    double *line_ns = calloc(blocks, sizeof(double));
    uint64_t line = 0;
    post_recv(&f, &rctx);
    for (int b = 0; b < blocks; b++) {
        double t0 = now_ns();
        for (int i = 0; i < iters; i++) {
            if (me) {  // the answering side: receive, post again, answer
                reap(&f, 1);
                post_recv(&f, &rctx);
                send_one(&f, &sctx);
                reap(&f, 1);
            } else {
                send_one(&f, &sctx);
                reap(&f, 2);
                post_recv(&f, &rctx);
            }
        }
        double t1 = now_ns();
        line_bounce(&sh->ping, &sh->pong, line, (uint64_t)iters, me);
        line += (uint64_t)iters;
        double t2 = now_ns();
        fab_ns[b] = (t1 - t0) / iters / 2;
        line_ns[b] = (t2 - t1) / iters / 2;
        ratio[b] = fab_ns[b] / line_ns[b];
    }
    if (me) _exit(0);
    waitpid(child, NULL, 0);
    printf("%s, %d blocks of %d round trips, each beside as many line bounces\n", prov, blocks,
           iters);
    quartiles("one way, ns:", fab_ns, blocks);
    quartiles("line floor, ns:", line_ns, blocks);
    quartiles("one way in line floors:", ratio, blocks);
    return 0;
}

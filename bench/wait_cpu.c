// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* How much CPU a blocked reader burns: one process opens an RDM endpoint of the named
 * provider with a CQ of the named wait object and blocks on it for SECONDS while
 * nothing arrives, in one of two ways:
 *   sread: fi_cq_sread with the whole timeout;
 *   poll:  fi_trywait, then poll() on the FI_GETWAIT descriptor (what Mercury does).
 * Prints "<prov> <wait> <mode> cpu <percent of one CPU>" (user + system time / wall).
 *
 *   wait_cpu PROV fd|unspec|none sread|poll [SECONDS]
 */
#define _GNU_SOURCE
#include <poll.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define CHECK(call)                                                \
    do {                                                           \
        int rc_ = (int)(call);                                     \
        if (rc_) {                                                 \
            fprintf(stderr, "%s: %s\n", #call, fi_strerror(-rc_)); \
            exit(1);                                               \
        }                                                          \
    } while (0)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static double cpu(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec +
           u.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: wait_cpu PROV fd|unspec|none sread|poll [SECONDS]\n");
        return 2;
    }
    const char *prov = argv[1], *wait = argv[2], *mode = argv[3];
    int seconds = argc > 4 ? atoi(argv[4]) : 3;
    enum fi_wait_obj w = !strcmp(wait, "fd")       ? FI_WAIT_FD
                         : !strcmp(wait, "unspec") ? FI_WAIT_UNSPEC
                                                   : FI_WAIT_NONE;
    struct fi_info *hints = fi_allocinfo(), *info;
    hints->fabric_attr->prov_name = strdup(prov);
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
    struct fid_fabric *fab;
    struct fid_domain *dom;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    CHECK(fi_fabric(info->fabric_attr, &fab, NULL));
    CHECK(fi_domain(fab, info, &dom, NULL));
    struct fi_av_attr aa = {.type = FI_AV_UNSPEC};
    CHECK(fi_av_open(dom, &aa, &av, NULL));
    struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_CONTEXT, .wait_obj = w};
    CHECK(fi_cq_open(dom, &ca, &cq, NULL));
    CHECK(fi_endpoint(dom, info, &ep, NULL));
    CHECK(fi_ep_bind(ep, &av->fid, 0));
    CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
    CHECK(fi_enable(ep));
    static char buf[64];
    CHECK(fi_recv(ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, NULL));

    double t0 = now(), c0 = cpu();
    if (!strcmp(mode, "poll")) {
        int fd = -1;
        CHECK(fi_control(&cq->fid, FI_GETWAIT, &fd));
        struct fid *fids[] = {&cq->fid};
        CHECK(fi_trywait(fab, fids, 1));
        struct pollfd p = {fd, POLLIN, 0};
        poll(&p, 1, seconds * 1000);
    } else {
        struct fi_cq_entry e;
        ssize_t n = fi_cq_sread(cq, &e, 1, NULL, seconds * 1000);
        if (n != -FI_EAGAIN) fprintf(stderr, "fi_cq_sread: %zd\n", n);
    }
    double wall = now() - t0, used = cpu() - c0;
    printf("%s %s %s cpu %.1f %%\n", prov, wait, mode, 100 * used / wall);
    fi_close(&ep->fid);
    fi_close(&cq->fid);
    fi_close(&av->fid);
    fi_close(&dom->fid);
    fi_close(&fab->fid);
    fi_freeinfo(info);
    fi_freeinfo(hints);
    return 0;
}

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* msg_instructions: the work of one 8-byte tagged message, for counting under
 * callgrind (bench/instructions.sh), where instructions do not move with the CPU.
 *
 * Two endpoints of one provider in one process, so that nothing waits on another
 * process and no empty poll is counted: each message is one fi_tsend, one fi_cq_read
 * on the receiver that finds it, one fi_cq_read on the sender that finds the send's
 * completion, and one fi_trecv that reposts the receive. Each of the four runs in a
 * function of its own (never inlined) during the measured loop only, so callgrind's
 * inclusive cost of that function over the iterations is its cost per message.
 *
 *   msg_instructions PROVIDER [ITERATIONS [safe|domain|completion [DOMAIN_B|- [pingpong]]]]
 *
 * With DOMAIN_B (cxi: "cxi1", a second soft NIC) the receiving endpoint opens that
 * domain instead of sharing the sender's, so that cxi carries the message over UDP
 * (FI_CXI_SOFT_NICS=127.0.0.1,127.0.0.2): the user-space work of the path between
 * hosts, without the kernel's. "pingpong" counts round trips instead (rt_ping,
 * rt_pong_recv, rt_pong, rt_ping_recv), as fi_pingpong makes them: a transport that
 * completes a send when the peer acknowledges it (over UDP) gets the acknowledgement
 * with the reply, where the one-way loop would wait for the receiver's idle poll.
 *
 * Prints how many reads each completion took (1.00 when nothing was spun) and how
 * many sends were refused and retried (0 when nothing was). */
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                          \
    do {                                                                                     \
        long rc_ = (long)(call);                                                             \
        if (rc_) {                                                                           \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, fi_strerror(-rc_)); \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

struct side {
    struct fid_ep *ep;
    struct fid_cq *cq;
    fi_addr_t addr;
    char buf[64];
    struct fi_context2 ctx;
};

static struct side a, b;
static unsigned long reads, retries;

/* A send refused for want of resources (shm maps its peer on first use) is retried
 * after progress; the retries are counted. */
static void send_from(struct side *from, struct side *to) {
    ssize_t rc;
    while ((rc = fi_tsend(from->ep, from->buf, 8, NULL, to->addr, 7, &from->ctx)) == -FI_EAGAIN) {
        retries++;
        fi_cq_read(a.cq, NULL, 0);
        fi_cq_read(b.cq, NULL, 0);
    }
    CHECK(rc);
}

static void send_one(void) {
    send_from(&a, &b);
}

static void open_side(struct fid_domain *dom, struct fi_info *info, struct fid_av *av,
                      struct side *s) {
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED, .size = 128};
    CHECK(fi_endpoint(dom, info, &s->ep, NULL));
    CHECK(fi_cq_open(dom, &cq_attr, &s->cq, NULL));
    CHECK(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
    CHECK(fi_ep_bind(s->ep, &av->fid, 0));
    CHECK(fi_enable(s->ep));
}

static void wait_one(struct fid_cq *cq) {
    struct fi_cq_tagged_entry e;
    ssize_t n;
    do {
        reads++;
        n = fi_cq_read(cq, &e, 1);
    } while (n == -FI_EAGAIN);
    if (n != 1) {
        fprintf(stderr, "fi_cq_read: %s\n", fi_strerror((int)-n));
        exit(1);
    }
}

__attribute__((noinline)) void msg_send(void) {
    send_one();
}
__attribute__((noinline)) void msg_recv_completion(void) {
    wait_one(b.cq);
}
__attribute__((noinline)) void msg_send_completion(void) {
    wait_one(a.cq);
}
__attribute__((noinline)) void msg_repost(void) {
    CHECK(fi_trecv(b.ep, b.buf, sizeof(b.buf), NULL, FI_ADDR_UNSPEC, 7, 0, &b.ctx));
}

/* The round trip: a pings b, b pongs. Each side's send completes by the time the
   other's next message arrives, so each wait takes two completions (from the second
   round on, at b). */
static struct fi_context2 rx_ctx_a;
static int first_round = 1;

static void ping(void) {
    send_from(&a, &b);
}
static void pong_recv(void) {
    wait_one(b.cq);
    if (!first_round) wait_one(b.cq);
    first_round = 0;
}
static void pong(void) {
    CHECK(fi_trecv(b.ep, b.buf, sizeof(b.buf), NULL, FI_ADDR_UNSPEC, 7, 0, &b.ctx));
    send_from(&b, &a);
}
static void ping_recv(void) {
    wait_one(a.cq);
    wait_one(a.cq);
    CHECK(fi_trecv(a.ep, a.buf + 32, 32, NULL, FI_ADDR_UNSPEC, 7, 0, &rx_ctx_a));
}
/* The measured copies: only the timed loop calls them. */
__attribute__((noinline)) void rt_ping(void) {
    ping();
}
__attribute__((noinline)) void rt_pong_recv(void) {
    pong_recv();
}
__attribute__((noinline)) void rt_pong(void) {
    pong();
}
__attribute__((noinline)) void rt_ping_recv(void) {
    ping_recv();
}

static void round_trips(long iters) {
    /* The warm-up's phases, then the measured ones. */
    static void (*const phases[2][4])(void) = {{ping, pong_recv, pong, ping_recv},
                                               {rt_ping, rt_pong_recv, rt_pong, rt_ping_recv}};
    CHECK(fi_trecv(a.ep, a.buf + 32, 32, NULL, FI_ADDR_UNSPEC, 7, 0, &rx_ctx_a));
    for (long i = 0; i < 1000 + iters; i++) {
        if (i == 1000) reads = retries = 0;
        for (int k = 0; k < 4; k++)
            phases[i >= 1000][k]();
    }
    printf("round trips: %ld, %.2f reads per completion, %lu sends retried\n", iters,
           (double)reads / (4.0 * (double)iters), retries);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(
            stderr,
            "usage: %s PROVIDER [ITERATIONS [safe|domain|completion [DOMAIN_B|- [pingpong]]]]\n",
            argv[0]);
        return 2;
    }
    long iters = argc > 2 ? atol(argv[2]) : 10000;
    struct fi_info *hints = fi_allocinfo(), *info;
    hints->fabric_attr->prov_name = strdup(argv[1]);
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_TAGGED | FI_MSG;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    /* The threading level the application asks for (Open MPI asks FI_THREAD_DOMAIN
       unless MPI_THREAD_MULTIPLE): a provider may take no lock under it. */
    const char *level = argc > 3 ? argv[3] : "safe";
    hints->domain_attr->threading = !strcmp(level, "domain")       ? FI_THREAD_DOMAIN
                                    : !strcmp(level, "completion") ? FI_THREAD_COMPLETION
                                                                   : FI_THREAD_SAFE;
    CHECK(fi_getinfo(FI_VERSION(1, 15), NULL, NULL, 0, hints, &info));
    struct fi_info *info_b = info;
    if (argc > 4 && strcmp(argv[4], "-")) {  // the receiver on a domain of its own
        hints->domain_attr->name = strdup(argv[4]);
        CHECK(fi_getinfo(FI_VERSION(1, 15), NULL, NULL, 0, hints, &info_b));
    }
    struct fid_fabric *fab;
    struct fid_domain *dom, *dom_b;
    struct fid_av *av, *av_b;
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
    CHECK(fi_fabric(info->fabric_attr, &fab, NULL));
    CHECK(fi_domain(fab, info, &dom, NULL));
    CHECK(fi_av_open(dom, &av_attr, &av, NULL));
    dom_b = dom;
    av_b = av;
    if (info_b != info) {
        CHECK(fi_domain(fab, info_b, &dom_b, NULL));
        CHECK(fi_av_open(dom_b, &av_attr, &av_b, NULL));
    }
    open_side(dom, info, av, &a);
    open_side(dom_b, info_b, av_b, &b);
    char name[256];
    size_t len = sizeof(name);
    CHECK(fi_getname(&a.ep->fid, name, &len));
    if (fi_av_insert(av_b, name, 1, &a.addr, 0, NULL) != 1) return 1;
    len = sizeof(name);
    CHECK(fi_getname(&b.ep->fid, name, &len));
    if (fi_av_insert(av, name, 1, &b.addr, 0, NULL) != 1) return 1;
    memset(a.buf, 0x5a, sizeof(a.buf));

    CHECK(fi_trecv(b.ep, b.buf, sizeof(b.buf), NULL, FI_ADDR_UNSPEC, 7, 0, &b.ctx));
    if (argc > 5 && !strcmp(argv[5], "pingpong")) {
        round_trips(iters);
        goto out;
    }
    for (int i = 0; i < 1000; i++) {  // warm-up: pools, routes and caches settle
        send_one();
        wait_one(b.cq);
        wait_one(a.cq);
        CHECK(fi_trecv(b.ep, b.buf, sizeof(b.buf), NULL, FI_ADDR_UNSPEC, 7, 0, &b.ctx));
    }
    reads = retries = 0;
    for (long i = 0; i < iters; i++) {
        msg_send();
        msg_recv_completion();
        msg_send_completion();
        msg_repost();
    }
    printf("%s: %ld messages, %.2f reads per completion, %lu sends retried\n", argv[1], iters,
           (double)reads / (2.0 * (double)iters), retries);
out:
    fi_close(&a.ep->fid);
    fi_close(&b.ep->fid);
    fi_close(&a.cq->fid);
    fi_close(&b.cq->fid);
    if (av_b != av) fi_close(&av_b->fid);
    fi_close(&av->fid);
    if (dom_b != dom) fi_close(&dom_b->fid);
    fi_close(&dom->fid);
    fi_close(&fab->fid);
    if (info_b != info) fi_freeinfo(info_b);
    fi_freeinfo(info);
    fi_freeinfo(hints);
    return 0;
}

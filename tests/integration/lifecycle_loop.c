// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* lifecycle_loop <provider> <iterations>: opens and closes everything an application
 * uses (fabric, domain, CQ, AV, endpoint, MR) over and over in one process, sending one
 * message per iteration on each path (cxi: to itself within its NIC over shared memory,
 * and from cxi0 to cxi1 over UDP; usnic: RDM over UDP). After a warm-up it records the
 * resident set, open descriptors and threads; at the end they must be where they were:
 * a provider that leaks per object grows with every iteration.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <malloc.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(call)                                                                           \
    do {                                                                                      \
        int rc_ = (int)(call);                                                                \
        if (rc_) {                                                                            \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, fi_strerror(-rc_)); \
            exit(2);                                                                          \
        }                                                                                     \
    } while (0)

struct side {
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_cq *cq;
    struct fid_av *av;
    struct fid_ep *ep;
    struct fid_mr *mr;
    char buf[64];
};

static struct fi_info *info_for(const char *prov, const char *domain, enum fi_ep_type type) {
    struct fi_info *hints = fi_allocinfo(), *info = NULL;
    hints->fabric_attr->prov_name = strdup(prov);
    if (domain) hints->domain_attr->name = strdup(domain);
    hints->ep_attr->type = type;
    hints->caps = FI_MSG;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
    CHECK(fi_getinfo(FI_VERSION(1, 15), NULL, NULL, 0, hints, &info));
    fi_freeinfo(hints);
    return info;
}

static void open_side(struct side *s, struct fi_info *info) {
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_MSG};
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
    CHECK(fi_fabric(info->fabric_attr, &s->fabric, NULL));
    CHECK(fi_domain(s->fabric, info, &s->domain, NULL));
    CHECK(fi_cq_open(s->domain, &cq_attr, &s->cq, NULL));
    CHECK(fi_av_open(s->domain, &av_attr, &s->av, NULL));
    CHECK(fi_endpoint(s->domain, info, &s->ep, NULL));
    CHECK(fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV));
    CHECK(fi_ep_bind(s->ep, &s->av->fid, 0));
    CHECK(fi_enable(s->ep));
    CHECK(fi_mr_reg(s->domain, s->buf, sizeof(s->buf), FI_SEND | FI_RECV, 0, 0, 0, &s->mr, NULL));
}

static void close_side(struct side *s) {
    CHECK(fi_close(&s->mr->fid));
    CHECK(fi_close(&s->ep->fid));
    CHECK(fi_close(&s->av->fid));
    CHECK(fi_close(&s->cq->fid));
    CHECK(fi_close(&s->domain->fid));
    CHECK(fi_close(&s->fabric->fid));
}

static fi_addr_t insert_peer(struct side *from, struct side *to) {
    char name[64];
    size_t len = sizeof(name);
    fi_addr_t a = FI_ADDR_NOTAVAIL;
    CHECK(fi_getname(&to->ep->fid, name, &len));
    if (fi_av_insert(from->av, name, 1, &a, 0, NULL) != 1) exit(3);
    return a;
}

static void wait_one(struct side *s) {
    struct fi_cq_msg_entry e;
    for (long spins = 0; spins < 100000000; spins++) {
        ssize_t n = fi_cq_read(s->cq, &e, 1);
        if (n == 1) return;
        if (n != -FI_EAGAIN) {
            fprintf(stderr, "fi_cq_read: %zd\n", n);
            exit(4);
        }
    }
    fprintf(stderr, "no completion\n");
    exit(5);
}

/* One message from `from` to `to` (they may be the same side). */
static void one_message(struct side *from, struct side *to) {
    fi_addr_t dest = insert_peer(from, to);
    CHECK(fi_recv(to->ep, to->buf, sizeof(to->buf), fi_mr_desc(to->mr), FI_ADDR_UNSPEC, NULL));
    strcpy(from->buf, "lifecycle");
    for (;;) {
        ssize_t rc = fi_send(from->ep, from->buf, 10, fi_mr_desc(from->mr), dest, NULL);
        if (rc == 0) break;
        if (rc != -FI_EAGAIN) CHECK(rc);
        struct fi_cq_msg_entry e;
        fi_cq_read(from->cq, &e, 0);
    }
    wait_one(from);
    wait_one(to);
    if (strcmp(to->buf, "lifecycle")) exit(6);
}

struct usage {
    long rss_kb, heap; /* heap: bytes malloc has handed out and not had back */
    int fds, threads;
};

static struct usage measure(void) {
    struct usage u = {0, 0, 0, 0};
    struct mallinfo2 mi = mallinfo2();
    u.heap = (long)(mi.uordblks + mi.hblkhd);
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof(line), f)) {
        if (!strncmp(line, "VmRSS:", 6)) u.rss_kb = atol(line + 6);
        if (!strncmp(line, "Threads:", 8)) u.threads = atoi(line + 8);
    }
    if (f) fclose(f);
    DIR *d = opendir("/proc/self/fd");
    for (struct dirent *e; d && (e = readdir(d));)
        u.fds += e->d_name[0] != '.';
    if (d) closedir(d);
    return u;
}

/* Under AddressSanitizer freed memory waits in its quarantine, still resident, and
 * mallinfo knows nothing: LeakSanitizer checks for leaks at exit instead, and the
 * resident set only has to stay clear of a ring or window per iteration. */
#if defined(__SANITIZE_ADDRESS__)
#define SOFTNIC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SOFTNIC_ASAN 1
#endif
#endif
#ifdef SOFTNIC_ASAN
static const long kRssSlackKb = 64 * 1024;
#else
static const long kRssSlackKb = 1024;
#endif

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s cxi|usnic <iterations>\n", argv[0]);
        return 2;
    }
    int cxi = !strcmp(argv[1], "cxi"), iterations = atoi(argv[2]), warmup = iterations / 5;
    struct fi_info *a = info_for(argv[1], cxi ? "cxi0" : NULL, FI_EP_RDM);
    struct fi_info *b = cxi ? info_for("cxi", "cxi1", FI_EP_RDM) : a;
    struct usage base = {0, 0, 0, 0};
    for (int i = 0; i < iterations; i++) {
        if (i == warmup) base = measure();
        struct side s0, s1;
        open_side(&s0, a);
        open_side(&s1, b);
        if (cxi) one_message(&s0, &s0); /* within the NIC: shared memory */
        one_message(&s0, &s1);          /* cxi: between NICs, UDP; usnic: UDP */
        close_side(&s1);
        close_side(&s0);
    }
    struct usage end = measure();
    printf(
        "%s, %d iterations: after %d: heap %ld B, rss %ld KiB, %d fds, %d threads; at the "
        "end: heap %ld B, rss %ld KiB, %d fds, %d threads\n",
        argv[1], iterations, warmup, base.heap, base.rss_kb, base.fds, base.threads, end.heap,
        end.rss_kb, end.fds, end.threads);
    if (b != a) fi_freeinfo(b);
    fi_freeinfo(a);
    /* Flat: no descriptor or thread left behind; the heap within 16 bytes per iteration
     * of the warm-up (the smallest leaked object would be more), the resident set within
     * 1 MiB (allocator noise; a leaked ring or window would be more). */
    long n = iterations - warmup;
    int ok = end.fds == base.fds && end.threads == base.threads && end.heap - base.heap < 16 * n &&
             end.rss_kb - base.rss_kb < kRssSlackKb;
    if (!ok) printf("FAIL: not flat\n");
    return ok ? 0 : 1;
}

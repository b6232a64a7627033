// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* incast: many senders stream large tagged messages to one receiving endpoint, every byte
 * checked. Public libfabric API only; the provider is INCAST_PROV (default cxi).
 *
 *   incast recv PORT SENDERS MSGS SIZE        one endpoint; waits on TCP PORT for the
 *                                             sender processes and their addresses
 *   incast send HOST PORT COUNT MSGS SIZE     COUNT endpoints in this process, each one
 *                                             a sender of MSGS messages of SIZE bytes
 *
 * Each endpoint keeps INCAST_WINDOW sends in flight (default 1). INCAST_SLEEP=1: a sender
 * process with nothing to post sleeps in fi_cq_sread instead of polling, leaving the CPU
 * to the others (a small machine standing in for many).
 * Several sender processes may connect; the receiver starts everyone at once when it knows
 * SENDERS endpoints. Sender i tags its messages with i; the receiver keeps INCAST_DEPTH
 * (default 2) receives posted per sender, so the k-th completion for tag i must be message
 * k of sender i, and every 64-bit word of it is checked (sender, message, offset).
 *
 * The receiver prints one line:
 *   incast: senders S msgs M size B time T s goodput G MB/s share min/median/max A/B/C MB/s
 * where a sender's share is its bytes over the time its last message took to arrive.
 * INCAST_MEMORY=1: after the last message, the receiver polls half a second more (the
 * senders idle) and prints its heap per peer: once the senders' addresses are inserted,
 * after the traffic and after the quiet half second; and its resident growth per peer.
 * Exit status: 0 all correct; 1 wrong data or a stall of INCAST_STALL_S seconds (default
 * 60); 2 an error completion (a peer declared dead included) or a failed call; 64 usage.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_SENDERS 1024
#define MAX_CONNS 64
#define ADDR_MAX 64

static const char *role = "incast";

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static _Noreturn void die(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", role);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(code);
}

#define CHECK(call)                                                           \
    do {                                                                      \
        int rc_ = (int)(call);                                                \
        if (rc_) die(2, "%s failed: %d (%s)", #call, rc_, fi_strerror(-rc_)); \
    } while (0)

/* ---- out of band: TCP, whole reads and writes ------------------------------------ */

static void full_write(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) die(2, "oob write: %s", strerror(errno));
        c += w;
        n -= (size_t)w;
    }
}

static void full_read(int fd, void *p, size_t n) {
    char *c = p;
    while (n) {
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) die(2, "oob read: %s", r ? strerror(errno) : "peer closed");
        c += r;
        n -= (size_t)r;
    }
}

static int tcp_listen(int port) {
    int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (fd < 0) die(2, "socket: %s", strerror(errno));
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, MAX_CONNS))
        die(2, "listen on %d: %s", port, strerror(errno));
    return fd;
}

static int tcp_connect(const char *host, const char *port) {
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res;
    double deadline = now() + 30;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc) die(2, "getaddrinfo %s:%s: %s", host, port, gai_strerror(rc));
    for (;;) { /* the receiver may not listen yet */
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd >= 0 && !connect(fd, res->ai_addr, res->ai_addrlen)) {
            freeaddrinfo(res);
            return fd;
        }
        if (fd >= 0) close(fd);
        if (now() > deadline) die(2, "cannot connect to %s:%s", host, port);
        usleep(100000);
    }
}

/* ---- libfabric: one domain, one CQ and AV, several endpoints ---------------------- */

struct fab {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep **eps;
    int count;
};

/* blocking: the CQ has a wait object, and the process sleeps in fi_cq_sread when idle. */
static void fab_up(struct fab *f, int count, int blocking) {
    struct fi_info *hints = fi_allocinfo();
    const char *prov = getenv("INCAST_PROV");
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
    struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE};
    if (!hints) die(2, "fi_allocinfo failed");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_TAGGED;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->fabric_attr->prov_name = strdup(prov && *prov ? prov : "cxi");
    hints->domain_attr->mr_mode =
        FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ENDPOINT;
    CHECK(fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &f->info));
    fi_freeinfo(hints);
    if (f->info->domain_attr->mr_mode & FI_MR_LOCAL) die(2, "the provider wants FI_MR_LOCAL");
    CHECK(fi_fabric(f->info->fabric_attr, &f->fabric, NULL));
    CHECK(fi_domain(f->fabric, f->info, &f->domain, NULL));
    CHECK(fi_av_open(f->domain, &av_attr, &f->av, NULL));
    cq_attr.size = 4096;
    if (blocking) cq_attr.wait_obj = FI_WAIT_UNSPEC;
    CHECK(fi_cq_open(f->domain, &cq_attr, &f->cq, NULL));
    f->count = count;
    f->eps = calloc((size_t)count, sizeof(*f->eps));
    if (!f->eps) die(2, "out of memory");
    for (int i = 0; i < count; i++) {
        CHECK(fi_endpoint(f->domain, f->info, &f->eps[i], NULL));
        CHECK(fi_ep_bind(f->eps[i], &f->av->fid, 0));
        CHECK(fi_ep_bind(f->eps[i], &f->cq->fid, FI_TRANSMIT | FI_RECV));
        CHECK(fi_enable(f->eps[i]));
    }
}

static void fab_down(struct fab *f) {
    for (int i = 0; i < f->count; i++)
        CHECK(fi_close(&f->eps[i]->fid));
    free(f->eps);
    CHECK(fi_close(&f->cq->fid));
    CHECK(fi_close(&f->av->fid));
    CHECK(fi_close(&f->domain->fid));
    CHECK(fi_close(&f->fabric->fid));
    fi_freeinfo(f->info);
}

static fi_addr_t insert(struct fab *f, const void *name) {
    fi_addr_t a;
    if (fi_av_insert(f->av, name, 1, &a, 0, NULL) != 1) die(2, "fi_av_insert failed");
    return a;
}

/* An error completion (a dead peer included) ends the run. */
static _Noreturn void error_exit(struct fab *f) {
    struct fi_cq_err_entry e = {0};
    if (fi_cq_readerr(f->cq, &e, 0) == 1)
        die(2, "error completion: %d (%s), provider error %d", e.err, fi_strerror(e.err),
            e.prov_errno);
    die(2, "error completion that fi_cq_readerr did not return");
}

/* ---- message contents ------------------------------------------------------------- */

static uint64_t word(uint64_t sender, uint64_t msg, uint64_t k) {
    return (sender << 48) ^ (msg << 28) ^ k ^ 0x5a5a000000000000ULL;
}

static void fill(uint64_t *p, size_t words, uint64_t sender, uint64_t msg) {
    for (size_t k = 0; k < words; k++)
        p[k] = word(sender, msg, k);
}

static int check(const uint64_t *p, size_t words, uint64_t sender, uint64_t msg) {
    for (size_t k = 0; k < words; k++)
        if (p[k] != word(sender, msg, k)) return 0;
    return 1;
}

/* ---- memory: what the heap holds and what is resident ------------------------------ */

static double heap_bytes(void) {
    struct mallinfo2 m = mallinfo2();
    return (double)(m.uordblks + m.hblkhd);
}

static double rss_bytes(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
        fclose(f);
    }
    return (double)resident * (double)sysconf(_SC_PAGESIZE);
}

/* ---- the receiver ------------------------------------------------------------------ */

struct rop {
    struct fi_context2 ctx; /* first: the CQ hands back &ctx */
    int sender;
    uint64_t *buf;
};

struct sender_state {
    fi_addr_t addr;
    uint64_t next_msg, done_msgs;
    double finished;
};

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void post_recv(struct fab *f, struct rop *o, size_t size) {
    for (;;) {
        ssize_t rc = fi_trecv(f->eps[0], o->buf, size, NULL, FI_ADDR_UNSPEC, (uint64_t)o->sender, 0,
                              &o->ctx);
        if (!rc) return;
        if (rc != -FI_EAGAIN) die(2, "fi_trecv: %zd (%s)", rc, fi_strerror((int)-rc));
        struct fi_cq_tagged_entry e;
        if (fi_cq_read(f->cq, &e, 0) == -FI_EAVAIL) error_exit(f);
    }
}

/* Accept sender processes until `senders` endpoints are known; returns the connections. */
static int gather(struct fab *f, int port, int senders, struct sender_state *st, int *conns) {
    int ls = tcp_listen(port), nconn = 0, known = 0;
    while (known < senders) {
        uint32_t count, len;
        int fd = accept(ls, NULL, NULL);
        if (fd < 0) die(2, "accept: %s", strerror(errno));
        if (nconn == MAX_CONNS) die(2, "more than %d sender processes", MAX_CONNS);
        conns[nconn++] = fd;
        full_read(fd, &count, sizeof(count));
        full_read(fd, &len, sizeof(len));
        if (!count || count > (uint32_t)(senders - known) || !len || len > ADDR_MAX)
            die(2, "a sender process offered %u endpoints of %u-byte names", count, len);
        uint32_t first = (uint32_t)known;
        full_write(fd, &first, sizeof(first));
        for (uint32_t i = 0; i < count; i++) {
            unsigned char name[ADDR_MAX];
            full_read(fd, name, len);
            st[known++].addr = insert(f, name);
        }
    }
    close(ls);
    return nconn;
}

static int receiver(int port, int senders, uint64_t msgs, size_t size) {
    struct fab f;
    int conns[MAX_CONNS], depth = getenv("INCAST_DEPTH") ? atoi(getenv("INCAST_DEPTH")) : 2;
    double stall = getenv("INCAST_STALL_S") ? atof(getenv("INCAST_STALL_S")) : 60;
    struct sender_state *st = calloc((size_t)senders, sizeof(*st));
    struct rop *ops = calloc((size_t)senders * (size_t)depth, sizeof(*ops));
    unsigned char name[ADDR_MAX];
    size_t name_len = sizeof(name), words = size / 8;
    if (!st || !ops || depth < 1) die(2, "out of memory, or INCAST_DEPTH < 1");
    for (int i = 0; i < senders * depth; i++) {
        ops[i].sender = i / depth;
        ops[i].buf = aligned_alloc(64, size);
        if (!ops[i].buf) die(2, "out of memory");
    }
    fab_up(&f, 1, 0);
    CHECK(fi_getname(&f.eps[0]->fid, name, &name_len));
    double heap0 = heap_bytes(), rss0 = rss_bytes();
    int nconn = gather(&f, port, senders, st, conns);
    double heap_inserted = heap_bytes();
    for (int s = 0; s < senders; s++)
        for (int d = 0; d < depth && (uint64_t)d < msgs; d++) {
            post_recv(&f, &ops[s * depth + d], size);
        }
    for (int c = 0; c < nconn; c++) { /* the start: every sender learns our address */
        uint32_t len = (uint32_t)name_len;
        full_write(conns[c], &len, sizeof(len));
        full_write(conns[c], name, name_len);
    }
    double t0 = now(), last = t0;
    uint64_t left = (uint64_t)senders * msgs;
    while (left) {
        struct fi_cq_tagged_entry ev[16];
        ssize_t n = fi_cq_read(f.cq, ev, 16);
        if (n == -FI_EAVAIL) error_exit(&f);
        if (n == -FI_EAGAIN) {
            if (now() - last > stall) die(1, "stall: %lu messages missing", (unsigned long)left);
            continue;
        }
        if (n < 0) die(2, "fi_cq_read: %zd", n);
        last = now();
        for (ssize_t i = 0; i < n; i++) {
            struct rop *o = ev[i].op_context;
            struct sender_state *s = &st[o->sender];
            if (ev[i].len != size || ev[i].tag != (uint64_t)o->sender)
                die(1, "sender %d: %zu bytes tag %lu", o->sender, ev[i].len,
                    (unsigned long)ev[i].tag);
            if (!check(o->buf, words, (uint64_t)o->sender, s->done_msgs))
                die(1, "sender %d message %lu: wrong data", o->sender, (unsigned long)s->done_msgs);
            memset(o->buf, 0, size);
            left--;
            if (++s->done_msgs == msgs) s->finished = last - t0;
            if (s->done_msgs + (uint64_t)depth <= msgs) post_recv(&f, o, size);
        }
    }
    double t = now() - t0, *share = calloc((size_t)senders, sizeof(double));
    double heap_active = heap_bytes(), rss_active = rss_bytes();
    for (int s = 0; s < senders; s++)
        share[s] = (double)msgs * (double)size / st[s].finished / 1e6;
    qsort(share, (size_t)senders, sizeof(double), cmp_double);
    printf(
        "incast: senders %d msgs %lu size %zu time %.3f s goodput %.1f MB/s share "
        "min/median/max %.1f/%.1f/%.1f MB/s\n",
        senders, (unsigned long)msgs, size, t,
        (double)senders * (double)msgs * (double)size / t / 1e6, share[0], share[senders / 2],
        share[senders - 1]);
    if (getenv("INCAST_MEMORY")) { /* the senders stay, idle, while we poll a while */
        struct fi_cq_tagged_entry e;
        for (double quiet = now() + 0.5; now() < quiet;)
            if (fi_cq_read(f.cq, &e, 1) == -FI_EAVAIL) error_exit(&f);
        double per = 1.0 / senders;
        printf(
            "memory per peer (heap bytes): inserted %.0f, after traffic %.0f, quiet %.0f; "
            "resident after traffic %.0f per peer\n",
            (heap_inserted - heap0) * per, (heap_active - heap0) * per,
            (heap_bytes() - heap0) * per, (rss_active - rss0) * per);
    }
    fflush(stdout);
    for (int c = 0; c < nconn; c++) { /* done: senders may close */
        char d = 'D';
        full_write(conns[c], &d, 1);
        close(conns[c]);
    }
    fab_down(&f);
    return 0;
}

/* ---- the senders ------------------------------------------------------------------- */

struct sop {
    struct fi_context2 ctx;
    int ep;
    uint64_t *buf;
};

static int sender(const char *host, const char *port, int count, uint64_t msgs, size_t size) {
    struct fab f;
    int fd = tcp_connect(host, port);
    uint32_t first, len = 0, n32 = (uint32_t)count;
    unsigned char name[ADDR_MAX];
    int blocking = getenv("INCAST_SLEEP") && atoi(getenv("INCAST_SLEEP"));
    fab_up(&f, count, blocking);
    for (int i = 0; i < count; i++) {
        size_t l = sizeof(name);
        CHECK(fi_getname(&f.eps[i]->fid, name, &l));
        if (!i) {
            len = (uint32_t)l;
            full_write(fd, &n32, sizeof(n32));
            full_write(fd, &len, sizeof(len));
        }
        full_write(fd, name, len);
    }
    full_read(fd, &first, sizeof(first));
    full_read(fd, &len, sizeof(len));
    if (!len || len > ADDR_MAX) die(2, "bad receiver name length %u", len);
    full_read(fd, name, len);
    fi_addr_t dest = insert(&f, name);
    /* INCAST_WINDOW (default 1) sends in flight per endpoint, each from its own buffer. */
    int window = getenv("INCAST_WINDOW") ? atoi(getenv("INCAST_WINDOW")) : 1;
    if (window < 1 || window > 1024) die(64, "INCAST_WINDOW out of 1..1024");
    int nops = count * window, nready = nops;
    struct sop *ops = calloc((size_t)nops, sizeof(*ops));
    uint64_t *posted = calloc((size_t)count, sizeof(uint64_t)), left = (uint64_t)count * msgs;
    int *ready = calloc((size_t)nops, sizeof(int));
    if (!ops || !posted || !ready) die(2, "out of memory");
    for (int i = 0; i < nops; i++) {
        ops[i].ep = i % count;
        ops[i].buf = aligned_alloc(64, size);
        if (!ops[i].buf) die(2, "out of memory");
        ready[i] = nops - 1 - i; /* endpoints take turns from the first send on */
    }
    while (left) {
        while (nready) {
            struct sop *o = &ops[ready[nready - 1]];
            uint64_t id = first + (uint64_t)o->ep;
            if (posted[o->ep] == msgs) { /* this endpoint has all its messages out */
                nready--;
                continue;
            }
            fill(o->buf, size / 8, id, posted[o->ep]);
            ssize_t rc = fi_tsend(f.eps[o->ep], o->buf, size, NULL, dest, id, &o->ctx);
            if (rc == -FI_EAGAIN) break;
            if (rc) die(2, "fi_tsend: %zd (%s)", rc, fi_strerror((int)-rc));
            posted[o->ep]++;
            nready--;
        }
        struct fi_cq_tagged_entry ev[16];
        ssize_t n =
            blocking && !nready ? fi_cq_sread(f.cq, ev, 16, NULL, 100) : fi_cq_read(f.cq, ev, 16);
        if (n == -FI_EAVAIL) error_exit(&f);
        if (n < 0 && n != -FI_EAGAIN) die(2, "fi_cq_read: %zd", n);
        for (ssize_t i = 0; i < n; i++) {
            struct sop *o = ev[i].op_context;
            left--;
            ready[nready++] = (int)(o - ops);
        }
    }
    char d;
    full_read(fd, &d, 1); /* the receiver has everything */
    close(fd);
    fab_down(&f);
    return 0;
}

static uint64_t num(const char *s, uint64_t lo, uint64_t hi) {
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*end || v < lo || v > hi)
        die(64, "bad number %s (%llu..%llu)", s, (unsigned long long)lo, (unsigned long long)hi);
    return v;
}

int main(int argc, char **argv) {
    if (argc == 6 && !strcmp(argv[1], "recv")) {
        role = "incast recv";
        size_t size = num(argv[5], 8, 1 << 26);
        if (size % 8) die(64, "SIZE must be a multiple of 8");
        return receiver((int)num(argv[2], 1, 65535), (int)num(argv[3], 1, MAX_SENDERS),
                        num(argv[4], 1, 1 << 30), size);
    }
    if (argc == 7 && !strcmp(argv[1], "send")) {
        role = "incast send";
        size_t size = num(argv[6], 8, 1 << 26);
        if (size % 8) die(64, "SIZE must be a multiple of 8");
        return sender(argv[2], argv[3], (int)num(argv[4], 1, MAX_SENDERS), num(argv[5], 1, 1 << 30),
                      size);
    }
    fprintf(stderr,
            "usage: incast recv PORT SENDERS MSGS SIZE\n"
            "       incast send HOST PORT COUNT MSGS SIZE\n");
    return 64;
}

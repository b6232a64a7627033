// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* soak_rdm: one of N processes, each with one RDM endpoint (cxi or usnic, public API
 * only), all sending to all at once, every byte checked.
 *
 *   soak_rdm PROVIDER RANK NRANKS DIR ROUNDS
 *
 * Addresses are swapped through files in DIR (DIR/addr.R, written by rank R). Then rank R
 * sends, in each of ROUNDS rounds, one message to every other rank (all-to-all), and in
 * every fourth round a burst of BURST more to one rank, a different one each time
 * (incast: N-1 senders, one receiver). Every message starts with a header (source, per
 * pair sequence number, length) and its bytes follow from those. The receiver keeps a
 * bitmap per source: a message whose bytes or length are wrong is corrupted, one seen
 * twice is duplicated, one never seen is lost (the process waits for it until the stall
 * limit). A rank that has everything and whose sends have all completed writes
 * DIR/done.R and keeps progressing until every live rank has done so.
 *
 * A peer that dies: sends to it complete with errors (or are refused); the peer is then
 * declared dead, nothing more is expected from it, and the others carry on.
 *
 * Exit: 0 all checks passed (dead peers are listed); 1 wrong, duplicated or unexpected
 * data, or a receive error while no peer died; 2 a failed libfabric or system call;
 * 3 no progress for SOAK_STALL_S seconds (default 60). DIR/pid.R holds the process id.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pattern.h"

#define MAGIC 0x534f414bu /* "SOAK" */
#define BURST 8           /* incast messages per sender, every fourth round */
#define SW 16             /* sends outstanding */
#define RW 64             /* receives posted */
#define MAXLEN (32 * 1024)

struct msg_hdr {
    uint32_t magic;
    uint16_t src, dst;
    uint32_t len;   /* the whole message, header included */
    uint32_t probe; /* 1: a liveness probe, no data */
    uint64_t seq;   /* per (src, dst) */
};

struct op {
    struct fi_context2 ctx; /* first: the CQ hands back &ctx */
    int send;
    int probe;
    int slot;
    int peer;
    unsigned char *buf;
};

struct peer {
    fi_addr_t addr;
    int dead;
    uint64_t next_seq; /* next sequence number to send it */
    uint64_t got;      /* distinct messages received from it */
    unsigned char *seen;
};

static int me, nranks, rounds;
static const char *dir;
static struct peer *peers;
static uint64_t expect_from; /* messages each peer sends us */
static double stall_s = 60, last_progress;
static uint64_t n_sent, n_recv, bytes_sent, bytes_recv, n_dup, n_bad, n_rx_err, n_dead;

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_cq *cq;
static struct fid_ep *ep;
static struct fid_mr *mr;
static void *desc;

static struct op sops[SW], rops[RW];
static int free_slots[SW], nfree;
static unsigned char *bufs;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static _Noreturn void die(int code, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "soak_rdm rank %d: ", me);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    exit(code);
}

#define FI_CHECK(call)                                                        \
    do {                                                                      \
        int rc_ = (int)(call);                                                \
        if (rc_) die(2, "%s failed: %d (%s)", #call, rc_, fi_strerror(-rc_)); \
    } while (0)

static uint64_t key(int src, int dst, uint64_t seq) {
    return ((uint64_t)src << 48) ^ ((uint64_t)dst << 32) ^ seq;
}

/* Sizes from a header alone to MAXLEN: several packets, one, or a few bytes. */
static uint32_t msg_len(int src, int dst, uint64_t seq) {
    static const uint32_t lens[] = {sizeof(struct msg_hdr), 64, 1000, 1500, 4096, 9000, MAXLEN};
    uint64_t r = mix(key(src, dst, seq));
    uint32_t base = lens[r % (sizeof(lens) / sizeof(lens[0]))];
    uint32_t jitter = (uint32_t)(r >> 32) % 61;
    return base + jitter > MAXLEN ? MAXLEN : base + jitter;
}

static void build(unsigned char *buf, int dst, uint64_t seq) {
    struct msg_hdr h = {MAGIC, (uint16_t)me, (uint16_t)dst, msg_len(me, dst, seq), 0, seq};
    uint64_t k = key(me, dst, seq);
    memcpy(buf, &h, sizeof(h));
    for (uint32_t i = sizeof(h); i < h.len; i++)
        buf[i] = body_byte(k, i);
}

/* Checks a received message; counts it or says what is wrong with it. */
static void check(const unsigned char *buf, size_t len) {
    struct msg_hdr h;
    if (len < sizeof(h)) {
        n_bad++;
        fprintf(stderr, "rank %d: runt of %zu bytes\n", me, len);
        return;
    }
    memcpy(&h, buf, sizeof(h));
    if (h.magic == MAGIC && h.probe == 1 && len == sizeof(h) && h.src < nranks && h.dst == me)
        return; /* somebody checking that we are alive */
    if (h.magic != MAGIC || h.src >= nranks || h.src == me || h.dst != me || h.seq >= expect_from ||
        h.len != len || h.len != msg_len(h.src, me, h.seq)) {
        n_bad++;
        fprintf(stderr, "rank %d: bad header (magic %x src %u dst %u seq %lu len %u/%zu)\n", me,
                h.magic, h.src, h.dst, (unsigned long)h.seq, h.len, len);
        return;
    }
    uint64_t k = key(h.src, me, h.seq);
    for (uint32_t i = sizeof(h); i < h.len; i++)
        if (buf[i] != body_byte(k, i)) {
            n_bad++;
            fprintf(stderr, "rank %d: message %lu from %u corrupted at byte %u\n", me,
                    (unsigned long)h.seq, h.src, i);
            return;
        }
    struct peer *p = &peers[h.src];
    if (p->seen[h.seq / 8] & (1u << (h.seq % 8))) {
        n_dup++;
        fprintf(stderr, "rank %d: message %lu from %u duplicated\n", me, (unsigned long)h.seq,
                h.src);
        return;
    }
    p->seen[h.seq / 8] |= (unsigned char)(1u << (h.seq % 8));
    p->got++;
    n_recv++;
    bytes_recv += len;
}

/* ---- files in DIR ------------------------------------------------------------------ */

static void put_file(const char *name, const void *data, size_t len) {
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(tmp, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) die(2, "cannot write %s", tmp);
    if (rename(tmp, path)) die(2, "rename %s: %s", path, strerror(errno));
}

/* The file's bytes (up to cap), or -1 while it does not exist. */
static long get_file(const char *name, void *data, size_t cap) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t n = fread(data, 1, cap, f);
    fclose(f);
    return (long)n;
}

/* ---- libfabric --------------------------------------------------------------------- */

static void fabric_up(const char *prov) {
    struct fi_info *hints = fi_allocinfo();
    if (!hints) die(2, "fi_allocinfo failed");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->fabric_attr->prov_name = strdup(prov);
    hints->domain_attr->mr_mode =
        FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ENDPOINT;
    int rc = fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &info);
    if (rc) die(2, "fi_getinfo(%s): %d (%s)", prov, rc, fi_strerror(-rc));
    fi_freeinfo(hints);
    if (info->ep_attr->max_msg_size < MAXLEN)
        die(2, "max_msg_size %zu < %d", info->ep_attr->max_msg_size, MAXLEN);

    struct fi_av_attr av_attr = {.type = FI_AV_TABLE, .count = (size_t)nranks};
    struct fi_cq_attr cq_attr = {
        .format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_NONE, .size = 4 * (SW + RW)};
    FI_CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
    FI_CHECK(fi_domain(fabric, info, &domain, NULL));
    FI_CHECK(fi_av_open(domain, &av_attr, &av, NULL));
    FI_CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
    FI_CHECK(fi_endpoint(domain, info, &ep, NULL));
    FI_CHECK(fi_ep_bind(ep, &av->fid, 0));
    FI_CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
    FI_CHECK(fi_enable(ep));
    if (info->domain_attr->mr_mode & FI_MR_LOCAL) {
        FI_CHECK(fi_mr_reg(domain, bufs, (size_t)(SW + RW) * MAXLEN, FI_SEND | FI_RECV, 0, 0, 0,
                           &mr, NULL));
        if (info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
            FI_CHECK(fi_mr_bind(mr, &ep->fid, 0));
            FI_CHECK(fi_mr_enable(mr));
        }
        desc = fi_mr_desc(mr);
    }
}

static void fabric_down(void) {
    if (mr) FI_CHECK(fi_close(&mr->fid));
    FI_CHECK(fi_close(&ep->fid));
    FI_CHECK(fi_close(&cq->fid));
    FI_CHECK(fi_close(&av->fid));
    FI_CHECK(fi_close(&domain->fid));
    FI_CHECK(fi_close(&fabric->fid));
    fi_freeinfo(info);
}

/* Publish our name, then wait for everybody's and insert them in rank order. */
static void swap_addresses(void) {
    unsigned char name[256];
    size_t len = sizeof(name);
    char file[64];
    FI_CHECK(fi_getname(&ep->fid, name, &len));
    snprintf(file, sizeof(file), "addr.%d", me);
    put_file(file, name, len);
    for (int r = 0; r < nranks; r++) {
        double t0 = now();
        long n;
        snprintf(file, sizeof(file), "addr.%d", r);
        while ((n = get_file(file, name, sizeof(name))) < 0) {
            if (now() - t0 > stall_s) die(3, "rank %d never published its address", r);
            usleep(10000);
        }
        if (fi_av_insert(av, name, 1, &peers[r].addr, 0, NULL) != 1)
            die(2, "fi_av_insert of rank %d failed", r);
    }
}

static void declare_dead(int r, const char *why) {
    if (peers[r].dead) return;
    peers[r].dead = 1;
    n_dead++;
    printf("rank %d: peer %d dead (%s)\n", me, r, why);
    fflush(stdout);
}

static void post_recv(struct op *o) {
    int rc;
    while ((rc = (int)fi_recv(ep, o->buf, MAXLEN, desc, FI_ADDR_UNSPEC, &o->ctx)) == -FI_EAGAIN)
        fi_cq_read(cq, NULL, 0);
    if (rc) die(2, "fi_recv: %d (%s)", rc, fi_strerror(-rc));
}

static void completed(struct op *o, size_t len) {
    if (!o->probe) last_progress = now();
    if (o->send) {
        free_slots[nfree++] = o->slot;
        return;
    }
    check(o->buf, len);
    post_recv(o);
}

static void failed(void) {
    struct fi_cq_err_entry e;
    memset(&e, 0, sizeof(e));
    if (fi_cq_readerr(cq, &e, 0) != 1) return;
    struct op *o = e.op_context;
    if (!o) die(2, "error completion without a context: %s", fi_strerror(e.err));
    if (o->send) {
        declare_dead(o->peer, fi_strerror(e.err));
        free_slots[nfree++] = o->slot;
        return;
    }
    n_rx_err++;
    fprintf(stderr, "rank %d: receive error %d (%s)\n", me, e.err, fi_strerror(e.err));
    post_recv(o);
}

static int progress(void) {
    struct fi_cq_msg_entry ents[16];
    ssize_t n = fi_cq_read(cq, ents, 16);
    if (n == -FI_EAVAIL) {
        failed();
        return 1;
    }
    if (n < 0 && n != -FI_EAGAIN) die(2, "fi_cq_read: %zd (%s)", n, fi_strerror((int)-n));
    for (ssize_t i = 0; i < n; i++)
        completed(ents[i].op_context, ents[i].len);
    return n > 0;
}

/* ---- the schedule -------------------------------------------------------------------- */

struct cursor {
    int round, step, burst; /* step 1..N-1: all-to-all; then the burst of an incast round */
};

static int incast_target(int round) {
    return round % 4 == 3 ? (round / 4) % nranks : -1;
}

/* The next destination, or -1 when every round is done. */
static int next_dst(struct cursor *c) {
    while (c->round < rounds) {
        if (c->step < nranks - 1) return (me + 1 + c->step++) % nranks;
        int t = incast_target(c->round);
        if (t >= 0 && t != me && c->burst < BURST) {
            c->burst++;
            return t;
        }
        c->round++;
        c->step = c->burst = 0;
    }
    return -1;
}

static uint64_t count_expected(void) {
    uint64_t n = (uint64_t)rounds;
    for (int k = 0; k < rounds; k++)
        if (incast_target(k) == me) n += BURST;
    return n;
}

/* Posts one send (data, or a probe); 0 when the queue is full (try again after progress). */
static int send_one(int dst, int probe) {
    struct peer *p = &peers[dst];
    int slot = free_slots[nfree - 1];
    struct op *o = &sops[slot];
    if (probe) {
        struct msg_hdr h = {MAGIC, (uint16_t)me, (uint16_t)dst, sizeof(h), 1, 0};
        memcpy(o->buf, &h, sizeof(h));
    } else {
        build(o->buf, dst, p->next_seq);
    }
    uint32_t len = ((struct msg_hdr *)o->buf)->len;
    o->peer = dst;
    o->probe = probe;
    int rc = (int)fi_send(ep, o->buf, len, desc, p->addr, &o->ctx);
    if (rc == -FI_EAGAIN) return 0;
    nfree--;
    if (probe) {
        if (rc) {
            free_slots[nfree++] = slot;
            declare_dead(dst, fi_strerror(-rc));
        }
        return 1;
    }
    p->next_seq++;
    if (rc) { /* the provider already knows the peer is gone */
        free_slots[nfree++] = slot;
        declare_dead(dst, fi_strerror(-rc));
        return 1;
    }
    n_sent++;
    bytes_sent += len;
    return 1;
}

static int have_everything(void) {
    for (int r = 0; r < nranks; r++)
        if (r != me && !peers[r].dead && peers[r].got < expect_from) return 0;
    return 1;
}

static int peer_done(int r) {
    char file[64], c;
    snprintf(file, sizeof(file), "done.%d", r);
    return get_file(file, &c, 1) >= 0;
}

static int all_done(void) {
    for (int r = 0; r < nranks; r++)
        if (r != me && !peers[r].dead && !peer_done(r)) return 0;
    return 1;
}

static void run(void) {
    struct cursor c = {0, 0, 0};
    int dst = next_dst(&c), done_written = 0, halfway = 0;
    double next_look = 0, next_probe = 0;
    last_progress = now();
    for (;;) {
        int busy = 0;
        if (!halfway && c.round >= rounds / 2) { /* the killed-peer run's cue */
            printf("rank %d: halfway\n", me);
            fflush(stdout);
            halfway = 1;
        }
        while (dst >= 0 && nfree > 0) {
            if (peers[dst].dead) {
                dst = next_dst(&c);
                continue;
            }
            if (!send_one(dst, 0)) break;
            busy = 1;
            dst = next_dst(&c);
        }
        busy |= progress();
        double t = now();
        /* Waiting for a peer we send nothing more, for its data or for its done file (it
         * may have been killed after its last message reached us): a probe finds out
         * whether it lives. */
        if (dst < 0 && t >= next_probe) {
            for (int r = 0; r < nranks && nfree > 0; r++)
                if (r != me && !peers[r].dead &&
                    (peers[r].got < expect_from || (done_written && !peer_done(r))))
                    send_one(r, 1);
            next_probe = t + 1.0;
        }
        if (!done_written && dst < 0 && nfree == SW && have_everything()) {
            char file[64];
            snprintf(file, sizeof(file), "done.%d", me);
            put_file(file, "1", 1);
            done_written = 1;
        }
        if (done_written && t >= next_look) {
            if (all_done()) return;
            next_look = t + 0.01;
        }
        if (t - last_progress > stall_s) {
            for (int r = 0; r < nranks; r++)
                if (r != me)
                    fprintf(stderr, "rank %d: from %d got %lu of %lu%s\n", me, r,
                            (unsigned long)peers[r].got, (unsigned long)expect_from,
                            peers[r].dead ? " (dead)" : "");
            die(3, "no progress for %.0f s (sends outstanding %d, schedule %s)", stall_s,
                SW - nfree, dst < 0 ? "done" : "not done");
        }
        if (!busy) sched_yield();
    }
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: soak_rdm PROVIDER RANK NRANKS DIR ROUNDS\n");
        return 64;
    }
    me = atoi(argv[2]);
    nranks = atoi(argv[3]);
    dir = argv[4];
    rounds = atoi(argv[5]);
    if (nranks < 2 || nranks > 1024 || me < 0 || me >= nranks || rounds < 1) {
        fprintf(stderr, "soak_rdm: bad rank, rank count or rounds\n");
        return 64;
    }
    if (getenv("SOAK_STALL_S")) stall_s = atof(getenv("SOAK_STALL_S"));
    char file[64], pid[32];
    snprintf(file, sizeof(file), "pid.%d", me);
    put_file(file, pid, (size_t)snprintf(pid, sizeof(pid), "%d\n", (int)getpid()));

    expect_from = count_expected();
    peers = calloc((size_t)nranks, sizeof(*peers));
    bufs = aligned_alloc(4096, (size_t)(SW + RW) * MAXLEN);
    if (!peers || !bufs) die(2, "out of memory");
    for (int r = 0; r < nranks; r++) {
        peers[r].seen = calloc(expect_from / 8 + 1, 1);
        if (!peers[r].seen) die(2, "out of memory");
    }
    fabric_up(argv[1]);
    for (int i = 0; i < SW; i++) {
        sops[i] = (struct op){.send = 1, .slot = i, .buf = bufs + (size_t)i * MAXLEN};
        free_slots[nfree++] = i;
    }
    for (int i = 0; i < RW; i++) {
        rops[i] = (struct op){.send = 0, .slot = i, .buf = bufs + (size_t)(SW + i) * MAXLEN};
        post_recv(&rops[i]);
    }
    swap_addresses();
    double t0 = now();
    run();
    double secs = now() - t0;
    printf(
        "rank %d (%s): sent %lu messages (%lu bytes), received %lu (%lu bytes) in %.1f s: "
        "%lu duplicated, %lu corrupted, 0 lost, %lu receive errors, %lu dead peers\n",
        me, argv[1], (unsigned long)n_sent, (unsigned long)bytes_sent, (unsigned long)n_recv,
        (unsigned long)bytes_recv, secs, (unsigned long)n_dup, (unsigned long)n_bad,
        (unsigned long)n_rx_err, (unsigned long)n_dead);
    fabric_down();
    for (int r = 0; r < nranks; r++)
        free(peers[r].seen);
    free(peers);
    free(bufs);
    if (n_dup || n_bad || (n_rx_err && !n_dead)) return 1;
    return 0;
}

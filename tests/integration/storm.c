/* storm: a two-host stress test of a libfabric RDM provider (cxi by default), public API only.
 *
 *   storm server PORT N            listen for the peer on TCP PORT (any address)
 *   storm client SERVER_IP PORT N  connect to the server
 *
 * The TCP connection only swaps fi_getname addresses and, at the end, says "done" both
 * ways, so that neither process closes its endpoint while the other still waits for it.
 * Each side then sends N tagged messages and receives N, both directions at once, with up
 * to W sends and W receives outstanding. Message i is a header (sequence i, payload length,
 * checksum) and a payload of a size that depends on i: mostly 8..256 bytes, every 97th
 * 4 KiB, every 997th 64 KiB. Receives are all posted with the same tag, so they match in
 * the order they were posted; with send-after-send ordering the k-th posted receive must
 * therefore hold message k. The receiver checks that, and the length, checksum and every
 * payload byte; it counts order errors, duplicates, corrupted and (on a stall) lost messages.
 *
 *   storm victim PORT [KILL_AFTER]   server that receives until it is killed; after
 *                                    READY_AFTER messages it prints "victim: ready pid P";
 *                                    with KILL_AFTER it SIGKILLs itself after that many
 *   storm survivor SERVER_IP PORT    client that streams 64 KiB and 8-byte messages to the
 *                                    victim until its sends fail, then checks that every
 *                                    outstanding operation completes (with an error) in
 *                                    bounded time
 *
 * Exit status: 0 all correct; 1 wrong data, lost messages, a stall of STORM_STALL_S seconds
 * (default 60) or, for the survivor, no error seen / operations left pending; 2 an error
 * completion or a failed libfabric or socket call; 64 usage.
 *
 * Environment: STORM_PROV (provider, default cxi), STORM_STALL_S, STORM_VERBOSE=1,
 * STORM_SEND_DELAY_MS (server/client: post no send for that long, only receive: the peer
 * then talks to a process that has not sent anything yet).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TAG 0x5ULL
#define W 64                     /* sends and receives outstanding, each */
#define HDR 16                   /* struct hdr on the wire */
#define MAXPAY (64 * 1024)       /* largest payload */
#define BUFSZ (HDR + MAXPAY)     /* every buffer holds the largest message */
#define HELLO 16                 /* victim -> survivor messages before the stream */
#define READY_AFTER 200          /* victim: messages received before it says "ready" */
#define EXTRA 8                  /* survivor: sends posted after the first failure */

struct hdr {
    uint64_t seq;
    uint32_t len; /* payload bytes after the header */
    uint32_t csum;
};

enum { OP_SEND = 1, OP_RECV = 2 };

struct op {
    struct fi_context2 ctx; /* first: the CQ hands back &ctx */
    int kind;
    int slot;
    uint64_t idx;  /* send: sequence number; recv: post index */
    int after_err; /* survivor: posted after the first error completion */
    unsigned char *buf;
};

static const char *role = "storm";
static int verbose;
static double stall_s = 60.0;
static double send_delay; /* storm: seconds before the first send (receiving meanwhile) */

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_cq *cq;
static struct fid_ep *ep;
static fi_addr_t peer = FI_ADDR_UNSPEC;
static int sock = -1;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(int code, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s: ", role);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    fflush(stdout);
    exit(code);
}

#define FI_CHECK(call)                                                                     \
    do {                                                                                   \
        int rc_ = (int)(call);                                                             \
        if (rc_) die(2, "%s failed: %d (%s)", #call, rc_, fi_strerror(-rc_));             \
    } while (0)

static const char *errname(int e) {
    if (e < 0) e = -e;
    switch (e) {
    case FI_EHOSTUNREACH: return "FI_EHOSTUNREACH";
    case FI_EIO: return "FI_EIO";
    case FI_ECANCELED: return "FI_ECANCELED";
    case FI_ETRUNC: return "FI_ETRUNC";
    case FI_ECONNREFUSED: return "FI_ECONNREFUSED";
    case FI_ECONNRESET: return "FI_ECONNRESET";
    case FI_ETIMEDOUT: return "FI_ETIMEDOUT";
    case FI_ENOTCONN: return "FI_ENOTCONN";
    case FI_EAGAIN: return "FI_EAGAIN";
    case FI_EOTHER: return "FI_EOTHER";
    case FI_EINVAL: return "FI_EINVAL";
    case FI_ENOMEM: return "FI_ENOMEM";
    default: return "other";
    }
}

/* ---- message contents ----------------------------------------------------------- */

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static uint32_t payload_len(uint64_t i) {
    if (i % 997 == 0) return MAXPAY;
    if (i % 97 == 0) return 4096;
    return 8 + (uint32_t)(mix64(i) % 249); /* 8..256 */
}

/* Payload bytes: a xorshift stream seeded by the sequence number (and the sender's
 * role, so that the two directions carry different bytes). */
static void gen_payload(unsigned char *p, uint32_t n, uint64_t seq, uint64_t salt) {
    uint64_t s = mix64(seq * 0x9e3779b97f4a7c15ULL + salt) | 1;
    for (uint32_t j = 0; j < n; j += 8) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        uint32_t k = n - j < 8 ? n - j : 8;
        memcpy(p + j, &s, k);
    }
}

static uint32_t fnv1a(const unsigned char *p, uint32_t n) {
    uint32_t h = 2166136261u;
    for (uint32_t j = 0; j < n; j++) h = (h ^ p[j]) * 16777619u;
    return h;
}

static uint32_t build_msg(unsigned char *buf, uint64_t seq, uint32_t len, uint64_t salt) {
    struct hdr h;
    gen_payload(buf + HDR, len, seq, salt);
    h.seq = seq;
    h.len = len;
    h.csum = fnv1a(buf + HDR, len) ^ (uint32_t)seq;
    memcpy(buf, &h, HDR);
    return HDR + len;
}

/* 0: fine; else a short reason. Checks the payload against what the sender generated. */
static const char *check_msg(const unsigned char *buf, size_t got, struct hdr *h, uint64_t salt,
                             uint64_t nmax, int any_len) {
    static unsigned char ref[MAXPAY];
    if (got < HDR) return "shorter than the header";
    memcpy(h, buf, HDR);
    if (h->seq >= nmax) return "sequence number out of range";
    if (got != HDR + (size_t)h->len) return "completion length differs from header length";
    if (!any_len && h->len != payload_len(h->seq)) return "wrong payload length for sequence";
    if (h->len > MAXPAY) return "payload length too large";
    if ((fnv1a(buf + HDR, h->len) ^ (uint32_t)h->seq) != h->csum) return "bad checksum";
    gen_payload(ref, h->len, h->seq, salt);
    if (memcmp(ref, buf + HDR, h->len)) return "payload differs";
    return NULL;
}

/* ---- out of band: TCP --------------------------------------------------------------- */

static void write_all(const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t w = write(sock, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) die(2, "oob write: %s", w < 0 ? strerror(errno) : "closed");
        c += w;
        n -= (size_t)w;
    }
}

static void read_all(void *p, size_t n) {
    char *c = p;
    while (n) {
        ssize_t r = read(sock, c, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) die(2, "oob read: %s", r < 0 ? strerror(errno) : "peer closed");
        c += r;
        n -= (size_t)r;
    }
}

static void oob_listen(const char *port) {
    int one = 1, ls = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 a6;
    int p = atoi(port);
    if (p <= 0 || p > 65535) die(64, "bad port %s", port);
    if (ls < 0) { /* no IPv6: IPv4 any */
        struct sockaddr_in a4;
        ls = socket(AF_INET, SOCK_STREAM, 0);
        if (ls < 0) die(2, "socket: %s", strerror(errno));
        setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        memset(&a4, 0, sizeof(a4));
        a4.sin_family = AF_INET;
        a4.sin_port = htons((uint16_t)p);
        a4.sin_addr.s_addr = htonl(INADDR_ANY);
        if (bind(ls, (struct sockaddr *)&a4, sizeof(a4))) die(2, "bind: %s", strerror(errno));
    } else {
        int zero = 0;
        setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        setsockopt(ls, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
        memset(&a6, 0, sizeof(a6));
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons((uint16_t)p);
        a6.sin6_addr = in6addr_any;
        if (bind(ls, (struct sockaddr *)&a6, sizeof(a6))) die(2, "bind: %s", strerror(errno));
    }
    if (listen(ls, 1)) die(2, "listen: %s", strerror(errno));
    for (;;) {
        sock = accept(ls, NULL, NULL);
        if (sock >= 0) break;
        if (errno != EINTR) die(2, "accept: %s", strerror(errno));
    }
    close(ls);
    setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void oob_connect(const char *host, const char *port) {
    struct addrinfo hints, *res, *ai;
    int one = 1, rc;
    double deadline = now() + 30;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    rc = getaddrinfo(host, port, &hints, &res);
    if (rc) die(2, "getaddrinfo %s:%s: %s", host, port, gai_strerror(rc));
    for (;;) { /* the server may not listen yet */
        for (ai = res; ai; ai = ai->ai_next) {
            sock = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
            if (sock < 0) continue;
            if (!connect(sock, ai->ai_addr, ai->ai_addrlen)) break;
            close(sock);
            sock = -1;
        }
        if (sock >= 0) break;
        if (now() > deadline) die(2, "cannot connect to %s:%s: %s", host, port, strerror(errno));
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    freeaddrinfo(res);
    setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* ---- libfabric set-up ------------------------------------------------------------ */

static void fabric_up(void) {
    struct fi_info *hints = fi_allocinfo();
    struct fi_av_attr av_attr;
    struct fi_cq_attr cq_attr;
    const char *prov = getenv("STORM_PROV");
    int rc;
    if (!hints) die(2, "fi_allocinfo failed");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG | FI_TAGGED;
    hints->mode = FI_CONTEXT | FI_CONTEXT2; /* every operation gets a struct fi_context2 */
    hints->fabric_attr->prov_name = strdup(prov && *prov ? prov : "cxi");
    /* No RMA here: these registration modes cost nothing, and FI_MR_LOCAL is left out. */
    hints->domain_attr->mr_mode = FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR |
                                  FI_MR_ENDPOINT;
    hints->tx_attr->msg_order = FI_ORDER_SAS;
    hints->rx_attr->msg_order = FI_ORDER_SAS;
    rc = fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &info);
    if (rc) die(2, "fi_getinfo(%s): %d (%s)", hints->fabric_attr->prov_name, rc, fi_strerror(-rc));
    fi_freeinfo(hints);
    if (info->domain_attr->mr_mode & FI_MR_LOCAL)
        die(2, "provider %s wants FI_MR_LOCAL", info->fabric_attr->prov_name);
    if (info->tx_attr->size && info->tx_attr->size < W)
        die(2, "tx queue of %zu entries, need %d", info->tx_attr->size, W);
    if (verbose)
        fprintf(stderr, "%s: provider %s domain %s\n", role, info->fabric_attr->prov_name,
                info->domain_attr->name);

    FI_CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
    FI_CHECK(fi_domain(fabric, info, &domain, NULL));
    memset(&av_attr, 0, sizeof(av_attr));
    av_attr.type = FI_AV_TABLE;
    FI_CHECK(fi_av_open(domain, &av_attr, &av, NULL));
    memset(&cq_attr, 0, sizeof(cq_attr));
    cq_attr.format = FI_CQ_FORMAT_TAGGED;
    cq_attr.wait_obj = FI_WAIT_NONE;
    cq_attr.size = 4 * W;
    FI_CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
    FI_CHECK(fi_endpoint(domain, info, &ep, NULL));
    FI_CHECK(fi_ep_bind(ep, &av->fid, 0));
    FI_CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
    FI_CHECK(fi_enable(ep));
}

static void fabric_down(void) {
    FI_CHECK(fi_close(&ep->fid));
    FI_CHECK(fi_close(&cq->fid));
    FI_CHECK(fi_close(&av->fid));
    FI_CHECK(fi_close(&domain->fid));
    FI_CHECK(fi_close(&fabric->fid));
    fi_freeinfo(info);
}

/* Swap endpoint names over the TCP connection and insert the peer's. */
static void swap_addresses(void) {
    unsigned char mine[256], theirs[256];
    size_t len = sizeof(mine);
    uint32_t n, m;
    FI_CHECK(fi_getname(&ep->fid, mine, &len));
    n = (uint32_t)len;
    write_all(&n, sizeof(n));
    write_all(mine, len);
    read_all(&m, sizeof(m));
    if (m == 0 || m > sizeof(theirs)) die(2, "peer address of %u bytes", m);
    read_all(theirs, m);
    int rc = fi_av_insert(av, theirs, 1, &peer, 0, NULL);
    if (rc != 1) die(2, "fi_av_insert: %d (%s)", rc, fi_strerror(rc < 0 ? -rc : FI_EOTHER));
    if (verbose) {
        uint64_t a = 0, b = 0;
        memcpy(&a, mine, len < 8 ? len : 8);
        memcpy(&b, theirs, m < 8 ? m : 8);
        fprintf(stderr, "%s: my address %#llx (%zu bytes), peer %#llx (%u bytes)\n", role,
                (unsigned long long)a, len, (unsigned long long)b, m);
    }
}

/* Reads the pending error entry; prints it; returns its err. */
static int read_error(struct fi_cq_err_entry *e, int print) {
    char buf[256];
    memset(e, 0, sizeof(*e));
    ssize_t rc = fi_cq_readerr(cq, e, 0);
    if (rc != 1) die(2, "fi_cq_readerr: %zd (%s)", rc, fi_strerror((int)-rc));
    if (print) {
        const struct op *o = e->op_context;
        const char *s = fi_cq_strerror(cq, e->prov_errno, e->err_data, buf, sizeof(buf));
        fprintf(stderr,
                "%s: error completion: %s %s idx %llu: err %d %s (%s) prov_errno %d (%s) "
                "len %zu flags %#llx\n",
                role, o ? (o->kind == OP_SEND ? "send" : "recv") : "?",
                o ? (o->kind == OP_SEND ? "seq" : "post") : "", o ? (unsigned long long)o->idx : 0,
                e->err, errname(e->err), fi_strerror(e->err), e->prov_errno, s ? s : "", e->len,
                (unsigned long long)e->flags);
    }
    return e->err;
}

/* Both sides done: say so over TCP and wait for the peer to say so too, progressing the
 * endpoint meanwhile (manual progress: our acknowledgements for the peer's last messages
 * may still need to go out, or be resent). */
static void oob_finish(double limit) {
    struct fi_cq_tagged_entry ents[16];
    char c = 'D';
    double deadline = now() + limit;
    write_all(&c, 1);
    for (;;) {
        struct pollfd pfd = {sock, POLLIN, 0};
        ssize_t n = fi_cq_read(cq, ents, 16);
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry e;
            read_error(&e, 1);
            die(2, "error completion while finishing");
        }
        if (n > 0) die(2, "%zd unexpected completions while finishing", n);
        if (n != -FI_EAGAIN) die(2, "fi_cq_read: %zd (%s)", n, fi_strerror((int)-n));
        int r = poll(&pfd, 1, 1);
        if (r > 0) {
            read_all(&c, 1);
            if (c != 'D') die(2, "oob: unexpected byte %#x", c);
            return;
        }
        if (now() > deadline) die(1, "peer did not finish within %.0f s", limit);
    }
}

/* ---- storm: both directions at once ------------------------------------------------- */

static unsigned char *alloc_bufs(void) {
    size_t bytes = ((size_t)W * BUFSZ + 4095) / 4096 * 4096; /* a multiple of the alignment */
    unsigned char *p = aligned_alloc(4096, bytes);
    if (!p) die(2, "out of memory");
    memset(p, 0, (size_t)W * BUFSZ);
    return p;
}

static int storm(int is_server, uint64_t n) {
    struct op sops[W], rops[W];
    int sfree[W], nsfree = W;
    int rq[W], rq_head = 0, rq_len = 0; /* receive slots waiting to be (re)posted */
    unsigned char *sbuf = alloc_bufs(), *rbuf = alloc_bufs();
    unsigned char *seen = calloc(n ? n : 1, 1);
    uint64_t my_salt = is_server ? 0x5e5e : 0xc1c1, peer_salt = is_server ? 0xc1c1 : 0x5e5e;
    uint64_t next_send = 0, sent = 0, posted = 0, recvd = 0, distinct = 0;
    uint64_t order_err = 0, corrupt = 0, dup = 0, eagain = 0, ooo_compl = 0, max_post_done = 0;
    int first_report = 5, idle = 0;
    struct fi_cq_tagged_entry ents[32];
    double t0, last;

    if (!seen) die(2, "out of memory");
    for (int i = 0; i < W; i++) {
        sops[i] = (struct op){.kind = OP_SEND, .slot = i, .buf = sbuf + (size_t)i * BUFSZ};
        rops[i] = (struct op){.kind = OP_RECV, .slot = i, .buf = rbuf + (size_t)i * BUFSZ};
        sfree[i] = W - 1 - i;
        rq[i] = i;
    }
    rq_len = W;
    /* Receives first: then the peer's first messages find them posted. */
    while (rq_len && posted < n) {
        struct op *o = &rops[rq[rq_head]];
        o->idx = posted;
        ssize_t rc = fi_trecv(ep, o->buf, BUFSZ, NULL, FI_ADDR_UNSPEC, TAG, 0, &o->ctx);
        if (rc == -FI_EAGAIN) break;
        if (rc) die(2, "fi_trecv: %zd (%s)", rc, fi_strerror((int)-rc));
        rq_head = (rq_head + 1) % W;
        rq_len--;
        posted++;
    }
    swap_addresses();
    t0 = last = now();

    while (sent < n || recvd < n) {
        /* Post sends while slots are free (after STORM_SEND_DELAY_MS, if set). */
        while (next_send < n && nsfree && (!send_delay || now() - t0 >= send_delay)) {
            struct op *o = &sops[sfree[nsfree - 1]];
            uint32_t len = build_msg(o->buf, next_send, payload_len(next_send), my_salt);
            o->idx = next_send;
            ssize_t rc = fi_tsend(ep, o->buf, len, NULL, peer, TAG, &o->ctx);
            if (rc == -FI_EAGAIN) {
                eagain++;
                break;
            }
            if (rc) die(2, "fi_tsend seq %llu: %zd (%s)", (unsigned long long)next_send, rc,
                        fi_strerror((int)-rc));
            nsfree--;
            next_send++;
        }
        /* (Re)post receives, in order of the slots' completion. */
        while (rq_len && posted < n) {
            struct op *o = &rops[rq[rq_head]];
            o->idx = posted;
            ssize_t rc = fi_trecv(ep, o->buf, BUFSZ, NULL, FI_ADDR_UNSPEC, TAG, 0, &o->ctx);
            if (rc == -FI_EAGAIN) {
                eagain++;
                break;
            }
            if (rc) die(2, "fi_trecv: %zd (%s)", rc, fi_strerror((int)-rc));
            rq_head = (rq_head + 1) % W;
            rq_len--;
            posted++;
        }

        ssize_t got = fi_cq_read(cq, ents, 32);
        if (got == -FI_EAVAIL) {
            struct fi_cq_err_entry e;
            read_error(&e, 1);
            printf("%s: sent %llu recv %llu order_errors %llu corrupt %llu dup %llu "
                   "elapsed %.1fs: ERROR COMPLETION\n",
                   role, (unsigned long long)sent, (unsigned long long)recvd,
                   (unsigned long long)order_err, (unsigned long long)corrupt,
                   (unsigned long long)dup, now() - t0);
            fflush(stdout);
            exit(2);
        }
        if (got == -FI_EAGAIN) {
            if (++idle >= 64) {
                idle = 0;
                sched_yield();
            }
            if (now() - last > stall_s) {
                printf("%s: sent %llu recv %llu lost %llu order_errors %llu corrupt %llu dup %llu "
                       "elapsed %.1fs: NO PROGRESS for %.0f s (sends posted %llu, receives "
                       "posted %llu, distinct received %llu)\n",
                       role, (unsigned long long)sent, (unsigned long long)recvd,
                       (unsigned long long)(n - distinct), (unsigned long long)order_err,
                       (unsigned long long)corrupt, (unsigned long long)dup, now() - t0, stall_s,
                       (unsigned long long)next_send, (unsigned long long)posted,
                       (unsigned long long)distinct);
                fflush(stdout);
                exit(1);
            }
            continue;
        }
        if (got < 0) die(2, "fi_cq_read: %zd (%s)", got, fi_strerror((int)-got));
        idle = 0;
        last = now();
        for (ssize_t k = 0; k < got; k++) {
            struct op *o = ents[k].op_context;
            if (!o || (o->kind != OP_SEND && o->kind != OP_RECV))
                die(2, "completion with unknown context %p flags %#llx", (void *)o,
                    (unsigned long long)ents[k].flags);
            if (o->kind == OP_SEND) {
                if (!(ents[k].flags & FI_SEND))
                    die(2, "send completion without FI_SEND: flags %#llx",
                        (unsigned long long)ents[k].flags);
                sfree[nsfree++] = o->slot;
                sent++;
                continue;
            }
            struct hdr h;
            const char *bad = NULL;
            if (!(ents[k].flags & FI_RECV)) bad = "receive completion without FI_RECV";
            else if (ents[k].tag != TAG) bad = "wrong tag";
            else bad = check_msg(o->buf, ents[k].len, &h, peer_salt, n, 0);
            recvd++;
            if (o->idx < max_post_done) ooo_compl++; /* completion order: only reported */
            else max_post_done = o->idx;
            if (bad) {
                corrupt++;
                if (first_report-- > 0)
                    fprintf(stderr, "%s: receive #%llu (len %zu): %s\n", role,
                            (unsigned long long)o->idx, ents[k].len, bad);
            } else if (seen[h.seq]) {
                dup++;
                if (first_report-- > 0)
                    fprintf(stderr, "%s: receive #%llu: duplicate of message %llu\n", role,
                            (unsigned long long)o->idx, (unsigned long long)h.seq);
            } else {
                seen[h.seq] = 1;
                distinct++;
                if (h.seq != o->idx) {
                    order_err++;
                    if (first_report-- > 0)
                        fprintf(stderr, "%s: receive #%llu holds message %llu: out of order\n",
                                role, (unsigned long long)o->idx, (unsigned long long)h.seq);
                }
            }
            memset(o->buf, 0, HDR); /* a stale header must not pass for a new message */
            rq[(rq_head + rq_len) % W] = o->slot;
            rq_len++;
        }
    }
    double el = now() - t0;
    int perfect = !order_err && !corrupt && !dup && distinct == n;
    printf("storm: sent %llu recv %llu order_errors %llu corrupt %llu dup %llu lost %llu "
           "elapsed %.2fs (%s, %.0f msg/s each way, eagain %llu, completions out of post order "
           "%llu)%s\n",
           (unsigned long long)sent, (unsigned long long)recvd, (unsigned long long)order_err,
           (unsigned long long)corrupt, (unsigned long long)dup,
           (unsigned long long)(n - distinct), el, role,
           el > 0 ? (double)n / el : 0.0, (unsigned long long)eagain,
           (unsigned long long)ooo_compl, perfect ? "" : ": FAILED");
    fflush(stdout);
    oob_finish(stall_s);
    fabric_down();
    close(sock);
    free(sbuf);
    free(rbuf);
    free(seen);
    return perfect ? 0 : 1;
}

/* ---- killed peer: victim and survivor ------------------------------------------------ */

static _Noreturn void victim(long kill_after) {
    struct op sops[HELLO], rops[W];
    unsigned char *sbuf = malloc((size_t)HELLO * 512), *rbuf = alloc_bufs();
    uint64_t posted = 0, recvd = 0, sent = 0, next = 0;
    int ready = 0;
    struct fi_cq_tagged_entry ents[32];
    double t0, deadline;

    if (!sbuf) die(2, "out of memory");
    for (int i = 0; i < W; i++) {
        rops[i] = (struct op){.kind = OP_RECV, .slot = i, .buf = rbuf + (size_t)i * BUFSZ};
        rops[i].idx = posted++;
        FI_CHECK(fi_trecv(ep, rops[i].buf, BUFSZ, NULL, FI_ADDR_UNSPEC, TAG, 0, &rops[i].ctx));
    }
    swap_addresses();
    t0 = now();
    deadline = t0 + 2 * stall_s + 60; /* never outlive the test */
    for (;;) {
        while (next < HELLO) {
            struct op *o = &sops[next];
            *o = (struct op){.kind = OP_SEND, .slot = (int)next, .idx = next,
                             .buf = sbuf + next * 512};
            uint32_t len = build_msg(o->buf, next, payload_len(next + 1), 0x1c);
            ssize_t rc = fi_tsend(ep, o->buf, len, NULL, peer, TAG, &o->ctx);
            if (rc == -FI_EAGAIN) break;
            if (rc) die(2, "fi_tsend: %zd (%s)", rc, fi_strerror((int)-rc));
            next++;
        }
        ssize_t got = fi_cq_read(cq, ents, 32);
        if (got == -FI_EAVAIL) {
            struct fi_cq_err_entry e;
            read_error(&e, 1);
            die(2, "error completion");
        }
        if (got == -FI_EAGAIN) {
            sched_yield();
            if (now() > deadline) die(1, "still alive after %.0f s: nobody killed me", now() - t0);
            continue;
        }
        if (got < 0) die(2, "fi_cq_read: %zd (%s)", got, fi_strerror((int)-got));
        for (ssize_t k = 0; k < got; k++) {
            struct op *o = ents[k].op_context;
            if (o->kind == OP_SEND) {
                sent++;
                continue;
            }
            struct hdr h;
            const char *bad = check_msg(o->buf, ents[k].len, &h, 0x5a, UINT64_MAX, 1);
            if (bad) die(1, "receive #%llu: %s", (unsigned long long)o->idx, bad);
            if (h.seq != o->idx)
                die(1, "receive #%llu holds message %llu", (unsigned long long)o->idx,
                    (unsigned long long)h.seq);
            recvd++;
            if (kill_after > 0 && recvd >= (uint64_t)kill_after) {
                printf("victim: received %llu, killing myself\n", (unsigned long long)recvd);
                fflush(stdout);
                raise(SIGKILL);
            }
            o->idx = posted++;
            FI_CHECK(fi_trecv(ep, o->buf, BUFSZ, NULL, FI_ADDR_UNSPEC, TAG, 0, &o->ctx));
        }
        if (!ready && recvd >= READY_AFTER && sent == HELLO) {
            ready = 1;
            printf("victim: ready pid %d: received %llu, sent %llu\n", (int)getpid(),
                   (unsigned long long)recvd, (unsigned long long)sent);
            fflush(stdout);
        }
    }
}

static int survivor(void) {
    struct op sops[W + EXTRA], rops[HELLO];
    int sfree[W], nsfree = W;
    unsigned char *sbuf = alloc_bufs(), *rbuf = malloc((size_t)HELLO * BUFSZ);
    uint64_t next = 0, ok = 0, errs = 0, late_ok = 0, refused = 0, hello = 0;
    uint64_t by_err[5] = {0}; /* FI_EHOSTUNREACH, FI_EIO, FI_ECANCELED, FI_ETIMEDOUT, other */
    int outstanding = 0, recv_pending = 0, extra_posted = 0, printed = 0, cancelled = 0;
    double t0, t_err = 0, last;
    struct fi_cq_tagged_entry ents[32];

    if (!rbuf) die(2, "out of memory");
    for (int i = 0; i < W; i++) {
        sops[i] = (struct op){.kind = OP_SEND, .slot = i, .buf = sbuf + (size_t)i * BUFSZ};
        sfree[i] = i;
    }
    for (int i = W; i < W + EXTRA; i++) sops[i] = (struct op){.kind = OP_SEND, .slot = -1};
    for (int i = 0; i < HELLO; i++) {
        rops[i] = (struct op){.kind = OP_RECV, .slot = i, .idx = (uint64_t)i,
                              .buf = rbuf + (size_t)i * BUFSZ};
        FI_CHECK(fi_trecv(ep, rops[i].buf, BUFSZ, NULL, FI_ADDR_UNSPEC, TAG, 0, &rops[i].ctx));
        recv_pending++;
    }
    swap_addresses();
    t0 = last = now();
    for (;;) {
        double t = now();
        if (!t_err) {
            /* Stream until the first failure: 64 KiB and 8-byte messages in turn. */
            while (nsfree) {
                struct op *o = &sops[sfree[nsfree - 1]];
                uint32_t len = build_msg(o->buf, next, next % 2 ? 8 : MAXPAY, 0x5a);
                o->idx = next;
                o->after_err = 0;
                ssize_t rc = fi_tsend(ep, o->buf, len, NULL, peer, TAG, &o->ctx);
                if (rc == -FI_EAGAIN) break;
                if (rc) {
                    fprintf(stderr, "survivor: fi_tsend seq %llu returned %zd (%s) before any "
                            "error completion\n", (unsigned long long)next, rc,
                            fi_strerror((int)-rc));
                    t_err = t; /* the provider refuses: the peer is known dead */
                    refused++;
                    break;
                }
                nsfree--;
                outstanding++;
                next++;
            }
            if (t - t0 > stall_s)
                die(1, "no error completion within %.0f s: was the victim killed? (%llu sends "
                    "completed)", stall_s, (unsigned long long)ok);
        } else {
            /* After the failure: a few more sends to the dead peer must fail as well. */
            while (extra_posted < EXTRA) {
                struct op *o = &sops[W + extra_posted];
                if (!o->buf) *o = (struct op){.kind = OP_SEND, .slot = -1, .buf = malloc(BUFSZ)};
                if (!o->buf) die(2, "out of memory");
                o->idx = next;
                o->after_err = 1;
                uint32_t len = build_msg(o->buf, next, next % 2 ? 8 : MAXPAY, 0x5a);
                ssize_t rc = fi_tsend(ep, o->buf, len, NULL, peer, TAG, &o->ctx);
                if (rc == -FI_EAGAIN) break;
                extra_posted++;
                next++;
                if (rc) { /* refused at once: fine, nothing left pending */
                    refused++;
                    if (refused <= 2)
                        fprintf(stderr, "survivor: fi_tsend after the failure: %zd %s (%s)\n", rc,
                                errname((int)rc), fi_strerror((int)-rc));
                    continue;
                }
                outstanding++;
            }
            if (extra_posted == EXTRA && outstanding == 0 && recv_pending == 0) break;
            if (t - t_err > stall_s) {
                printf("survivor: HANG: %d sends and %d receives still pending %.1f s after the "
                       "first error\n", outstanding, recv_pending, t - t_err);
                fflush(stdout);
                exit(1);
            }
            if (recv_pending && !cancelled && t - t_err > 5) {
                /* Receives are not tied to a peer: they may wait forever. Cancel them. */
                cancelled = 1;
                for (int i = 0; i < HELLO; i++)
                    if (!rops[i].after_err) fi_cancel(&ep->fid, &rops[i].ctx);
            }
        }
        ssize_t got = fi_cq_read(cq, ents, 32);
        if (got == -FI_EAGAIN) {
            sched_yield();
            if (t - last > stall_s) {
                printf("survivor: HANG: no completion for %.0f s, %d sends and %d receives "
                       "pending\n", t - last, outstanding, recv_pending);
                fflush(stdout);
                exit(1);
            }
            continue;
        }
        last = t;
        if (got == -FI_EAVAIL) {
            struct fi_cq_err_entry e;
            int err = read_error(&e, printed < 4 || verbose);
            struct op *o = e.op_context;
            printed++;
            if (!o) die(2, "error completion without context");
            errs++;
            switch (err) {
            case FI_EHOSTUNREACH: by_err[0]++; break;
            case FI_EIO: by_err[1]++; break;
            case FI_ECANCELED: by_err[2]++; break;
            case FI_ETIMEDOUT: by_err[3]++; break;
            default: by_err[4]++; break;
            }
            if (o->kind == OP_RECV) {
                recv_pending--;
                o->after_err = 1; /* for receives: completed */
                if (err != FI_ECANCELED)
                    fprintf(stderr, "survivor: receive #%llu failed: %s\n",
                            (unsigned long long)o->idx, errname(err));
                continue;
            }
            if (!t_err) {
                t_err = now();
                struct timespec wall;
                clock_gettime(CLOCK_REALTIME, &wall);
                fprintf(stderr, "survivor: first error completion %.3f s after start, %llu sends "
                        "completed before it (at epoch %lld.%06ld)\n", t_err - t0,
                        (unsigned long long)ok, (long long)wall.tv_sec, wall.tv_nsec / 1000);
            }
            outstanding--;
            if (o->slot >= 0) sfree[nsfree++] = o->slot;
            continue;
        }
        if (got < 0) die(2, "fi_cq_read: %zd (%s)", got, fi_strerror((int)-got));
        for (ssize_t k = 0; k < got; k++) {
            struct op *o = ents[k].op_context;
            if (o->kind == OP_RECV) {
                struct hdr h;
                const char *bad = check_msg(o->buf, ents[k].len, &h, 0x1c, HELLO, 1);
                if (bad) die(1, "hello #%llu: %s", (unsigned long long)o->idx, bad);
                if (h.seq != o->idx)
                    die(1, "hello #%llu holds message %llu", (unsigned long long)o->idx,
                        (unsigned long long)h.seq);
                hello++;
                recv_pending--;
                o->after_err = 1; /* for receives: completed */
                continue;
            }
            outstanding--;
            if (o->after_err) late_ok++;
            else ok++;
            if (o->slot >= 0) sfree[nsfree++] = o->slot;
        }
    }
    double drain = now() - t_err;
    int good = errs > 0 && late_ok == 0 && hello == HELLO;
    printf("survivor: sends ok %llu, error completions %llu (FI_EHOSTUNREACH %llu, FI_EIO %llu, "
           "FI_ECANCELED %llu, FI_ETIMEDOUT %llu, other %llu), refused at post %llu, "
           "succeeded after the failure %llu, hello %llu/%d, pending 0, drained %.3f s after "
           "the first error%s\n",
           (unsigned long long)ok, (unsigned long long)errs, (unsigned long long)by_err[0],
           (unsigned long long)by_err[1], (unsigned long long)by_err[2],
           (unsigned long long)by_err[3], (unsigned long long)by_err[4],
           (unsigned long long)refused, (unsigned long long)late_ok,
           (unsigned long long)hello, HELLO, drain, good ? "" : ": FAILED");
    fflush(stdout);
    double tc = now();
    fabric_down();
    if (verbose) fprintf(stderr, "survivor: closed in %.3f s\n", now() - tc);
    for (int i = 0; i < extra_posted; i++) free(sops[W + i].buf);
    free(sbuf);
    free(rbuf);
    close(sock);
    return good ? 0 : 1;
}

static void usage(void) {
    fprintf(stderr,
            "usage: storm server PORT N\n"
            "       storm client SERVER_IP PORT N\n"
            "       storm victim PORT [KILL_AFTER]\n"
            "       storm survivor SERVER_IP PORT\n");
    exit(64);
}

static uint64_t count_arg(const char *s) {
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*end || !*s) usage();
    return v;
}

int main(int argc, char **argv) {
    const char *v = getenv("STORM_VERBOSE"), *st = getenv("STORM_STALL_S");
    const char *sd = getenv("STORM_SEND_DELAY_MS");
    verbose = v && *v && *v != '0';
    if (st && atof(st) > 0) stall_s = atof(st);
    if (sd && atof(sd) > 0) send_delay = atof(sd) / 1000;
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) usage();
    role = argv[1];
    if (!strcmp(argv[1], "server") && argc == 4) {
        uint64_t n = count_arg(argv[3]);
        fabric_up();
        oob_listen(argv[2]);
        return storm(1, n);
    }
    if (!strcmp(argv[1], "client") && argc == 5) {
        uint64_t n = count_arg(argv[4]);
        fabric_up();
        oob_connect(argv[2], argv[3]);
        return storm(0, n);
    }
    if (!strcmp(argv[1], "victim") && (argc == 3 || argc == 4)) {
        long kill_after = argc == 4 ? (long)count_arg(argv[3]) : 0;
        fabric_up();
        oob_listen(argv[2]);
        victim(kill_after);
    }
    if (!strcmp(argv[1], "survivor") && argc == 4) {
        fabric_up();
        oob_connect(argv[2], argv[3]);
        return survivor();
    }
    usage();
    return 64;
}

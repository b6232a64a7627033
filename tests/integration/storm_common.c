// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* storm: what the modes share; see storm.c for the modes and storm_common.h for the
 * interface.
 */
#define _GNU_SOURCE
#include "storm_common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

const char *role = "storm";
int verbose;
double stall_s = 60.0;

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
struct fid_cq *cq;
struct fid_ep *ep;
fi_addr_t peer = FI_ADDR_UNSPEC;
int sock = -1;

double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

_Noreturn void die(int code, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s: ", role);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    fflush(stdout);
    exit(code);
}

const char *errname(int e) {
    if (e < 0) e = -e;
    switch (e) {
        case FI_EHOSTUNREACH:
            return "FI_EHOSTUNREACH";
        case FI_EIO:
            return "FI_EIO";
        case FI_ECANCELED:
            return "FI_ECANCELED";
        case FI_ETRUNC:
            return "FI_ETRUNC";
        case FI_ECONNREFUSED:
            return "FI_ECONNREFUSED";
        case FI_ECONNRESET:
            return "FI_ECONNRESET";
        case FI_ETIMEDOUT:
            return "FI_ETIMEDOUT";
        case FI_ENOTCONN:
            return "FI_ENOTCONN";
        case FI_EAGAIN:
            return "FI_EAGAIN";
        case FI_EOTHER:
            return "FI_EOTHER";
        case FI_EINVAL:
            return "FI_EINVAL";
        case FI_ENOMEM:
            return "FI_ENOMEM";
        default:
            return "other";
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

uint32_t payload_len(uint64_t i) {
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
    for (uint32_t j = 0; j < n; j++)
        h = (h ^ p[j]) * 16777619u;
    return h;
}

uint32_t build_msg(unsigned char *buf, uint64_t seq, uint32_t len, uint64_t salt) {
    struct hdr h;
    gen_payload(buf + HDR, len, seq, salt);
    h.seq = seq;
    h.len = len;
    h.csum = fnv1a(buf + HDR, len) ^ (uint32_t)seq;
    memcpy(buf, &h, HDR);
    return HDR + len;
}

/* 0: fine; else a short reason. Checks the payload against what the sender generated. */
const char *check_msg(const unsigned char *buf, size_t got, struct hdr *h, uint64_t salt,
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

/* W message buffers, zeroed, page-aligned (the storm and both killed-peer modes use them). */
unsigned char *alloc_bufs(void) {
    size_t bytes = ((size_t)W * BUFSZ + 4095) / 4096 * 4096; /* a multiple of the alignment */
    unsigned char *p = aligned_alloc(4096, bytes);
    if (!p) die(2, "out of memory");
    memset(p, 0, (size_t)W * BUFSZ);
    return p;
}

/* ---- out of band: TCP --------------------------------------------------------------- */

void oob_write(const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t w = write(sock, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) die(2, "oob write: %s", w < 0 ? strerror(errno) : "closed");
        c += w;
        n -= (size_t)w;
    }
}

void oob_read(void *p, size_t n) {
    char *c = p;
    while (n) {
        ssize_t r = read(sock, c, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) die(2, "oob read: %s", r < 0 ? strerror(errno) : "peer closed");
        c += r;
        n -= (size_t)r;
    }
}

void oob_listen(const char *port) {
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

void oob_connect(const char *host, const char *port) {
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

void fabric_up(void) {
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
    hints->domain_attr->mr_mode =
        FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ENDPOINT;
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

void fabric_down(void) {
    FI_CHECK(fi_close(&ep->fid));
    FI_CHECK(fi_close(&cq->fid));
    FI_CHECK(fi_close(&av->fid));
    FI_CHECK(fi_close(&domain->fid));
    FI_CHECK(fi_close(&fabric->fid));
    fi_freeinfo(info);
}

/* Swap endpoint names over the TCP connection and insert the peer's. */
void swap_addresses(void) {
    unsigned char mine[256], theirs[256];
    size_t len = sizeof(mine);
    uint32_t n, m;
    FI_CHECK(fi_getname(&ep->fid, mine, &len));
    n = (uint32_t)len;
    oob_write(&n, sizeof(n));
    oob_write(mine, len);
    oob_read(&m, sizeof(m));
    if (m == 0 || m > sizeof(theirs)) die(2, "peer address of %u bytes", m);
    oob_read(theirs, m);
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
int read_error(struct fi_cq_err_entry *e, int print) {
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
void oob_finish(double limit) {
    struct fi_cq_tagged_entry ents[16];
    char c = 'D';
    double deadline = now() + limit;
    oob_write(&c, 1);
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
            oob_read(&c, 1);
            if (c != 'D') die(2, "oob: unexpected byte %#x", c);
            return;
        }
        if (now() > deadline) die(1, "peer did not finish within %.0f s", limit);
    }
}

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* usnic_storm: a two-host stress test of the usnic provider's reliable endpoint types
 * (FI_EP_RDM and FI_EP_MSG) with untagged fi_send / fi_inject / fi_recv, public API only.
 *
 *   usnic_storm [-e rdm|msg] server PORT N            wait for the peer on TCP PORT
 *   usnic_storm [-e rdm|msg] client SERVER_IP PORT N  connect to the server
 *
 * The TCP connection (storm_common.c) swaps addresses and, at the end, says "done" both
 * ways. RDM: both sides swap fi_getname and insert the peer into an AV. MSG: the server
 * opens a passive endpoint, listens and sends its name; the client fi_connect()s to it with
 * private data, the server accepts (with private data of its own) on FI_CONNREQ, and both
 * wait for FI_CONNECTED; the private data of both directions is checked.
 *
 * Then each side sends N messages and receives N, both directions at once, with up to W
 * sends and W receives outstanding. Message k has a length that depends on k only, from 0
 * to HDR + 64 KiB (zero-length and other sub-header messages, inject-sized ones, about one
 * MTU, 4 KiB, 1..64 KiB, 64 KiB + header), and contents derived from k: messages of at
 * least HDR bytes start with a header (sequence k, length, checksum), shorter ones are a
 * byte stream seeded by k. Messages of at most inject_size bytes go out with fi_inject
 * every other time. The k-th posted receive must hold message k exactly (length and every
 * byte): a lost, duplicated, reordered or damaged message shows up as a mismatch, and a
 * message that never arrives as a stall.
 *
 * Receive starvation: every USTORM_STARVE_EVERY receives (default 300) the receiver stops
 * reposting, lets every posted receive complete, then keeps none posted for
 * USTORM_STARVE_MS milliseconds (default 30) while it goes on sending and progressing; the
 * server also starts that way. Messages sent meanwhile must wait for a receive, not vanish.
 *
 * Exit status: 0 all correct; 1 wrong data or a stall of STORM_STALL_S seconds (default
 * 60; 5 once wrong data was seen) without progress; 2 an error completion, an unexpected
 * CM event or a failed libfabric or socket call; 64 usage.
 *
 * Environment: STORM_PROV (provider, default usnic), STORM_STALL_S, STORM_VERBOSE=1,
 * USTORM_STARVE_EVERY (0: never starve), USTORM_STARVE_MS, USTORM_SEND_DELAY_MS (post no
 * send for that long after the connection is up: for diagnosis, it keeps the first
 * messages away from the connection set-up).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "storm_common.h"

#define MAXLEN BUFSZ /* largest message: a header and 64 KiB */
#define REQ_DATA "usnic_storm: connect request"
#define ACC_DATA "usnic_storm: accepted"

static enum fi_ep_type ep_type = FI_EP_RDM;
static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_eq *eq;
static struct fid_pep *pep;
static struct fid_mr *smr, *rmr;
static void *sdesc, *rdesc;
static size_t inject_max;
static double send_delay; /* seconds without sends at the start */

/* ---- message contents ----------------------------------------------------------- */

static uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Length of message k: 0 .. MAXLEN bytes, a function of k alone. */
static uint32_t msg_len(uint64_t k) {
    uint64_t r = mix(k ^ 0x51edULL);
    if (k % 499 == 0) return MAXLEN;                                    /* 64 KiB + header */
    if (k % 97 == 1) return 1024 + (uint32_t)(r % (MAXLEN - 1024 + 1)); /* 1 KiB .. max */
    if (k % 31 == 2) return 4096;
    switch (k % 10) {
        case 3:
            return (uint32_t)(k / 10 % (HDR + 1)); /* 0 .. HDR: zero and sub-header sizes */
        case 6:
            return HDR + 1 + (uint32_t)(r % (64 - HDR)); /* HDR+1 .. 64: inject sized */
        default:
            return HDR + 8 + (uint32_t)(r % 1500); /* around one MTU */
    }
}

/* Writes message k into buf; returns its length. */
static uint32_t fill_msg(unsigned char *buf, uint64_t k, uint64_t salt) {
    uint32_t len = msg_len(k);
    if (len >= HDR) return build_msg(buf, k, len - HDR, salt);
    for (uint32_t j = 0; j < len; j++)
        buf[j] = (unsigned char)mix((k << 8) + j + salt);
    return len;
}

/* ---- small helpers ------------------------------------------------------------- */

/* Sends a length-prefixed blob over TCP, or receives one into buf (at most cap bytes). */
static void oob_send_blob(const void *p, size_t n) {
    uint32_t len = (uint32_t)n;
    oob_write(&len, sizeof(len));
    oob_write(p, n);
}

static size_t oob_recv_blob(void *buf, size_t cap) {
    uint32_t len;
    oob_read(&len, sizeof(len));
    if (len == 0 || len > cap) die(2, "peer sent a blob of %u bytes", len);
    oob_read(buf, len);
    return len;
}

static const char *sa_str(const void *addr, size_t len) {
    static char s[64];
    const struct sockaddr_in *sin = addr;
    char ip[INET_ADDRSTRLEN];
    if (len < sizeof(*sin) || sin->sin_family != AF_INET) {
        snprintf(s, sizeof(s), "(non-AF_INET address of %zu bytes)", len);
        return s;
    }
    inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
    snprintf(s, sizeof(s), "%s:%u", ip, ntohs(sin->sin_port));
    return s;
}

/* ---- libfabric set-up ------------------------------------------------------------ */

static struct fi_info *make_hints(void) {
    struct fi_info *hints = fi_allocinfo();
    const char *prov = getenv("STORM_PROV");
    if (!hints) die(2, "fi_allocinfo failed");
    hints->ep_attr->type = ep_type;
    hints->caps = FI_MSG;
    hints->mode = FI_CONTEXT | FI_CONTEXT2 | FI_LOCAL_MR; /* we can do all of these */
    hints->addr_format = FI_SOCKADDR_IN;
    hints->fabric_attr->prov_name = strdup(prov && *prov ? prov : "usnic");
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
    return hints;
}

static void get_info(struct fi_info *hints) {
    int rc =
        fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0, hints, &info);
    if (rc)
        die(2, "fi_getinfo(%s, %s): %d (%s)", hints->fabric_attr->prov_name,
            fi_tostr(&hints->ep_attr->type, FI_TYPE_EP_TYPE), rc, fi_strerror(-rc));
    fi_freeinfo(hints);
    if (info->ep_attr->type != ep_type)
        die(2, "fi_getinfo gave endpoint type %s", fi_tostr(&info->ep_attr->type, FI_TYPE_EP_TYPE));
    if (info->tx_attr->size && info->tx_attr->size < W)
        die(2, "tx queue of %zu entries, need %d", info->tx_attr->size, W);
    if (info->rx_attr->size && info->rx_attr->size < W)
        die(2, "rx queue of %zu entries, need %d", info->rx_attr->size, W);
    if (info->ep_attr->max_msg_size < MAXLEN)
        die(2, "max_msg_size %zu below %d", info->ep_attr->max_msg_size, MAXLEN);
    inject_max = info->tx_attr->inject_size;
    if (verbose)
        fprintf(stderr, "%s: provider %s domain %s fabric %s inject_size %zu mr_mode %#x\n", role,
                info->fabric_attr->prov_name, info->domain_attr->name, info->fabric_attr->name,
                inject_max, (unsigned)info->domain_attr->mr_mode);
}

static void open_cq(void) {
    struct fi_cq_attr cq_attr;
    memset(&cq_attr, 0, sizeof(cq_attr));
    cq_attr.format = FI_CQ_FORMAT_MSG;
    cq_attr.wait_obj = FI_WAIT_NONE;
    cq_attr.size = 4 * W;
    FI_CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
}

static void open_eq(void) {
    struct fi_eq_attr eq_attr;
    memset(&eq_attr, 0, sizeof(eq_attr));
    eq_attr.wait_obj = FI_WAIT_UNSPEC;
    eq_attr.size = 16;
    FI_CHECK(fi_eq_open(fabric, &eq_attr, &eq, NULL));
}

/* Registers both buffer areas when the provider wants local registration. */
static void register_bufs(unsigned char *sbuf, unsigned char *rbuf) {
    size_t bytes = (size_t)W * BUFSZ;
    if (!(info->domain_attr->mr_mode & FI_MR_LOCAL)) return;
    FI_CHECK(fi_mr_reg(domain, sbuf, bytes, FI_SEND, 0, 1, 0, &smr, NULL));
    FI_CHECK(fi_mr_reg(domain, rbuf, bytes, FI_RECV, 0, 2, 0, &rmr, NULL));
    sdesc = fi_mr_desc(smr);
    rdesc = fi_mr_desc(rmr);
}

/* Waits for a CM event on the EQ (polled, so that a missing wait object cannot hang us);
 * returns the event and fills buf (returning its length in *len). Meanwhile reads the CQ,
 * where nothing may show up: no operation is posted yet. */
static uint32_t eq_wait(void *buf, size_t cap, size_t *len, const char *what) {
    double deadline = now() + stall_s;
    for (;;) {
        uint32_t event = 0;
        ssize_t rd = fi_eq_read(eq, &event, buf, cap, 0);
        if (rd > 0) {
            *len = (size_t)rd;
            return event;
        }
        if (rd == -FI_EAVAIL) {
            struct fi_eq_err_entry e;
            char sbuf[256];
            memset(&e, 0, sizeof(e));
            ssize_t r = fi_eq_readerr(eq, &e, 0);
            if (r < 0) die(2, "fi_eq_readerr: %zd (%s)", r, fi_strerror((int)-r));
            die(2, "waiting for %s: EQ error event: err %d (%s) prov_errno %d (%s)", what, e.err,
                fi_strerror(e.err), e.prov_errno,
                fi_eq_strerror(eq, e.prov_errno, e.err_data, sbuf, sizeof(sbuf)));
        }
        if (rd != -FI_EAGAIN) die(2, "fi_eq_read: %zd (%s)", rd, fi_strerror((int)-rd));
        if (cq) {
            struct fi_cq_msg_entry ent;
            ssize_t n = fi_cq_read(cq, &ent, 1);
            if (n != -FI_EAGAIN)
                die(2, "waiting for %s: fi_cq_read gave %zd before anything was posted", what, n);
        }
        if (now() > deadline) die(1, "no %s within %.0f s", what, stall_s);
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* RDM: fabric, domain, AV, CQ, endpoint; addresses swapped over TCP. */
static void rdm_up(void) {
    struct fi_av_attr av_attr;
    unsigned char mine[128], theirs[128];
    size_t len = sizeof(mine), m;

    get_info(make_hints());
    FI_CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
    FI_CHECK(fi_domain(fabric, info, &domain, NULL));
    memset(&av_attr, 0, sizeof(av_attr));
    av_attr.type =
        info->domain_attr->av_type != FI_AV_UNSPEC ? info->domain_attr->av_type : FI_AV_MAP;
    FI_CHECK(fi_av_open(domain, &av_attr, &av, NULL));
    open_cq();
    FI_CHECK(fi_endpoint(domain, info, &ep, NULL));
    FI_CHECK(fi_ep_bind(ep, &av->fid, 0));
    FI_CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
    FI_CHECK(fi_enable(ep));
    FI_CHECK(fi_getname(&ep->fid, mine, &len));
    oob_send_blob(mine, len);
    m = oob_recv_blob(theirs, sizeof(theirs));
    int rc = fi_av_insert(av, theirs, 1, &peer, 0, NULL);
    if (rc != 1) die(2, "fi_av_insert: %d (%s)", rc, fi_strerror(rc < 0 ? -rc : FI_EOTHER));
    printf("%s: rdm endpoint %s", role, sa_str(mine, len));
    printf(", peer %s\n", sa_str(theirs, m));
}

/* MSG server, part 1: a passive endpoint listening; its name goes to the client. */
static void msg_listen(void) {
    unsigned char name[128];
    size_t len = sizeof(name);
    get_info(make_hints());
    FI_CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
    open_eq();
    FI_CHECK(fi_passive_ep(fabric, info, &pep, NULL));
    FI_CHECK(fi_pep_bind(pep, &eq->fid, 0));
    FI_CHECK(fi_listen(pep));
    FI_CHECK(fi_getname(&pep->fid, name, &len));
    printf("%s: passive endpoint listening at %s\n", role, sa_str(name, len));
    oob_send_blob(name, len);
}

/* MSG server, part 2: FI_CONNREQ (its private data checked), an endpoint from its info,
 * receives posted (unless starting starved: post_recvs does that), accept, FI_CONNECTED. */
static void msg_accept(void (*post_recvs)(void *), void *arg, unsigned char *sbuf,
                       unsigned char *rbuf) {
    unsigned char evbuf[sizeof(struct fi_eq_cm_entry) + 512];
    struct fi_eq_cm_entry *ent = (struct fi_eq_cm_entry *)evbuf;
    size_t len, dlen;
    uint32_t event = eq_wait(evbuf, sizeof(evbuf), &len, "FI_CONNREQ");
    if (event != FI_CONNREQ) die(2, "expected FI_CONNREQ, got event %u", event);
    if (ent->fid != &pep->fid) die(2, "FI_CONNREQ for fid %p, not the passive endpoint", ent->fid);
    if (!ent->info) die(2, "FI_CONNREQ without info");
    dlen = len - sizeof(*ent);
    if (len < sizeof(*ent) || dlen != sizeof(REQ_DATA) || memcmp(ent->data, REQ_DATA, dlen))
        die(2, "FI_CONNREQ: event of %zu bytes, private data of %zu bytes not \"%s\"", len,
            len >= sizeof(*ent) ? dlen : 0, REQ_DATA);
    if (ent->info->dest_addr)
        printf("%s: connection request from %s\n", role,
               sa_str(ent->info->dest_addr, ent->info->dest_addrlen));
    fi_freeinfo(info); /* the passive endpoint's; from now on the request's */
    info = ent->info;
    FI_CHECK(fi_domain(fabric, info, &domain, NULL));
    open_cq();
    FI_CHECK(fi_endpoint(domain, info, &ep, NULL));
    FI_CHECK(fi_ep_bind(ep, &eq->fid, 0));
    FI_CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
    FI_CHECK(fi_enable(ep));
    register_bufs(sbuf, rbuf);
    post_recvs(arg);
    FI_CHECK(fi_accept(ep, ACC_DATA, sizeof(ACC_DATA)));
    event = eq_wait(evbuf, sizeof(evbuf), &len, "FI_CONNECTED (server)");
    if (event != FI_CONNECTED) die(2, "server: expected FI_CONNECTED, got event %u", event);
    if (ent->fid != &ep->fid) die(2, "server: FI_CONNECTED for fid %p, not the endpoint", ent->fid);
}

/* MSG client: the server's passive endpoint name from TCP, an endpoint, connect with
 * private data, FI_CONNECTED carrying the server's private data. */
static void msg_connect(unsigned char *sbuf, unsigned char *rbuf) {
    unsigned char name[128];
    unsigned char evbuf[sizeof(struct fi_eq_cm_entry) + 512];
    struct fi_eq_cm_entry *ent = (struct fi_eq_cm_entry *)evbuf;
    struct fi_info *hints = make_hints();
    size_t len = oob_recv_blob(name, sizeof(name)), dlen;
    hints->dest_addr = malloc(len);
    if (!hints->dest_addr) die(2, "out of memory");
    memcpy(hints->dest_addr, name, len);
    hints->dest_addrlen = len;
    get_info(hints);
    FI_CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
    open_eq();
    FI_CHECK(fi_domain(fabric, info, &domain, NULL));
    open_cq();
    FI_CHECK(fi_endpoint(domain, info, &ep, NULL));
    FI_CHECK(fi_ep_bind(ep, &eq->fid, 0));
    FI_CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
    FI_CHECK(fi_enable(ep));
    register_bufs(sbuf, rbuf);
    printf("%s: connecting to %s\n", role, sa_str(name, len));
    FI_CHECK(fi_connect(ep, name, REQ_DATA, sizeof(REQ_DATA)));
    uint32_t event = eq_wait(evbuf, sizeof(evbuf), &len, "FI_CONNECTED (client)");
    if (event != FI_CONNECTED) die(2, "client: expected FI_CONNECTED, got event %u", event);
    if (ent->fid != &ep->fid) die(2, "client: FI_CONNECTED for fid %p, not the endpoint", ent->fid);
    dlen = len >= sizeof(*ent) ? len - sizeof(*ent) : 0;
    if (dlen != sizeof(ACC_DATA) || memcmp(ent->data, ACC_DATA, dlen))
        die(2, "client: FI_CONNECTED event of %zu bytes: private data of %zu bytes, not \"%s\"",
            len, dlen, ACC_DATA);
}

static void fabric_close(void) {
    if (ep_type == FI_EP_MSG) {
        int rc = fi_shutdown(ep, 0);
        if (rc && rc != -FI_ENOSYS)
            fprintf(stderr, "%s: fi_shutdown: %d (%s)\n", role, rc, fi_strerror(-rc));
    }
    FI_CHECK(fi_close(&ep->fid));
    if (smr) FI_CHECK(fi_close(&smr->fid));
    if (rmr) FI_CHECK(fi_close(&rmr->fid));
    FI_CHECK(fi_close(&cq->fid));
    if (av) FI_CHECK(fi_close(&av->fid));
    if (pep) FI_CHECK(fi_close(&pep->fid));
    if (eq) FI_CHECK(fi_close(&eq->fid));
    FI_CHECK(fi_close(&domain->fid));
    FI_CHECK(fi_close(&fabric->fid));
    fi_freeinfo(info);
}

/* ---- the storm ----------------------------------------------------------------- */

enum { RECV_NORMAL, RECV_DRAINING, RECV_EMPTY };

struct state {
    struct op sops[W], rops[W];
    int sfree[W], nsfree;
    int rq[W], rq_head, rq_len; /* receive slots waiting to be (re)posted */
    unsigned char *sbuf, *rbuf, *ibuf, *ref;
    unsigned char *seen; /* seen[k]: message k (with a header) arrived intact */
    uint64_t n, my_salt, peer_salt;
    uint64_t next_send, send_done, sends_posted, send_compl, injected;
    uint64_t posted, recvd;
    uint64_t bad_order, dup, corrupt, bad_len, bad_flags, ooo_compl, max_post_done, eagain;
    int first_report;
    /* starvation */
    int rstate;
    uint64_t starve_every, next_starve;
    double starve_s, empty_since;
    uint64_t episodes;
    double t0;
};

static void state_init(struct state *s, int is_server, uint64_t n) {
    const char *se = getenv("USTORM_STARVE_EVERY"), *sm = getenv("USTORM_STARVE_MS");
    memset(s, 0, sizeof(*s));
    s->sbuf = alloc_bufs();
    s->rbuf = alloc_bufs();
    s->ibuf = malloc(MAXLEN);
    s->ref = malloc(MAXLEN);
    s->seen = calloc(n ? n : 1, 1);
    if (!s->ibuf || !s->ref || !s->seen) die(2, "out of memory");
    s->n = n;
    s->my_salt = is_server ? 0x5e5eULL : 0xc1c1ULL;
    s->peer_salt = is_server ? 0xc1c1ULL : 0x5e5eULL;
    s->first_report = 8;
    s->starve_every = se && *se ? strtoull(se, NULL, 0) : 300;
    s->starve_s = (sm && *sm ? atof(sm) : 30) / 1000;
    s->next_starve = s->starve_every;
    /* The server starts with no receive posted: the client's first messages must wait. */
    s->rstate = is_server && s->starve_every ? RECV_EMPTY : RECV_NORMAL;
    for (int i = 0; i < W; i++) {
        s->sops[i] = (struct op){.kind = OP_SEND, .slot = i, .buf = s->sbuf + (size_t)i * BUFSZ};
        s->rops[i] = (struct op){.kind = OP_RECV, .slot = i, .buf = s->rbuf + (size_t)i * BUFSZ};
        s->sfree[i] = W - 1 - i;
        s->rq[i] = i;
    }
    s->nsfree = W;
    s->rq_len = W;
}

static void post_sends(struct state *s) {
    if (send_delay && now() - s->t0 < send_delay) return;
    while (s->next_send < s->n) {
        uint64_t k = s->next_send;
        uint32_t len = msg_len(k);
        ssize_t rc;
        if (len <= inject_max && (k & 2)) {
            fill_msg(s->ibuf, k, s->my_salt);
            rc = fi_inject(ep, s->ibuf, len, peer);
            if (rc == -FI_EAGAIN) {
                s->eagain++;
                return;
            }
            if (rc)
                die(2, "fi_inject seq %llu len %u: %zd (%s)", (unsigned long long)k, len, rc,
                    fi_strerror((int)-rc));
            memset(s->ibuf, 0xa5, len); /* the provider must have copied it */
            s->injected++;
            s->send_done++;
            s->next_send++;
            continue;
        }
        if (!s->nsfree) return;
        struct op *o = &s->sops[s->sfree[s->nsfree - 1]];
        fill_msg(o->buf, k, s->my_salt);
        o->idx = k;
        rc = fi_send(ep, o->buf, len, sdesc, peer, &o->ctx);
        if (rc == -FI_EAGAIN) {
            s->eagain++;
            return;
        }
        if (rc)
            die(2, "fi_send seq %llu len %u: %zd (%s)", (unsigned long long)k, len, rc,
                fi_strerror((int)-rc));
        s->nsfree--;
        s->sends_posted++;
        s->next_send++;
    }
}

/* Receives outstanding now. */
static uint64_t recvs_out(const struct state *s) {
    return s->posted - s->recvd;
}

static void post_recvs(struct state *s) {
    /* While receives remain to post, messages will find none: a completion batch that
     * carried recvd past next_starve still starves (the test counts on it). */
    if (s->rstate == RECV_NORMAL && s->starve_every && s->recvd >= s->next_starve &&
        s->posted < s->n)
        s->rstate = RECV_DRAINING;
    if (s->rstate == RECV_DRAINING && recvs_out(s) == 0) {
        s->rstate = RECV_EMPTY;
        s->empty_since = now();
    }
    if (s->rstate == RECV_EMPTY) {
        /* empty_since 0: the initial starvation, counted from the start of the storm */
        if (!s->empty_since || now() - s->empty_since < s->starve_s) return;
        s->rstate = RECV_NORMAL;
        s->episodes++;
        s->next_starve = s->recvd + s->starve_every;
    }
    if (s->rstate != RECV_NORMAL) return;
    while (s->rq_len && s->posted < s->n) {
        struct op *o = &s->rops[s->rq[s->rq_head]];
        o->idx = s->posted;
        ssize_t rc = fi_recv(ep, o->buf, MAXLEN, rdesc, FI_ADDR_UNSPEC, &o->ctx);
        if (rc == -FI_EAGAIN) {
            s->eagain++;
            break;
        }
        if (rc) die(2, "fi_recv: %zd (%s)", rc, fi_strerror((int)-rc));
        s->rq_head = (s->rq_head + 1) % W;
        s->rq_len--;
        s->posted++;
    }
}

static void post_recvs_cb(void *arg) {
    post_recvs(arg);
}

static void report(struct state *s, uint64_t idx, size_t got, const char *what) {
    if (s->first_report-- > 0)
        fprintf(stderr, "%s: receive #%llu (len %zu, expected %u): %s\n", role,
                (unsigned long long)idx, got, msg_len(idx), what);
}

/* The receive posted as number k must hold message k: its length and every byte. */
static void on_recv(struct state *s, struct op *o, const struct fi_cq_msg_entry *ent) {
    uint64_t k = o->idx;
    uint32_t want = msg_len(k);
    size_t got = ent->len;
    s->recvd++;
    if (k < s->max_post_done)
        s->ooo_compl++;
    else
        s->max_post_done = k;
    if ((ent->flags & (FI_RECV | FI_MSG)) != (FI_RECV | FI_MSG)) {
        s->bad_flags++;
        if (s->first_report-- > 0)
            fprintf(stderr, "%s: receive #%llu: completion flags %#llx lack FI_MSG|FI_RECV\n", role,
                    (unsigned long long)k, (unsigned long long)ent->flags);
    }
    /* What the buffer holds, if it is an intact message with a header. */
    struct hdr h;
    int intact = got >= HDR && got <= MAXLEN &&
                 !check_msg(o->buf, got, &h, s->peer_salt, s->n, 1) && msg_len(h.seq) == got;
    if (intact && h.seq == k) {
        s->seen[k] = 1;
    } else if (intact) {
        char why[96];
        if (s->seen[h.seq]) {
            s->dup++;
            snprintf(why, sizeof(why), "duplicate of message %llu", (unsigned long long)h.seq);
        } else {
            s->bad_order++;
            s->seen[h.seq] = 1;
            snprintf(why, sizeof(why), "holds message %llu: lost, reordered or duplicated",
                     (unsigned long long)h.seq);
        }
        report(s, k, got, why);
    } else if (got != want) {
        s->bad_len++;
        report(s, k, got, "wrong length");
    } else if (want >= HDR) {
        s->corrupt++;
        report(s, k, got, "damaged (header, checksum or payload)");
    } else {
        fill_msg(s->ref, k, s->peer_salt);
        if (memcmp(s->ref, o->buf, want)) {
            s->corrupt++;
            report(s, k, got, "short message: contents differ");
        }
    }
    size_t clear = got > HDR ? got : HDR; /* no stale message may pass for a new one */
    memset(o->buf, 0x5a, clear < MAXLEN ? clear : MAXLEN);
    s->rq[(s->rq_head + s->rq_len) % W] = o->slot;
    s->rq_len++;
}

static void on_completions(struct state *s, const struct fi_cq_msg_entry *ents, ssize_t got) {
    for (ssize_t i = 0; i < got; i++) {
        struct op *o = ents[i].op_context;
        if (!o || (o->kind != OP_SEND && o->kind != OP_RECV))
            die(2, "completion with unknown context %p flags %#llx", (void *)o,
                (unsigned long long)ents[i].flags);
        if (o->kind == OP_RECV) {
            on_recv(s, o, &ents[i]);
            continue;
        }
        if ((ents[i].flags & (FI_SEND | FI_MSG)) != (FI_SEND | FI_MSG)) {
            s->bad_flags++;
            if (s->first_report-- > 0)
                fprintf(stderr,
                        "%s: send of message %llu: completion flags %#llx lack FI_MSG|FI_SEND\n",
                        role, (unsigned long long)o->idx, (unsigned long long)ents[i].flags);
        }
        s->sfree[s->nsfree++] = o->slot;
        s->send_compl++;
        s->send_done++;
        if (s->send_compl > s->sends_posted) die(2, "more send completions than sends");
    }
}

static void print_counts(const struct state *s, const char *tail) {
    printf(
        "%s %s: sent %llu (injected %llu) recv %llu order %llu dup %llu corrupt %llu "
        "bad_len %llu bad_flags %llu starved %llu times, elapsed %.2fs, eagain %llu, "
        "completions out of post order %llu%s\n",
        role, ep_type == FI_EP_MSG ? "msg" : "rdm", (unsigned long long)s->send_done,
        (unsigned long long)s->injected, (unsigned long long)s->recvd,
        (unsigned long long)s->bad_order, (unsigned long long)s->dup,
        (unsigned long long)s->corrupt, (unsigned long long)s->bad_len,
        (unsigned long long)s->bad_flags, (unsigned long long)s->episodes, now() - s->t0,
        (unsigned long long)s->eagain, (unsigned long long)s->ooo_compl, tail);
    fflush(stdout);
}

static int run(struct state *s) {
    struct fi_cq_msg_entry ents[32];
    int idle = 0;
    double last = now();
    s->t0 = last;
    if (s->rstate == RECV_EMPTY && !s->empty_since) s->empty_since = s->t0;
    while (s->send_done < s->n || s->recvd < s->n) {
        post_sends(s);
        post_recvs(s);
        ssize_t got = fi_cq_read(cq, ents, 32);
        if (got == -FI_EAVAIL) {
            struct fi_cq_err_entry e;
            read_error(&e, 1);
            print_counts(s, ": ERROR COMPLETION");
            exit(2);
        }
        if (got == -FI_EAGAIN) {
            if (++idle >= 64) {
                idle = 0;
                sched_yield();
            }
            /* starving on purpose is not a stall */
            if (s->rstate == RECV_EMPTY) last = now();
            /* Once something was wrong, a message is missing for good: give up sooner. */
            double limit = s->bad_order || s->dup || s->corrupt || s->bad_len ? 5 : stall_s;
            if (limit > stall_s) limit = stall_s;
            if (now() - last > limit) {
                char tail[192];
                snprintf(tail, sizeof(tail),
                         ": NO PROGRESS for %.0f s (sends posted up to %llu, receives posted "
                         "%llu, send completions %llu of %llu)",
                         limit, (unsigned long long)s->next_send, (unsigned long long)s->posted,
                         (unsigned long long)s->send_compl, (unsigned long long)s->sends_posted);
                print_counts(s, tail);
                exit(1);
            }
            continue;
        }
        if (got < 0) die(2, "fi_cq_read: %zd (%s)", got, fi_strerror((int)-got));
        idle = 0;
        last = now();
        on_completions(s, ents, got);
    }
    int perfect = !s->bad_order && !s->dup && !s->corrupt && !s->bad_len && !s->bad_flags &&
                  s->recvd == s->n && s->send_done == s->n;
    print_counts(s, perfect ? "" : ": FAILED");
    return perfect ? 0 : 1;
}

static void usage(void) {
    fprintf(stderr,
            "usage: usnic_storm [-e rdm|msg] server PORT N\n"
            "       usnic_storm [-e rdm|msg] client SERVER_IP PORT N\n");
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
    const char *sd = getenv("USTORM_SEND_DELAY_MS");
    struct state s;
    int opt, is_server, rc;
    uint64_t n;

    verbose = v && *v && *v != '0';
    if (st && atof(st) > 0) stall_s = atof(st);
    if (sd && atof(sd) > 0) send_delay = atof(sd) / 1000;
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    while ((opt = getopt(argc, argv, "e:")) != -1) {
        if (opt != 'e') usage();
        if (!strcmp(optarg, "rdm"))
            ep_type = FI_EP_RDM;
        else if (!strcmp(optarg, "msg"))
            ep_type = FI_EP_MSG;
        else
            usage();
    }
    argc -= optind;
    argv += optind;
    if (argc == 3 && !strcmp(argv[0], "server")) {
        is_server = 1;
        n = count_arg(argv[2]);
    } else if (argc == 4 && !strcmp(argv[0], "client")) {
        is_server = 0;
        n = count_arg(argv[3]);
    } else {
        usage();
    }
    role = argv[0];
    state_init(&s, is_server, n);
    if (is_server)
        oob_listen(argv[1]);
    else
        oob_connect(argv[1], argv[2]);
    if (ep_type == FI_EP_RDM) {
        rdm_up();
        register_bufs(s.sbuf, s.rbuf);
        post_recvs(&s);
    } else if (is_server) {
        msg_listen();
        msg_accept(post_recvs_cb, &s, s.sbuf, s.rbuf);
    } else {
        msg_connect(s.sbuf, s.rbuf);
    }
    rc = run(&s);
    oob_finish(stall_s);
    fabric_close();
    close(sock);
    free(s.sbuf);
    free(s.rbuf);
    free(s.ibuf);
    free(s.ref);
    free(s.seen);
    return rc;
}

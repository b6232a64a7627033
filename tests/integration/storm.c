// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
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
 *
 * Files: storm.c (this: the storm mode and main), storm_killed.c (victim and survivor),
 * storm_common.c (what they share: message contents, TCP, libfabric set-up).
 */
#define _GNU_SOURCE
#include <rdma/fi_tagged.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storm_common.h"

static double send_delay; /* storm: seconds before the first send (receiving meanwhile) */

/* ---- storm: both directions at once ------------------------------------------------- */

/* One side of the storm: its send and receive slots and what its receiver has counted. */
struct storm_state {
    struct op sops[W], rops[W];
    int sfree[W], nsfree;
    int rq[W], rq_head, rq_len; /* receive slots waiting to be (re)posted */
    unsigned char *sbuf, *rbuf;
    unsigned char *seen; /* seen[seq]: message seq arrived intact */
    uint64_t n, my_salt, peer_salt;
    uint64_t next_send, sent, posted, recvd, distinct;
    uint64_t order_err, corrupt, dup, eagain, ooo_compl, max_post_done;
    int first_report;
    double t0;
};

static void storm_init(struct storm_state *s, int is_server, uint64_t n) {
    memset(s, 0, sizeof(*s));
    s->sbuf = alloc_bufs();
    s->rbuf = alloc_bufs();
    s->seen = calloc(n ? n : 1, 1);
    if (!s->seen) die(2, "out of memory");
    s->n = n;
    s->my_salt = is_server ? 0x5e5e : 0xc1c1;
    s->peer_salt = is_server ? 0xc1c1 : 0x5e5e;
    s->first_report = 5;
    for (int i = 0; i < W; i++) {
        s->sops[i] = (struct op){.kind = OP_SEND, .slot = i, .buf = s->sbuf + (size_t)i * BUFSZ};
        s->rops[i] = (struct op){.kind = OP_RECV, .slot = i, .buf = s->rbuf + (size_t)i * BUFSZ};
        s->sfree[i] = W - 1 - i;
        s->rq[i] = i;
    }
    s->nsfree = W;
    s->rq_len = W;
}

/* Post sends while slots are free (after STORM_SEND_DELAY_MS, if set). */
static void storm_post_sends(struct storm_state *s) {
    while (s->next_send < s->n && s->nsfree && (!send_delay || now() - s->t0 >= send_delay)) {
        struct op *o = &s->sops[s->sfree[s->nsfree - 1]];
        uint32_t len = build_msg(o->buf, s->next_send, payload_len(s->next_send), s->my_salt);
        o->idx = s->next_send;
        ssize_t rc = fi_tsend(ep, o->buf, len, NULL, peer, TAG, &o->ctx);
        if (rc == -FI_EAGAIN) {
            s->eagain++;
            break;
        }
        if (rc)
            die(2, "fi_tsend seq %llu: %zd (%s)", (unsigned long long)s->next_send, rc,
                fi_strerror((int)-rc));
        s->nsfree--;
        s->next_send++;
    }
}

/* (Re)post receives, in order of the slots' completion; count_eagain is 0 for the first
 * batch, posted before the storm starts. */
static void storm_post_recvs(struct storm_state *s, int count_eagain) {
    while (s->rq_len && s->posted < s->n) {
        struct op *o = &s->rops[s->rq[s->rq_head]];
        o->idx = s->posted;
        ssize_t rc = fi_trecv(ep, o->buf, BUFSZ, NULL, FI_ADDR_UNSPEC, TAG, 0, &o->ctx);
        if (rc == -FI_EAGAIN) {
            if (count_eagain) s->eagain++;
            break;
        }
        if (rc) die(2, "fi_trecv: %zd (%s)", rc, fi_strerror((int)-rc));
        s->rq_head = (s->rq_head + 1) % W;
        s->rq_len--;
        s->posted++;
    }
}

/* A receive completion: check the message, count what is wrong with it, requeue the slot. */
static void storm_on_recv(struct storm_state *s, struct op *o,
                          const struct fi_cq_tagged_entry *ent) {
    struct hdr h;
    const char *bad = NULL;
    if (!(ent->flags & FI_RECV))
        bad = "receive completion without FI_RECV";
    else if (ent->tag != TAG)
        bad = "wrong tag";
    else
        bad = check_msg(o->buf, ent->len, &h, s->peer_salt, s->n, 0);
    s->recvd++;
    if (o->idx < s->max_post_done)
        s->ooo_compl++; /* completion order: only reported */
    else
        s->max_post_done = o->idx;
    if (bad) {
        s->corrupt++;
        if (s->first_report-- > 0)
            fprintf(stderr, "%s: receive #%llu (len %zu): %s\n", role, (unsigned long long)o->idx,
                    ent->len, bad);
    } else if (s->seen[h.seq]) {
        s->dup++;
        if (s->first_report-- > 0)
            fprintf(stderr, "%s: receive #%llu: duplicate of message %llu\n", role,
                    (unsigned long long)o->idx, (unsigned long long)h.seq);
    } else {
        s->seen[h.seq] = 1;
        s->distinct++;
        if (h.seq != o->idx) {
            s->order_err++;
            if (s->first_report-- > 0)
                fprintf(stderr, "%s: receive #%llu holds message %llu: out of order\n", role,
                        (unsigned long long)o->idx, (unsigned long long)h.seq);
        }
    }
    memset(o->buf, 0, HDR); /* a stale header must not pass for a new message */
    s->rq[(s->rq_head + s->rq_len) % W] = o->slot;
    s->rq_len++;
}

static void storm_on_completions(struct storm_state *s, const struct fi_cq_tagged_entry *ents,
                                 ssize_t got) {
    for (ssize_t k = 0; k < got; k++) {
        struct op *o = ents[k].op_context;
        if (!o || (o->kind != OP_SEND && o->kind != OP_RECV))
            die(2, "completion with unknown context %p flags %#llx", (void *)o,
                (unsigned long long)ents[k].flags);
        if (o->kind == OP_RECV) {
            storm_on_recv(s, o, &ents[k]);
            continue;
        }
        if (!(ents[k].flags & FI_SEND))
            die(2, "send completion without FI_SEND: flags %#llx",
                (unsigned long long)ents[k].flags);
        s->sfree[s->nsfree++] = o->slot;
        s->sent++;
    }
}

static _Noreturn void storm_error_exit(const struct storm_state *s) {
    struct fi_cq_err_entry e;
    read_error(&e, 1);
    printf(
        "%s: sent %llu recv %llu order_errors %llu corrupt %llu dup %llu "
        "elapsed %.1fs: ERROR COMPLETION\n",
        role, (unsigned long long)s->sent, (unsigned long long)s->recvd,
        (unsigned long long)s->order_err, (unsigned long long)s->corrupt,
        (unsigned long long)s->dup, now() - s->t0);
    fflush(stdout);
    exit(2);
}

static _Noreturn void storm_stall_exit(const struct storm_state *s) {
    printf(
        "%s: sent %llu recv %llu lost %llu order_errors %llu corrupt %llu dup %llu "
        "elapsed %.1fs: NO PROGRESS for %.0f s (sends posted %llu, receives "
        "posted %llu, distinct received %llu)\n",
        role, (unsigned long long)s->sent, (unsigned long long)s->recvd,
        (unsigned long long)(s->n - s->distinct), (unsigned long long)s->order_err,
        (unsigned long long)s->corrupt, (unsigned long long)s->dup, now() - s->t0, stall_s,
        (unsigned long long)s->next_send, (unsigned long long)s->posted,
        (unsigned long long)s->distinct);
    fflush(stdout);
    exit(1);
}

/* Prints the result, waits for the peer to finish too, tears down; the exit status. */
static int storm_finish(struct storm_state *s) {
    double el = now() - s->t0;
    uint64_t n = s->n;
    int perfect = !s->order_err && !s->corrupt && !s->dup && s->distinct == n;
    printf(
        "storm: sent %llu recv %llu order_errors %llu corrupt %llu dup %llu lost %llu "
        "elapsed %.2fs (%s, %.0f msg/s each way, eagain %llu, completions out of post order "
        "%llu)%s\n",
        (unsigned long long)s->sent, (unsigned long long)s->recvd, (unsigned long long)s->order_err,
        (unsigned long long)s->corrupt, (unsigned long long)s->dup,
        (unsigned long long)(n - s->distinct), el, role, el > 0 ? (double)n / el : 0.0,
        (unsigned long long)s->eagain, (unsigned long long)s->ooo_compl, perfect ? "" : ": FAILED");
    fflush(stdout);
    oob_finish(stall_s);
    fabric_down();
    close(sock);
    free(s->sbuf);
    free(s->rbuf);
    free(s->seen);
    return perfect ? 0 : 1;
}

static int storm(int is_server, uint64_t n) {
    struct storm_state s;
    struct fi_cq_tagged_entry ents[32];
    int idle = 0;
    double last;

    storm_init(&s, is_server, n);
    storm_post_recvs(&s, 0); /* receives first: the peer's first messages find them posted */
    swap_addresses();
    s.t0 = last = now();
    while (s.sent < n || s.recvd < n) {
        storm_post_sends(&s);
        storm_post_recvs(&s, 1);
        ssize_t got = fi_cq_read(cq, ents, 32);
        if (got == -FI_EAVAIL) storm_error_exit(&s);
        if (got == -FI_EAGAIN) {
            if (++idle >= 64) {
                idle = 0;
                sched_yield();
            }
            if (now() - last > stall_s) storm_stall_exit(&s);
            continue;
        }
        if (got < 0) die(2, "fi_cq_read: %zd (%s)", got, fi_strerror((int)-got));
        idle = 0;
        last = now();
        storm_on_completions(&s, ents, got);
    }
    return storm_finish(&s);
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

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* storm's killed-peer modes (see storm.c): the victim receives a stream until it is
 * killed; the survivor streams to it and checks that, once the victim is gone, every
 * outstanding operation completes with an error in bounded time.
 */
#define _GNU_SOURCE
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "storm_common.h"

#define HELLO 16        /* victim -> survivor messages before the stream */
#define READY_AFTER 200 /* victim: messages received before it says "ready" */
#define EXTRA 8         /* survivor: sends posted after the first failure */

_Noreturn void victim(long kill_after) {
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
            *o = (struct op){
                .kind = OP_SEND, .slot = (int)next, .idx = next, .buf = sbuf + next * 512};
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

/* The survivor's state: its send slots, the hello receives and what it has counted. */
struct survivor_state {
    struct op sops[W + EXTRA], rops[HELLO];
    int sfree[W], nsfree;
    unsigned char *sbuf, *rbuf;
    uint64_t next, ok, errs, late_ok, refused, hello;
    uint64_t by_err[5]; /* FI_EHOSTUNREACH, FI_EIO, FI_ECANCELED, FI_ETIMEDOUT, other */
    int outstanding, recv_pending, extra_posted, printed, cancelled;
    double t0, t_err; /* start; first failure (0: none yet) */
};

/* Sets up the send slots and posts the receives for the victim's hello messages. */
static void survivor_init(struct survivor_state *s) {
    memset(s, 0, sizeof(*s));
    s->sbuf = alloc_bufs();
    s->rbuf = malloc((size_t)HELLO * BUFSZ);
    if (!s->rbuf) die(2, "out of memory");
    s->nsfree = W;
    for (int i = 0; i < W; i++) {
        s->sops[i] = (struct op){.kind = OP_SEND, .slot = i, .buf = s->sbuf + (size_t)i * BUFSZ};
        s->sfree[i] = i;
    }
    for (int i = W; i < W + EXTRA; i++)
        s->sops[i] = (struct op){.kind = OP_SEND, .slot = -1};
    for (int i = 0; i < HELLO; i++) {
        struct op *o = &s->rops[i];
        *o = (struct op){
            .kind = OP_RECV, .slot = i, .idx = (uint64_t)i, .buf = s->rbuf + (size_t)i * BUFSZ};
        FI_CHECK(fi_trecv(ep, o->buf, BUFSZ, NULL, FI_ADDR_UNSPEC, TAG, 0, &o->ctx));
        s->recv_pending++;
    }
}

/* Before the failure: stream 64 KiB and 8-byte messages in turn until a send fails. */
static void survivor_stream(struct survivor_state *s, double t) {
    while (s->nsfree) {
        struct op *o = &s->sops[s->sfree[s->nsfree - 1]];
        uint32_t len = build_msg(o->buf, s->next, s->next % 2 ? 8 : MAXPAY, 0x5a);
        o->idx = s->next;
        o->after_err = 0;
        ssize_t rc = fi_tsend(ep, o->buf, len, NULL, peer, TAG, &o->ctx);
        if (rc == -FI_EAGAIN) break;
        if (rc) {
            fprintf(stderr,
                    "survivor: fi_tsend seq %llu returned %zd (%s) before any "
                    "error completion\n",
                    (unsigned long long)s->next, rc, fi_strerror((int)-rc));
            s->t_err = t; /* the provider refuses: the peer is known dead */
            s->refused++;
            break;
        }
        s->nsfree--;
        s->outstanding++;
        s->next++;
    }
    if (t - s->t0 > stall_s)
        die(1,
            "no error completion within %.0f s: was the victim killed? (%llu sends "
            "completed)",
            stall_s, (unsigned long long)s->ok);
}

/* After the failure: a few more sends to the dead peer must fail as well. */
static void survivor_post_extra(struct survivor_state *s) {
    while (s->extra_posted < EXTRA) {
        struct op *o = &s->sops[W + s->extra_posted];
        if (!o->buf) *o = (struct op){.kind = OP_SEND, .slot = -1, .buf = malloc(BUFSZ)};
        if (!o->buf) die(2, "out of memory");
        o->idx = s->next;
        o->after_err = 1;
        uint32_t len = build_msg(o->buf, s->next, s->next % 2 ? 8 : MAXPAY, 0x5a);
        ssize_t rc = fi_tsend(ep, o->buf, len, NULL, peer, TAG, &o->ctx);
        if (rc == -FI_EAGAIN) break;
        s->extra_posted++;
        s->next++;
        if (rc) { /* refused at once: fine, nothing left pending */
            s->refused++;
            if (s->refused <= 2)
                fprintf(stderr, "survivor: fi_tsend after the failure: %zd %s (%s)\n", rc,
                        errname((int)rc), fi_strerror((int)-rc));
            continue;
        }
        s->outstanding++;
    }
}

/* After the failure: 1 once every operation has completed; exits on a hang. */
static int survivor_drained(struct survivor_state *s, double t) {
    survivor_post_extra(s);
    if (s->extra_posted == EXTRA && s->outstanding == 0 && s->recv_pending == 0) return 1;
    if (t - s->t_err > stall_s) {
        printf(
            "survivor: HANG: %d sends and %d receives still pending %.1f s after the "
            "first error\n",
            s->outstanding, s->recv_pending, t - s->t_err);
        fflush(stdout);
        exit(1);
    }
    if (s->recv_pending && !s->cancelled && t - s->t_err > 5) {
        /* Receives are not tied to a peer: they may wait forever. Cancel them. */
        s->cancelled = 1;
        for (int i = 0; i < HELLO; i++)
            if (!s->rops[i].after_err) fi_cancel(&ep->fid, &s->rops[i].ctx);
    }
    return 0;
}

/* An error completion: counted by error; the first one for a send marks the failure. */
static void survivor_on_error(struct survivor_state *s) {
    struct fi_cq_err_entry e;
    int err = read_error(&e, s->printed < 4 || verbose);
    struct op *o = e.op_context;
    s->printed++;
    if (!o) die(2, "error completion without context");
    s->errs++;
    switch (err) {
        case FI_EHOSTUNREACH:
            s->by_err[0]++;
            break;
        case FI_EIO:
            s->by_err[1]++;
            break;
        case FI_ECANCELED:
            s->by_err[2]++;
            break;
        case FI_ETIMEDOUT:
            s->by_err[3]++;
            break;
        default:
            s->by_err[4]++;
            break;
    }
    if (o->kind == OP_RECV) {
        s->recv_pending--;
        o->after_err = 1; /* for receives: completed */
        if (err != FI_ECANCELED)
            fprintf(stderr, "survivor: receive #%llu failed: %s\n", (unsigned long long)o->idx,
                    errname(err));
        return;
    }
    if (!s->t_err) {
        struct timespec wall;
        s->t_err = now();
        clock_gettime(CLOCK_REALTIME, &wall);
        fprintf(stderr,
                "survivor: first error completion %.3f s after start, %llu sends "
                "completed before it (at epoch %lld.%06ld)\n",
                s->t_err - s->t0, (unsigned long long)s->ok, (long long)wall.tv_sec,
                wall.tv_nsec / 1000);
    }
    s->outstanding--;
    if (o->slot >= 0) s->sfree[s->nsfree++] = o->slot;
}

/* Successful completions: the victim's hello messages, and sends. */
static void survivor_on_completions(struct survivor_state *s, const struct fi_cq_tagged_entry *ents,
                                    ssize_t got) {
    for (ssize_t k = 0; k < got; k++) {
        struct op *o = ents[k].op_context;
        if (o->kind == OP_RECV) {
            struct hdr h;
            const char *bad = check_msg(o->buf, ents[k].len, &h, 0x1c, HELLO, 1);
            if (bad) die(1, "hello #%llu: %s", (unsigned long long)o->idx, bad);
            if (h.seq != o->idx)
                die(1, "hello #%llu holds message %llu", (unsigned long long)o->idx,
                    (unsigned long long)h.seq);
            s->hello++;
            s->recv_pending--;
            o->after_err = 1; /* for receives: completed */
            continue;
        }
        s->outstanding--;
        if (o->after_err)
            s->late_ok++;
        else
            s->ok++;
        if (o->slot >= 0) s->sfree[s->nsfree++] = o->slot;
    }
}

/* Prints the result and tears down; the exit status. */
static int survivor_finish(struct survivor_state *s) {
    double drain = now() - s->t_err;
    int good = s->errs > 0 && s->late_ok == 0 && s->hello == HELLO;
    printf(
        "survivor: sends ok %llu, error completions %llu (FI_EHOSTUNREACH %llu, FI_EIO %llu, "
        "FI_ECANCELED %llu, FI_ETIMEDOUT %llu, other %llu), refused at post %llu, "
        "succeeded after the failure %llu, hello %llu/%d, pending 0, drained %.3f s after "
        "the first error%s\n",
        (unsigned long long)s->ok, (unsigned long long)s->errs, (unsigned long long)s->by_err[0],
        (unsigned long long)s->by_err[1], (unsigned long long)s->by_err[2],
        (unsigned long long)s->by_err[3], (unsigned long long)s->by_err[4],
        (unsigned long long)s->refused, (unsigned long long)s->late_ok,
        (unsigned long long)s->hello, HELLO, drain, good ? "" : ": FAILED");
    fflush(stdout);
    double tc = now();
    fabric_down();
    if (verbose) fprintf(stderr, "survivor: closed in %.3f s\n", now() - tc);
    for (int i = 0; i < s->extra_posted; i++)
        free(s->sops[W + i].buf);
    free(s->sbuf);
    free(s->rbuf);
    close(sock);
    return good ? 0 : 1;
}

int survivor(void) {
    struct survivor_state s;
    struct fi_cq_tagged_entry ents[32];
    double last;

    survivor_init(&s);
    swap_addresses();
    s.t0 = last = now();
    for (;;) {
        double t = now();
        if (!s.t_err)
            survivor_stream(&s, t);
        else if (survivor_drained(&s, t))
            break;
        ssize_t got = fi_cq_read(cq, ents, 32);
        if (got == -FI_EAGAIN) {
            sched_yield();
            if (t - last > stall_s) {
                printf(
                    "survivor: HANG: no completion for %.0f s, %d sends and %d receives "
                    "pending\n",
                    t - last, s.outstanding, s.recv_pending);
                fflush(stdout);
                exit(1);
            }
            continue;
        }
        last = t;
        if (got == -FI_EAVAIL) {
            survivor_on_error(&s);
            continue;
        }
        if (got < 0) die(2, "fi_cq_read: %zd (%s)", got, fi_strerror((int)-got));
        survivor_on_completions(&s, ents, got);
    }
    return survivor_finish(&s);
}

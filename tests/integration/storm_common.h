// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* storm: what the modes share (see storm.c for the modes): the libfabric endpoint, the
 * out-of-band TCP socket, the message format and its checks, and error reporting.
 */
#ifndef STORM_COMMON_H
#define STORM_COMMON_H

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <stddef.h>
#include <stdint.h>

#define TAG 0x5ULL
#define W 64                 /* sends and receives outstanding, each */
#define HDR 16               /* struct hdr on the wire */
#define MAXPAY (64 * 1024)   /* largest payload */
#define BUFSZ (HDR + MAXPAY) /* every buffer holds the largest message */

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

extern const char *role;
extern int verbose;
extern double stall_s;

extern struct fid_cq *cq;
extern struct fid_ep *ep;
extern fi_addr_t peer;
extern int sock;

double now(void);
_Noreturn void die(int code, const char *fmt, ...);
const char *errname(int e);

#define FI_CHECK(call)                                                        \
    do {                                                                      \
        int rc_ = (int)(call);                                                \
        if (rc_) die(2, "%s failed: %d (%s)", #call, rc_, fi_strerror(-rc_)); \
    } while (0)

/* Message contents. */
uint32_t payload_len(uint64_t i);
uint32_t build_msg(unsigned char *buf, uint64_t seq, uint32_t len, uint64_t salt);
const char *check_msg(const unsigned char *buf, size_t got, struct hdr *h, uint64_t salt,
                      uint64_t nmax, int any_len);
unsigned char *alloc_bufs(void);

/* Out of band: TCP. */
void oob_listen(const char *port);
void oob_connect(const char *host, const char *port);
/* Whole writes / reads on the out-of-band socket; exit on failure. */
void oob_write(const void *p, size_t n);
void oob_read(void *p, size_t n);
void oob_finish(double limit);

/* libfabric set-up. */
void fabric_up(void);
void fabric_down(void);
void swap_addresses(void);
int read_error(struct fi_cq_err_entry *e, int print);

/* The killed-peer modes (storm_killed.c). */
_Noreturn void victim(long kill_after);
int survivor(void);

#endif

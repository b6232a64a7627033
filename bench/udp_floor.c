// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* udp_floor: the floor under any UDP-based transport on a link, measured with plain
 * sockets: a ping-pong of S-byte datagrams, no protocol, no copies but the kernel's.
 *
 *   udp_floor -s [-p port] [-b] [-m]                 server: echoes every datagram back
 *   udp_floor [-p port] [-S size] [-I iters] [-w warmup] [-b] [-m] <server address>
 *
 * The client times each round trip and prints half of it (one-way latency, like
 * fi_pingpong's usec/xfer) as median / average / minimum, in microseconds:
 *
 *   bytes iters median_usec avg_usec min_usec
 *   8     20000 11.52       11.87    10.90
 *
 * Both sides busy-poll (non-blocking receive in a loop) like the fabric providers they
 * are compared with; -b makes them sleep in poll() until a datagram arrives instead.
 * -m receives with recvmmsg(2) (one datagram a call) and sends with sendmsg(2), the
 * calls of a transport that batches (softnic's UDP transport polls that way), instead
 * of recvfrom/sendto: the floor under such a transport. The client ends the server
 * with empty datagrams. Exit status 1 on a lost datagram during the timed part, a
 * silent peer, or a bad argument. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_DGRAM 65507

static int blocking;
static int mmsg; /* -m */

static ssize_t recv_one(int fd, void *buf, size_t len, struct sockaddr_in *from) {
    if (!mmsg) {
        socklen_t fl = sizeof(*from);
        return recvfrom(fd, buf, len, MSG_DONTWAIT, (struct sockaddr *)from, &fl);
    }
    struct iovec iov = {.iov_base = buf, .iov_len = len};
    struct mmsghdr m = {
        .msg_hdr = {
            .msg_name = from, .msg_namelen = sizeof(*from), .msg_iov = &iov, .msg_iovlen = 1}};
    int r = recvmmsg(fd, &m, 1, MSG_DONTWAIT, NULL);
    return r == 1 ? (ssize_t)m.msg_len : -1;
}

static ssize_t send_one(int fd, const void *buf, size_t len, const struct sockaddr_in *to) {
    if (!mmsg) return sendto(fd, buf, len, 0, (const struct sockaddr *)to, sizeof(*to));
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    struct msghdr h = {
        .msg_name = (void *)to, .msg_namelen = sizeof(*to), .msg_iov = &iov, .msg_iovlen = 1};
    return sendmsg(fd, &h, 0);
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Receive one datagram within timeout_us (busy-polling; with -b sleeping in poll());
 * -1 on timeout. */
static ssize_t recv_within(int fd, void *buf, size_t len, struct sockaddr_in *from,
                           double timeout_us) {
    double deadline = now_us() + timeout_us;
    for (;;) {
        if (blocking) {
            double left = deadline - now_us();
            struct pollfd pfd = {.fd = fd, .events = POLLIN};
            int r = poll(&pfd, 1, left > 0 ? (int)(left / 1000) + 1 : 0);
            if (r < 0 && errno != EINTR) {
                perror("udp_floor: poll");
                exit(1);
            }
        }
        ssize_t n = recv_one(fd, buf, len, from);
        if (n >= 0) return n;
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            perror("udp_floor: recvfrom");
            exit(1);
        }
        if (now_us() > deadline) return -1;
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int server(int fd) {
    static unsigned char buf[MAX_DGRAM];
    for (;;) {
        struct sockaddr_in from;
        /* A client that vanished leaves the server idle: give up after 30 s. */
        ssize_t n = recv_within(fd, buf, sizeof(buf), &from, 30e6);
        if (n < 0) {
            fprintf(stderr, "udp_floor: no datagram for 30 s\n");
            return 1;
        }
        if (n == 0) return 0; /* the client's goodbye */
        if (send_one(fd, buf, (size_t)n, &from) < 0) {
            perror("udp_floor: sendto");
            return 1;
        }
    }
}

/* One round trip carrying sequence number seq; returns its duration in us, or -1 when
 * no matching answer came within timeout_us. Stale answers (older seq) are skipped. */
static double round_trip(int fd, const struct sockaddr_in *peer, unsigned char *out,
                         unsigned char *in, size_t size, uint32_t seq, double timeout_us) {
    if (size >= sizeof(seq)) memcpy(out, &seq, sizeof(seq));
    double t0 = now_us();
    if (send_one(fd, out, size, peer) < 0) {
        perror("udp_floor: sendto");
        exit(1);
    }
    for (;;) {
        struct sockaddr_in from;
        double left = timeout_us - (now_us() - t0);
        ssize_t n = recv_within(fd, in, MAX_DGRAM, &from, left > 0 ? left : 0);
        if (n < 0) return -1;
        if ((size_t)n != size) continue;
        if (size >= sizeof(seq) && memcmp(in, &seq, sizeof(seq)) != 0) continue;
        return now_us() - t0;
    }
}

static int client(int fd, const char *host, int port, size_t size, long iters, long warmup) {
    struct sockaddr_in peer = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &peer.sin_addr) != 1) {
        fprintf(stderr, "udp_floor: not an IPv4 address: %s\n", host);
        return 1;
    }
    unsigned char *out = calloc(1, size ? size : 1), *in = malloc(MAX_DGRAM);
    double *half = malloc(sizeof(double) * (size_t)iters);
    if (!out || !in || !half) return 1;
    for (size_t i = sizeof(uint32_t); i < size; i++)
        out[i] = (unsigned char)i;
    uint32_t seq = 0;
    /* Warm-up, which also waits for the server to be up: resend until answered. */
    int tries = 0;
    while (round_trip(fd, &peer, out, in, size, ++seq, 100e3) < 0) {
        if (++tries == 100) {
            fprintf(stderr, "udp_floor: no answer from %s:%d\n", host, port);
            return 1;
        }
    }
    for (long i = 0; i < warmup; i++)
        if (round_trip(fd, &peer, out, in, size, ++seq, 1e6) < 0) {
            fprintf(stderr, "udp_floor: datagram lost during warm-up\n");
            return 1;
        }
    double sum = 0;
    for (long i = 0; i < iters; i++) {
        double rtt = round_trip(fd, &peer, out, in, size, ++seq, 1e6);
        if (rtt < 0) {
            fprintf(stderr, "udp_floor: datagram lost (iteration %ld)\n", i);
            return 1;
        }
        half[i] = rtt / 2;
        sum += half[i];
    }
    for (int i = 0; i < 3; i++)
        sendto(fd, out, 0, 0, (struct sockaddr *)&peer, sizeof(peer));
    qsort(half, (size_t)iters, sizeof(double), cmp_double);
    double median = iters % 2 ? half[iters / 2] : (half[iters / 2 - 1] + half[iters / 2]) / 2;
    printf("%-5s %-5s %-11s %-8s %s\n", "bytes", "iters", "median_usec", "avg_usec", "min_usec");
    printf("%-5zu %-5ld %-11.2f %-8.2f %.2f\n", size, iters, median, sum / (double)iters, half[0]);
    free(out);
    free(in);
    free(half);
    return 0;
}

static void usage(void) {
    fprintf(
        stderr,
        "usage: udp_floor -s [-p port] [-b] [-m]\n"
        "       udp_floor [-p port] [-S size] [-I iters] [-w warmup] [-b] [-m] <server ipv4>\n");
    exit(1);
}

int main(int argc, char **argv) {
    int is_server = 0, port = 47900, opt;
    long size = 8, iters = 10000, warmup = 100;
    while ((opt = getopt(argc, argv, "sp:S:I:w:bmh")) != -1) {
        switch (opt) {
            case 's':
                is_server = 1;
                break;
            case 'p':
                port = atoi(optarg);
                break;
            case 'S':
                size = atol(optarg);
                break;
            case 'I':
                iters = atol(optarg);
                break;
            case 'w':
                warmup = atol(optarg);
                break;
            case 'b':
                blocking = 1;
                break;
            case 'm':
                mmsg = 1;
                break;
            default:
                usage();
        }
    }
    if (port <= 0 || port > 65535 || size < 1 || size > MAX_DGRAM || iters < 1 || warmup < 0)
        usage();
    if (!is_server && optind != argc - 1) usage();
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) {
        perror("udp_floor: socket");
        return 1;
    }
    if (is_server) {
        struct sockaddr_in addr = {.sin_family = AF_INET,
                                   .sin_port = htons((uint16_t)port),
                                   .sin_addr.s_addr = htonl(INADDR_ANY)};
        if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
            perror("udp_floor: bind");
            return 1;
        }
        return server(fd);
    }
    return client(fd, argv[optind], port, (size_t)size, iters, warmup);
}

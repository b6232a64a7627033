// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// cxi_peer: the other process of the cross-process conformance tests.
//
//   cxi_peer <socket-fd> <mode> <domain> [mode args...]
//
// Every mode opens one endpoint on <domain>, sends its fi_getname() address
// over the socket, receives the test's address and inserts it into its AV
// (except "shared_av", which only uses the AV the test created). The exit
// code is 0 when every check passed; diagnostics go to stderr.
#include <rdma/fi_atomic.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_eq.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common.hpp"
#include "cuda_mem.hpp"
#include "peer_proto.hpp"

using namespace cxit;

namespace {

bool g_failed = false;

void peer_handler(const std::string &msg, const char *file, int line, bool fatal) {
    std::fprintf(stderr, "cxi_peer[%d]: %s:%d: %s\n", static_cast<int>(getpid()), file, line,
                 msg.c_str());
    std::fflush(stderr);
    g_failed = true;
    if (fatal) _exit(3);
}

struct Ctx {
    int fd;
    const char *domain;
    Session session;
};

fi_addr_t exchange(Endpoint &ep, int fd) {
    proc::send_blob(fd, ep.name());
    std::vector<uint8_t> theirs = proc::recv_blob(fd);
    return ep.insert(theirs);
}

// For each size: post the receive, tell the test, check the data, echo it.
int run_pingpong(Ctx &c) {
    EndpointPtr ep = c.session.endpoint(c.domain, EpOptions{});
    fi_addr_t peer = exchange(*ep, c.fd);
    std::vector<size_t> sizes = pingpong_sizes();
    std::vector<uint8_t> buf(sizes.back());
    for (size_t i = 0; i < sizes.size(); i++) {
        const size_t len = sizes[i];
        std::memset(buf.data(), 0, len);
        int rctx = 0, sctx = 0;
        post([&] { return fi_trecv(ep->ep(), buf.data(), len, nullptr, peer, i, 0, &rctx); },
             "fi_trecv");
        proc::send_str(c.fd, "R");
        Comp rc = wait_comp(ep->rx(), &rctx, "pingpong receive");
        CXIT_REQUIRE(rc.e.len == len,
                     "received length " + std::to_string(rc.e.len) + " for " + std::to_string(len));
        CXIT_REQUIRE(rc.e.tag == i, "tag mismatch");
        size_t bad = mismatch(buf.data(), len, static_cast<uint32_t>(len));
        CXIT_REQUIRE(bad == SIZE_MAX, "payload of size " + std::to_string(len) +
                                          " differs at offset " + std::to_string(bad));
        post([&] { return fi_tsend(ep->ep(), buf.data(), len, nullptr, peer, i, &sctx); },
             "fi_tsend");
        wait_comp(ep->tx(), &sctx, "pingpong echo send");
    }
    proc::send_str(c.fd, "DONE");
    proc::expect_str(c.fd, "BYE");
    return g_failed ? 1 : 0;
}

// Sends a burst (tagged and untagged, eager and rendezvous) before the test
// posts any receive, then waits for all send completions.
int run_unexpected(Ctx &c) {
    EndpointPtr ep = c.session.endpoint(c.domain, EpOptions{});
    fi_addr_t peer = exchange(*ep, c.fd);
    const std::vector<size_t> sizes = proc::unexpected_sizes();
    std::vector<std::vector<uint8_t>> bufs;
    std::vector<int> ctxs(sizes.size());
    for (size_t i = 0; i < sizes.size(); i++)
        bufs.push_back(pattern(sizes[i], static_cast<uint32_t>(1000 + i)));
    for (size_t i = 0; i < sizes.size(); i++) {
        void *b = bufs[i].data();
        size_t len = sizes[i];
        if (i % 2 == 0)
            post([&] { return fi_tsend(ep->ep(), b, len, nullptr, peer, 100 + i, &ctxs[i]); },
                 "fi_tsend");
        else
            post([&] { return fi_send(ep->ep(), b, len, nullptr, peer, &ctxs[i]); }, "fi_send");
    }
    proc::send_str(c.fd, "S");
    for (size_t i = 0; i < sizes.size(); i++)
        wait_comp(ep->tx(), &ctxs[i], "unexpected send");
    proc::send_str(c.fd, "D");
    proc::expect_str(c.fd, "BYE");
    return g_failed ? 1 : 0;
}

// Opens the test's named AV read-only, checks every entry, then sends two
// messages to the entry the test named as its own address.
int run_shared_av(Ctx &c, const char *av_name) {
    EpOptions o;
    o.av_name = av_name;
    o.av_flags = FI_READ;
    EndpointPtr ep = c.session.endpoint(c.domain, o);
    proc::send_blob(c.fd, ep->name());
    std::vector<uint8_t> table = proc::recv_blob(c.fd);
    const fi_addr_t target = std::stoull(proc::recv_str(c.fd));
    CXIT_REQUIRE(table.size() % kAddrLen == 0 && !table.empty(), "bad address table");
    for (size_t i = 0; i < table.size() / kAddrLen; i++) {
        uint8_t got[64] = {};
        size_t len = sizeof(got);
        CXIT_CHECK(fi_av_lookup(ep->av(), i, got, &len));
        CXIT_REQUIRE(len == kAddrLen, "lookup length " + std::to_string(len));
        CXIT_REQUIRE(std::memcmp(got, &table[i * kAddrLen], kAddrLen) == 0,
                     "shared AV entry " + std::to_string(i) + " differs");
    }
    std::vector<uint8_t> small = pattern(1000, 4242), big = pattern(kRdzvSize, 4343);
    int c1 = 0, c2 = 0;
    post([&] { return fi_send(ep->ep(), small.data(), small.size(), nullptr, target, &c1); },
         "fi_send small");
    post([&] { return fi_send(ep->ep(), big.data(), big.size(), nullptr, target, &c2); },
         "fi_send big");
    wait_comp(ep->tx(), &c1, "shared-AV small send");
    wait_comp(ep->tx(), &c2, "shared-AV rendezvous send");
    proc::send_str(c.fd, "D");
    proc::expect_str(c.fd, "BYE");
    return g_failed ? 1 : 0;
}

// Echoes every tagged message back with the same tag until killed or until
// the test sends nothing for the whole deadline. "echo pinned": at a PID of its own
// choosing (FI_SOURCE), above the ones that kPidAny hands out first, so that once this
// process is killed no endpoint that another test process opens meanwhile takes its
// address: the test keeps sending to a dead peer, not to a stranger.
int run_echo(Ctx &c, bool pinned) {
    uint32_t pid = 0;
    EndpointPtr ep = pinned ? c.session.endpoint_at_pid(c.domain, EpOptions{}, pid)
                            : c.session.endpoint(c.domain, EpOptions{});
    fi_addr_t peer = exchange(*ep, c.fd);
    std::vector<uint8_t> buf(4u << 20);
    proc::send_str(c.fd, "R");
    for (;;) {
        int rctx = 0, sctx = 0;
        post(
            [&] {
                return fi_trecv(ep->ep(), buf.data(), buf.size(), nullptr, FI_ADDR_UNSPEC, 0,
                                kMaxTag, &rctx);
            },
            "fi_trecv");
        Comp rc = wait_comp(ep->rx(), &rctx, "echo receive");
        const size_t len = rc.e.len;
        const uint64_t tag = rc.e.tag;
        post([&] { return fi_tsend(ep->ep(), buf.data(), len, nullptr, peer, tag, &sctx); },
             "fi_tsend");
        wait_comp(ep->tx(), &sctx, "echo send");
    }
}

// Fetch-adds 1 to the word the test names (key from the socket) `count` times; the
// values it fetches must rise strictly, whatever the other processes do meanwhile.
int run_hammer(Ctx &c, int count) {
    EpOptions o;
    o.caps = FI_MSG | FI_ATOMIC;
    EndpointPtr ep = c.session.endpoint(c.domain, o);
    fi_addr_t peer = exchange(*ep, c.fd);
    const uint64_t key = std::stoull(proc::recv_str(c.fd));
    uint64_t last = 0;
    for (int i = 0; i < count; i++) {
        uint64_t one = 1, old = 0;
        int ctx = 0;
        post(
            [&] {
                return fi_fetch_atomic(ep->ep(), &one, 1, nullptr, &old, nullptr, peer, 0, key,
                                       FI_UINT64, FI_SUM, &ctx);
            },
            "fi_fetch_atomic");
        wait_comp(ep->tx(), &ctx, "fetch-add");
        CXIT_REQUIRE(i == 0 || old > last,
                     "fetched " + std::to_string(old) + " after " + std::to_string(last));
        last = old;
    }
    proc::send_str(c.fd, "D");
    proc::expect_str(c.fd, "BYE");
    return g_failed ? 1 : 0;
}

// The target of one-sided operations that never calls into libfabric while they run:
// it exposes 1 MiB (pattern 77), then blocks on the socket until told to check that
// the first half now holds pattern 78.
int run_window(Ctx &c) {
    EpOptions o;
    o.caps = FI_MSG | FI_RMA;
    EndpointPtr ep = c.session.endpoint(c.domain, o);
    exchange(*ep, c.fd);
    std::vector<uint8_t> mem = pattern(1 << 20, 77);
    Fid<fid_mr> mr;
    CXIT_CHECK(CXIT_OPEN(mr, fi_mr_reg(c.session.domain(c.domain, o), mem.data(), mem.size(),
                                       FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, OUT, nullptr)));
    CXIT_CHECK(fi_mr_bind(mr.get(), &ep->ep()->fid, 0));
    CXIT_CHECK(fi_mr_enable(mr.get()));
    proc::send_str(c.fd, std::to_string(fi_mr_key(mr.get())));
    proc::expect_str_idle(c.fd, "CHECK");
    size_t bad = mismatch(mem.data(), mem.size() / 2, 78);
    proc::send_str(c.fd, bad == SIZE_MAX ? "OK" : "BAD at " + std::to_string(bad));
    proc::expect_str(c.fd, "BYE");
    return g_failed ? 1 : 0;
}

// Joins a two-member collective group with the test (the test is rank 0), does one
// allreduce (INT64 SUM, our 5), reports the result, then waits to be killed.
int run_coll(Ctx &c) {
    EpOptions o;
    o.caps = FI_MSG | FI_TAGGED | FI_COLLECTIVE;
    EndpointPtr ep = c.session.endpoint(c.domain, o);
    fi_addr_t test = exchange(*ep, c.fd);
    fi_addr_t self = ep->insert(ep->name());
    InfoPtr info = get_info(o, c.domain);
    CollGroup g;
    join_group(g, c.session.fabric(info.get()), *ep, {test, self}, nullptr, false);
    proc::send_str(c.fd, "J");
    int64_t sum = allreduce_sum(*ep, g, 5, "allreduce");
    proc::send_str(c.fd, std::to_string(sum));
    proc::expect_str(c.fd, "BYE");  // killed before that
    return g_failed ? 1 : 0;
}

// FI_HMEM across processes sharing one GPU: the receive and echo buffer is device
// memory, exposed as an MR whose key goes to the test. For each size the test names, the
// message is received into device memory, checked there, and echoed from it. The test
// ends with one-sided operations on the MR, then "CHECK" <len> <seed>.
int run_hmem_echo(Ctx &c) {
    if (std::string why = cuda::why_not(); !why.empty()) {
        std::fprintf(stderr, "cxi_peer: %s\n", why.c_str());
        return 4;
    }
    EpOptions o;
    o.caps = FI_MSG | FI_TAGGED | FI_RMA | FI_HMEM;
    EndpointPtr ep = c.session.endpoint(c.domain, o);
    fi_addr_t peer = exchange(*ep, c.fd);
    const std::vector<size_t> sizes = hmem_sizes();
    cuda::Buffer buf(sizes.back());
    CXIT_REQUIRE(buf.ok(), "cuMemAlloc of the echo buffer failed");
    Fid<fid_mr> mr;
    CXIT_CHECK(reg_cuda(c.session.domain(c.domain, o), buf.get(), buf.size(),
                        FI_SEND | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE, ep->ep(), mr));
    void *desc = fi_mr_desc(mr.get());
    proc::send_str(c.fd, std::to_string(fi_mr_key(mr.get())));
    for (size_t i = 0; i < sizes.size(); i++) {
        const size_t len = sizes[i];
        int rctx = 0, sctx = 0;
        post([&] { return fi_trecv(ep->ep(), buf.get(), len, desc, peer, i, 0, &rctx); },
             "fi_trecv into device memory");
        proc::send_str(c.fd, "R");
        Comp rc = wait_comp(ep->rx(), &rctx, "device receive");
        CXIT_REQUIRE(rc.e.len == len, "device receive of " + std::to_string(len) + " bytes got " +
                                          std::to_string(rc.e.len));
        size_t bad = mismatch(buf.take(len).data(), len, static_cast<uint32_t>(len));
        CXIT_REQUIRE(bad == SIZE_MAX, "device payload of " + std::to_string(len) +
                                          " bytes differs at " + std::to_string(bad));
        post([&] { return fi_tsend(ep->ep(), buf.get(), len, desc, peer, i, &sctx); },
             "fi_tsend from device memory");
        wait_comp(ep->tx(), &sctx, "device echo");
    }
    // The test writes its pattern into the MR, then asks what the device holds.
    std::string check = proc::recv_str(c.fd, std::chrono::milliseconds(60000));
    size_t len = 0;
    unsigned seed = 0;
    CXIT_REQUIRE(std::sscanf(check.c_str(), "CHECK %zu %u", &len, &seed) == 2 && len <= buf.size(),
                 "expected CHECK <len> <seed>, got " + check);
    size_t bad = mismatch(buf.take(len).data(), len, seed);
    proc::send_str(c.fd, bad == SIZE_MAX ? "OK" : "BAD at " + std::to_string(bad));
    proc::expect_str(c.fd, "BYE", std::chrono::milliseconds(60000));
    return g_failed ? 1 : 0;
}

}  // namespace

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    set_fail_handler(peer_handler);
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s <fd> <mode> <domain> [args]\n", argv[0]);
        return 2;
    }
    Ctx c{std::atoi(argv[1]), argv[3], {}};
    const std::string mode = argv[2];
    int rc = 2;
    if (mode == "pingpong") {
        rc = run_pingpong(c);
    } else if (mode == "unexpected") {
        rc = run_unexpected(c);
    } else if (mode == "shared_av" && argc >= 5) {
        rc = run_shared_av(c, argv[4]);
    } else if (mode == "echo") {
        rc = run_echo(c, argc >= 5 && std::string(argv[4]) == "pinned");
    } else if (mode == "window") {
        rc = run_window(c);
    } else if (mode == "coll") {
        rc = run_coll(c);
    } else if (mode == "hmem_echo") {
        rc = run_hmem_echo(c);
    } else if (mode == "hammer" && argc >= 5) {
        rc = run_hammer(c, std::atoi(argv[4]));
    } else {
        std::fprintf(stderr, "cxi_peer: unknown mode '%s'\n", mode.c_str());
    }
    return rc;
}

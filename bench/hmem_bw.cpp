// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// hmem_bw: streaming bandwidth of cxi between two processes, host buffers against CUDA
// device buffers, in the same run (docs/PERFORMANCE.md, GPU).
//
//   hmem_bw [ITERATIONS]     (FI_PROVIDER_PATH naming the plugins, FI_CXI_SOFT_NICS
//                             two addresses: cxi0 -> cxi0 is shared memory, cxi0 -> cxi1 UDP)
//
// The receiver is a child process (forked before either touches CUDA or libfabric),
// told each case over a socketpair. For each transport, size and memory kind:
// ITERATIONS tagged messages, a window of 8 in flight; timed from the first send until
// the receiver reports every message in, its buffer checked.
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cuda_mem.hpp"

namespace {

constexpr int kWindow = 8;
bool g_gpu = false;  // without one, the host column alone (to try the bench anywhere)

void check(long rc, const char *what) {
    if (rc == 0) return;
    std::fprintf(stderr, "hmem_bw: %s: %s\n", what, fi_strerror(int(-rc)));
    std::exit(1);
}

struct Side {
    fid_domain *domain = nullptr;
    fid_av *av = nullptr;
    fid_cq *cq = nullptr;
    fid_ep *ep = nullptr;
    fi_addr_t peer = 0;
};

fi_info *info_for(const char *domain_name) {
    fi_info *hints = fi_allocinfo(), *info = nullptr;
    hints->caps = FI_TAGGED | (g_gpu ? FI_HMEM : 0);
    hints->ep_attr->type = FI_EP_RDM;
    hints->fabric_attr->prov_name = strdup("cxi");
    hints->domain_attr->name = strdup(domain_name);
    hints->domain_attr->mr_mode = FI_MR_ENDPOINT | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    check(fi_getinfo(FI_VERSION(1, 15), nullptr, nullptr, 0, hints, &info), "fi_getinfo");
    fi_freeinfo(hints);
    return info;
}

void open_side(fid_fabric *fabric, const char *domain_name, Side &s) {
    fi_info *info = info_for(domain_name);
    check(fi_domain(fabric, info, &s.domain, nullptr), "fi_domain");
    fi_av_attr av{};
    av.type = FI_AV_TABLE;
    check(fi_av_open(s.domain, &av, &s.av, nullptr), "fi_av_open");
    fi_cq_attr cq{};
    cq.format = FI_CQ_FORMAT_TAGGED;
    cq.size = 1024;
    check(fi_cq_open(s.domain, &cq, &s.cq, nullptr), "fi_cq_open");
    check(fi_endpoint(s.domain, info, &s.ep, nullptr), "fi_endpoint");
    check(fi_ep_bind(s.ep, &s.av->fid, 0), "bind av");
    check(fi_ep_bind(s.ep, &s.cq->fid, FI_TRANSMIT | FI_RECV), "bind cq");
    check(fi_enable(s.ep), "fi_enable");
    fi_freeinfo(info);
}

void close_side(Side &s) {
    fi_close(&s.ep->fid);
    fi_close(&s.cq->fid);
    fi_close(&s.av->fid);
    fi_close(&s.domain->fid);
}

// The socketpair between the two processes: fixed-size records, blocking.
template <class T>
void put(int fd, const T &v) {
    if (write(fd, &v, sizeof(v)) != ssize_t(sizeof(v))) check(-FI_EIO, "socket write");
}
template <class T>
T get(int fd) {
    T v{};
    if (read(fd, &v, sizeof(v)) != ssize_t(sizeof(v))) check(-FI_EIO, "socket read");
    return v;
}

struct Name {
    char bytes[64];
    size_t len;
};

// Swaps endpoint names with the other process and inserts its name.
void connect(Side &s, int fd) {
    Name mine{};
    mine.len = sizeof(mine.bytes);
    check(fi_getname(&s.ep->fid, mine.bytes, &mine.len), "fi_getname");
    put(fd, mine);
    Name theirs = get<Name>(fd);
    if (fi_av_insert(s.av, theirs.bytes, 1, &s.peer, 0, nullptr) != 1)
        check(-FI_EINVAL, "fi_av_insert");
}

struct Case {  // one measurement, as the receiver is told it (len 0: the end)
    size_t len;
    int device;
    int iters;
};

void wait_one(Side &s) {
    fi_cq_tagged_entry e;
    for (;;) {
        ssize_t n = fi_cq_read(s.cq, &e, 1);
        if (n == 1) return;
        if (n != -FI_EAGAIN) check(n, "fi_cq_read");
    }
}

// A registered buffer of `len` bytes in host or device memory, filled with `fill`.
struct Buffer {
    Buffer(Side &s, size_t len, bool device, uint8_t fill) : len(len) {
        if (device) {
            dev = std::make_unique<cuda::Buffer>(len);
            if (!dev->ok() || !dev->fill(fill)) check(-FI_ENOMEM, "device buffer");
            ptr = dev->get();
        } else {
            host.assign(len, fill);
            ptr = host.data();
        }
        iovec iov{ptr, len};
        fi_mr_attr attr{};
        attr.mr_iov = &iov;
        attr.iov_count = 1;
        attr.access = FI_SEND | FI_RECV;
        attr.iface = device ? FI_HMEM_CUDA : FI_HMEM_SYSTEM;
        check(fi_mr_regattr(s.domain, &attr, 0, &mr), "fi_mr_regattr");
    }
    ~Buffer() { fi_close(&mr->fid); }
    bool holds(uint8_t v) const {
        std::vector<uint8_t> seen = dev ? dev->take(len) : host;
        return !seen.empty() && seen[0] == v && seen[len - 1] == v;
    }
    size_t len;
    std::vector<uint8_t> host;
    std::unique_ptr<cuda::Buffer> dev;
    void *ptr = nullptr;
    fid_mr *mr = nullptr;
};

// The child: receives each case's messages into one buffer, then says whether they came.
int receiver(int fd, const char *domain) {
    g_gpu = cuda::why_not().empty();
    Side b;
    fid_fabric *fabric = nullptr;
    fi_info *info = info_for(domain);
    check(fi_fabric(info->fabric_attr, &fabric, nullptr), "fi_fabric");
    fi_freeinfo(info);
    open_side(fabric, domain, b);
    connect(b, fd);
    for (Case c = get<Case>(fd); c.len; c = get<Case>(fd)) {
        Buffer buf(b, c.len, c.device, 0);
        int posted = 0, got = 0;
        for (; posted < kWindow && posted < c.iters; posted++)
            check(fi_trecv(b.ep, buf.ptr, c.len, fi_mr_desc(buf.mr), b.peer, 1, 0, nullptr),
                  "fi_trecv");
        put(fd, 'R');
        while (got < c.iters) {
            wait_one(b);
            got++;
            if (posted < c.iters) {
                check(fi_trecv(b.ep, buf.ptr, c.len, fi_mr_desc(buf.mr), b.peer, 1, 0, nullptr),
                      "fi_trecv");
                posted++;
            }
        }
        put(fd, char(buf.holds(0x5A) ? 'D' : 'X'));
    }
    close_side(b);
    fi_close(&fabric->fid);
    return 0;
}

// The parent: bytes per second of one case, 0 when the bytes arrived wrong.
double stream(Side &a, int fd, const Case &c) {
    Buffer buf(a, c.len, c.device, 0x5A);
    put(fd, c);
    if (get<char>(fd) != 'R') return 0;
    auto t0 = std::chrono::steady_clock::now();
    int sent = 0, done = 0;
    while (done < c.iters) {
        while (sent < c.iters && sent - done < kWindow) {
            ssize_t rc = fi_tsend(a.ep, buf.ptr, c.len, fi_mr_desc(buf.mr), a.peer, 1, nullptr);
            if (rc == -FI_EAGAIN) break;
            check(rc, "fi_tsend");
            sent++;
        }
        fi_cq_tagged_entry e;
        ssize_t n = fi_cq_read(a.cq, &e, 1);
        if (n == 1)
            done++;
        else if (n != -FI_EAGAIN)
            check(n, "fi_cq_read");
    }
    if (get<char>(fd) != 'D') return 0;
    std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    return double(c.len) * c.iters / dt.count();
}

struct Receiver {
    pid_t pid;
    int fd;
};

// A receiver process on `domain`, forked before this process touches CUDA (a process
// forked after its parent initialized the driver cannot use it).
Receiver spawn(const char *domain) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) check(-FI_EIO, "socketpair");
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        _exit(receiver(sv[1], domain));
    }
    close(sv[1]);
    return Receiver{pid, sv[0]};
}

// One transport: every size, host then device, against receiver `r`.
bool measure(Receiver r, const char *name, int iters) {
    fid_fabric *fabric = nullptr;
    fi_info *info = info_for("cxi0");
    check(fi_fabric(info->fabric_attr, &fabric, nullptr), "fi_fabric");
    fi_freeinfo(info);
    Side a;
    open_side(fabric, "cxi0", a);
    connect(a, r.fd);
    bool ok = true;
    for (size_t len : {size_t{64} << 10, size_t{1} << 20, size_t{16} << 20}) {
        double bw[2] = {0, 0};
        for (int dev = 0; dev < 1 + g_gpu; dev++) {
            stream(a, r.fd, Case{len, dev, 4});  // warm-up: links, mappings
            bw[dev] = stream(a, r.fd, Case{len, dev, iters});
            ok &= bw[dev] > 0;
        }
        if (g_gpu)
            std::printf("| %s | %zu KiB | %.2f | %.2f | %.2fx |\n", name, len >> 10, bw[0] / 1e9,
                        bw[1] / 1e9, bw[1] / bw[0]);
        else
            std::printf("| %s | %zu KiB | %.2f | - | - |\n", name, len >> 10, bw[0] / 1e9);
    }
    put(r.fd, Case{0, 0, 0});
    int status = 0;
    waitpid(r.pid, &status, 0);
    close_side(a);
    fi_close(&fabric->fid);
    close(r.fd);
    return ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

int main(int argc, char **argv) {
    const int iters = argc > 1 ? std::atoi(argv[1]) : 200;
    Receiver shm = spawn("cxi0"), udp = spawn("cxi1");
    const std::string why = cuda::why_not();
    g_gpu = why.empty();
    if (!g_gpu) std::printf("hmem_bw: %s: host buffers only\n\n", why.c_str());
    std::printf("| transport | size | host -> host GB/s | device -> device GB/s | ratio |\n");
    std::printf("|---|---|---|---|---|\n");
    bool ok = measure(shm, "shm, 2 processes", iters);
    ok = measure(udp, "udp, 2 processes", iters) && ok;
    if (!ok) std::fprintf(stderr, "hmem_bw: a case failed (wrong bytes or a dead receiver)\n");
    return ok ? 0 : 1;
}

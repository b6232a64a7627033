// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// FI_HMEM with CUDA device memory (fi_cxi(7) GPUS): messages (tagged and untagged,
// eager and rendezvous, expected and unexpected) and RMA whose local or remote buffers
// are device memory, between endpoints of one process and between two processes sharing
// the GPU, over every transport; every byte checked on the device. Where no CUDA driver
// or device is (CI), the device tests skip saying why, and the offer is checked: no
// FI_HMEM, and CUDA registrations refused.
#include <rdma/fi_atomic.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <string>

#include <cassini_cntr_defs.h>

#include "cuda_mem.hpp"
#include "one_sided.hpp"
#include "peer_proto.hpp"

#ifndef CXIT_PEER_PATH
#error "CXIT_PEER_PATH must name the cxi_peer executable"
#endif

using namespace cxit;

namespace {

constexpr uint64_t kHmemCaps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_HMEM;
constexpr uint64_t kAllAccess =
    FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;

bool have_gpu() {
    return cuda::why_not().empty();
}

struct Offer {
    long rc = 0;
    InfoPtr info;
};
Offer query(const fi_info *hints) {
    fi_info *out = nullptr;
    Offer o;
    o.rc = fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints, &out);
    o.info.reset(out);
    return o;
}

// Without a GPU: nothing offers FI_HMEM, and asking for it finds no cxi.
TEST(HmemOffer, FollowsTheDriver) {
    InfoPtr hints = make_hints(EpOptions{}, "cxi0");
    hints->caps = FI_MSG | FI_TAGGED | FI_HMEM;
    Offer asked = query(hints.get());
    Offer all = query(nullptr);
    ASSERT_OK(all.rc);
    bool any_hmem = false;
    for (const fi_info *i = all.info.get(); i; i = i->next)
        if (std::string(i->fabric_attr->prov_name) == "cxi") any_hmem |= (i->caps & FI_HMEM) != 0;
    if (have_gpu()) {
        ASSERT_OK(asked.rc);
        EXPECT_TRUE(asked.info->caps & FI_HMEM);
        EXPECT_TRUE(asked.info->tx_attr->caps & FI_HMEM);
        EXPECT_TRUE(asked.info->rx_attr->caps & FI_HMEM);
        EXPECT_TRUE(any_hmem) << "no cxi info offers FI_HMEM without hints";
    } else {
        EXPECT_EQ(-FI_ENODATA, asked.rc) << "FI_HMEM offered without a GPU";
        EXPECT_FALSE(any_hmem) << "FI_HMEM offered without a GPU (" << cuda::why_not() << ")";
    }
    // Asked for host memory only, nothing says FI_HMEM.
    hints->caps = FI_MSG | FI_TAGGED;
    Offer host = query(hints.get());
    ASSERT_OK(host.rc);
    EXPECT_FALSE(host.info->caps & FI_HMEM);
}

class HmemRegTest : public CxiTest {};

// Registrations of memory interfaces that are not there fail honestly.
TEST_F(HmemRegTest, UnsupportedInterfacesRefused) {
    fid_domain *d = domain("cxi0");
    std::vector<uint8_t> host(4096);
    iovec iov{host.data(), host.size()};
    fi_mr_attr attr{};
    attr.mr_iov = &iov;
    attr.iov_count = 1;
    attr.access = FI_REMOTE_READ | FI_REMOTE_WRITE;
    attr.iface = FI_HMEM_ZE;
    Fid<fid_mr> mr;
    EXPECT_EQ(-FI_ENOSYS, CXIT_OPEN(mr, fi_mr_regattr(d, &attr, 0, OUT)));
    if (have_gpu()) return;  // CUDA registrations are the device tests' business
    attr.iface = FI_HMEM_CUDA;
    EXPECT_EQ(-FI_ENOSYS, CXIT_OPEN(mr, fi_mr_regattr(d, &attr, 0, OUT)));
    attr.iface = FI_HMEM_SYSTEM;  // and host memory as before
    EXPECT_OK(CXIT_OPEN(mr, fi_mr_regattr(d, &attr, 0, OUT)));
}

class HmemTest : public OneSidedTest {
  protected:
    void SetUp() override {
        if (std::string why = cuda::why_not(); !why.empty()) GTEST_SKIP() << why;
    }
    uint64_t caps() const override { return kHmemCaps; }
    // Device messages the domain of b received device to device (CUDA IPC).
    uint64_t ipc_copies() { return hw(domain(peer_domain(), opts()), SOFTNIC_CNTR_HMEM_IPC); }
    // A device buffer of `len` bytes registered on `ep`'s domain; its desc in `desc`.
    struct DevMr {
        explicit DevMr(size_t len) : buf(len) {}
        cuda::Buffer buf;
        Fid<fid_mr> mr;
        void *desc = nullptr;
    };
    std::unique_ptr<DevMr> dev_mr(Endpoint &ep, size_t len) {
        auto m = std::make_unique<DevMr>(len);
        EXPECT_TRUE(m->buf.ok()) << "cuMemAlloc of " << len << " bytes";
        EXPECT_OK(reg_cuda(ep.domain(), m->buf.get(), len, kAllAccess, ep.ep(), m->mr));
        m->desc = fi_mr_desc(m->mr.get());
        return m;
    }
    // One message of `len` bytes from a's `src` to b's `dst` (descriptors optional).
    static void transfer(Pair &p, void *src, void *sdesc, void *dst, void *ddesc, size_t len,
                         bool tagged, uint64_t tag) {
        int sctx = 0, rctx = 0;
        post(
            [&] {
                return tagged ? fi_trecv(p.b->ep(), dst, len, ddesc, p.b2a, tag, 0, &rctx)
                              : fi_recv(p.b->ep(), dst, len, ddesc, p.b2a, &rctx);
            },
            "receive");
        post(
            [&] {
                return tagged ? fi_tsend(p.a->ep(), src, len, sdesc, p.a2b, tag, &sctx)
                              : fi_send(p.a->ep(), src, len, sdesc, p.a2b, &sctx);
            },
            "send");
        wait_comp(p.a->tx(), &sctx, "send of " + std::to_string(len));
        Comp c = wait_comp(p.b->rx(), &rctx, "receive of " + std::to_string(len));
        EXPECT_EQ(len, c.e.len);
    }
};

// Device to device, with descriptors, every size: eager and rendezvous.
TEST_P(HmemTest, DeviceToDeviceEverySize) {
    Pair p = make_pair(opts(), opts());
    const size_t max = hmem_sizes().back();
    auto src = dev_mr(*p.a, max);
    auto dst = dev_mr(*p.b, max);
    const uint64_t ipc_before = ipc_copies();
    size_t large = 0;  // messages that go device to device within a host
    for (bool tagged : {true, false}) {
        for (size_t len : hmem_sizes()) {
            SCOPED_TRACE(std::to_string(len) + (tagged ? " tagged" : " untagged"));
            const uint32_t seed = static_cast<uint32_t>(len) + tagged;
            ASSERT_TRUE(src->buf.put(pattern(len, seed)));
            ASSERT_TRUE(dst->buf.fill(0));
            transfer(p, src->buf.get(), src->desc, dst->buf.get(), dst->desc, len, tagged, len);
            EXPECT_EQ(SIZE_MAX, mismatch(dst->buf.take(len).data(), len, seed));
            large += len >= 64 * 1024;
        }
    }
    // Within a host large messages never touch host memory; between hosts all are staged.
    EXPECT_EQ(single_copy() ? large : 0, ipc_copies() - ipc_before);
}

// Without descriptors the provider asks the driver; host and device mix freely.
TEST_P(HmemTest, MixedHostAndDeviceWithoutDescriptors) {
    Pair p = make_pair(opts(), opts());
    const size_t len = (size_t{1} << 20) + 7;
    cuda::Buffer dev(len);
    ASSERT_TRUE(dev.ok());
    std::vector<uint8_t> host = pattern(len, 41);
    ASSERT_TRUE(dev.fill(0));
    transfer(p, host.data(), nullptr, dev.get(), nullptr, len, true, 1);  // host -> device
    EXPECT_EQ(SIZE_MAX, mismatch(dev.take(len).data(), len, 41));
    ASSERT_TRUE(dev.put(pattern(len, 42)));
    std::fill(host.begin(), host.end(), 0);
    transfer(p, dev.get(), nullptr, host.data(), nullptr, len, false, 0);  // device -> host
    EXPECT_EQ(SIZE_MAX, mismatch(host.data(), len, 42));
    ASSERT_TRUE(dev.put(pattern(100, 43)));  // an inject from device memory
    std::vector<uint8_t> in(100);
    int rctx = 0;
    post([&] { return fi_trecv(p.b->ep(), in.data(), 100, nullptr, p.b2a, 3, 0, &rctx); },
         "fi_trecv");
    post([&] { return fi_tinject(p.a->ep(), dev.get(), 100, p.a2b, 3); }, "fi_tinject");
    wait_comp(p.b->rx(), &rctx, "inject from device memory");
    EXPECT_EQ(SIZE_MAX, mismatch(in.data(), 100, 43));
}

// Messages that arrive before their device receive is posted.
TEST_P(HmemTest, UnexpectedIntoDevice) {
    Pair p = make_pair(opts(), opts());
    const std::vector<size_t> sizes = {16, 70000, size_t{4} << 20};
    std::vector<std::vector<uint8_t>> out;
    std::vector<int> sctx(sizes.size());
    for (size_t i = 0; i < sizes.size(); i++) {
        out.push_back(pattern(sizes[i], 60 + uint32_t(i)));
        post(
            [&] {
                return fi_tsend(p.a->ep(), out[i].data(), sizes[i], nullptr, p.a2b, i, &sctx[i]);
            },
            "fi_tsend");
    }
    wait_unexpected(*p.b, sizes.size());
    for (size_t i = 0; i < sizes.size(); i++) {
        auto dst = dev_mr(*p.b, sizes[i]);
        ASSERT_TRUE(dst->buf.fill(0));
        int rctx = 0;
        post(
            [&] {
                return fi_trecv(p.b->ep(), dst->buf.get(), sizes[i], dst->desc, p.b2a, i, 0, &rctx);
            },
            "fi_trecv");
        Comp c = wait_comp(p.b->rx(), &rctx, "unexpected into device");
        EXPECT_EQ(sizes[i], c.e.len);
        EXPECT_EQ(SIZE_MAX, mismatch(dst->buf.take(sizes[i]).data(), sizes[i], 60 + uint32_t(i)));
    }
    for (size_t i = 0; i < sizes.size(); i++)
        wait_comp(p.a->tx(), &sctx[i], "send");
}

// RMA: writes and reads between device buffers and a device MR, and host buffers too.
TEST_P(HmemTest, RmaOnDeviceMemory) {
    Pair p = make_pair(opts(), opts());
    const size_t len = size_t{8} << 20, off = 4096;
    auto target = dev_mr(*p.b, len + off);
    auto local = dev_mr(*p.a, len);
    ASSERT_TRUE(target->buf.fill(0xEE));
    const uint64_t key = fi_mr_key(target->mr.get());
    for (size_t n : {size_t{8}, size_t{4096}, size_t{65537}, len}) {
        SCOPED_TRACE(n);
        const uint32_t seed = 90 + static_cast<uint32_t>(n);
        ASSERT_TRUE(local->buf.put(pattern(n, seed)));
        int ctx = 0;
        post(
            [&] {
                return fi_write(p.a->ep(), local->buf.get(), n, local->desc, p.a2b, off, key, &ctx);
            },
            "fi_write device -> device MR");
        wait_comp(p.a->tx(), &ctx, "write");
        std::vector<uint8_t> seen = target->buf.take(off + n);
        EXPECT_EQ(SIZE_MAX, mismatch(seen.data() + off, n, seed));
        EXPECT_EQ(0xEE, seen[off - 1]) << "a write ran before its offset";
        ASSERT_TRUE(local->buf.fill(0));
        post(
            [&] {
                return fi_read(p.a->ep(), local->buf.get(), n, local->desc, p.a2b, off, key, &ctx);
            },
            "fi_read device MR -> device");
        wait_comp(p.a->tx(), &ctx, "read");
        EXPECT_EQ(SIZE_MAX, mismatch(local->buf.take(n).data(), n, seed));
        std::vector<uint8_t> host(n);  // and into host memory
        post([&] { return fi_read(p.a->ep(), host.data(), n, nullptr, p.a2b, off, key, &ctx); },
             "fi_read device MR -> host");
        wait_comp(p.a->tx(), &ctx, "read to host");
        EXPECT_EQ(SIZE_MAX, mismatch(host.data(), n, seed));
    }
}

// The CPU computes atomics: device operands and device targets fail honestly.
TEST_P(HmemTest, AtomicsOnDeviceMemoryRefused) {
    Pair p = make_pair(opts(), opts());
    auto target = dev_mr(*p.b, 64);
    cuda::Buffer operand(8);
    ASSERT_TRUE(operand.ok());
    uint64_t one = 1;
    int ctx = 0;
    EXPECT_EQ(-FI_EOPNOTSUPP, fi_atomic(p.a->ep(), operand.get(), 1, nullptr, p.a2b, 0,
                                        fi_mr_key(target->mr.get()), FI_UINT64, FI_SUM, &ctx));
    post(
        [&] {
            return fi_atomic(p.a->ep(), &one, 1, nullptr, p.a2b, 0, fi_mr_key(target->mr.get()),
                             FI_UINT64, FI_SUM, &ctx);
        },
        "fi_atomic on a device MR");
    ErrComp e = wait_err(p.a->tx(), &ctx, "atomic on a device MR");
    EXPECT_EQ(FI_EIO, e.e.err);
}

// Device memory named on an endpoint opened without FI_HMEM is refused, not touched.
TEST_P(HmemTest, DeviceMemoryWithoutHmemRefused) {
    EpOptions host;  // FI_MSG | FI_TAGGED, no FI_HMEM
    Pair p = make_pair(host, host);
    cuda::Buffer dev(4096);
    ASSERT_TRUE(dev.ok());
    Fid<fid_mr> mr;
    ASSERT_OK(reg_cuda(p.a->domain(), dev.get(), dev.size(), kAllAccess, p.a->ep(), mr));
    int ctx = 0;
    EXPECT_EQ(-FI_EINVAL, fi_tsend(p.a->ep(), dev.get(), 64, fi_mr_desc(mr.get()), p.a2b, 1, &ctx));
    EXPECT_EQ(-FI_EINVAL,
              fi_trecv(p.a->ep(), dev.get(), 64, fi_mr_desc(mr.get()), p.a2b, 1, 0, &ctx));
}

// Two processes sharing the one GPU: messages of every size echoed between device
// buffers, then a write into the peer's device MR, checked by the peer on its device.
TEST_P(HmemTest, TwoProcessesShareTheGpu) {
    EndpointPtr ep = make_ep("cxi0", opts());
    proc::Child c = proc::spawn(CXIT_PEER_PATH, "hmem_echo", peer_domain());
    std::vector<uint8_t> theirs = proc::recv_blob(c.fd());
    proc::send_blob(c.fd(), ep->name());
    fi_addr_t peer = ep->insert(theirs);
    const uint64_t key = std::stoull(proc::recv_str(c.fd()));
    const std::vector<size_t> sizes = hmem_sizes();
    auto mine = dev_mr(*ep, sizes.back());
    const uint64_t ipc_before = hw(domain("cxi0", opts()), SOFTNIC_CNTR_HMEM_IPC);
    size_t large = 0;
    for (size_t i = 0; i < sizes.size(); i++) {
        const size_t len = sizes[i];
        SCOPED_TRACE(len);
        ASSERT_TRUE(mine->buf.put(pattern(len, static_cast<uint32_t>(len))));
        proc::expect_str(c.fd(), "R", std::chrono::milliseconds(60000));
        int sctx = 0, rctx = 0;
        post([&] { return fi_tsend(ep->ep(), mine->buf.get(), len, mine->desc, peer, i, &sctx); },
             "fi_tsend");
        wait_comp(ep->tx(), &sctx, "send to the peer's device");
        ASSERT_TRUE(mine->buf.fill(0));
        post(
            [&] { return fi_trecv(ep->ep(), mine->buf.get(), len, mine->desc, peer, i, 0, &rctx); },
            "fi_trecv");
        Comp r = wait_comp(ep->rx(), &rctx, "echo into my device");
        ASSERT_EQ(len, r.e.len);
        ASSERT_EQ(SIZE_MAX, mismatch(mine->buf.take(len).data(), len, static_cast<uint32_t>(len)));
        large += len >= 64 * 1024;
    }
    // The echoes came device to device from the other process's allocation (CUDA IPC).
    EXPECT_EQ(single_copy() ? large : 0,
              hw(domain("cxi0", opts()), SOFTNIC_CNTR_HMEM_IPC) - ipc_before);
    const size_t len = size_t{3} << 20;
    ASSERT_TRUE(mine->buf.put(pattern(len, 123)));
    int ctx = 0;
    post([&] { return fi_write(ep->ep(), mine->buf.get(), len, mine->desc, peer, 0, key, &ctx); },
         "fi_write into the peer's device MR");
    wait_comp(ep->tx(), &ctx, "write");
    proc::send_str(c.fd(), "CHECK " + std::to_string(len) + " 123");
    EXPECT_EQ("OK", proc::recv_str(c.fd()));
    proc::send_str(c.fd(), "BYE");
    EXPECT_EQ(0, c.wait_exit()) << "peer reported a failure (see its stderr)";
}

CXIT_INSTANTIATE_TRANSPORTS(HmemTest);

}  // namespace

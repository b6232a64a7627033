// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Bytes in shared memory come from other processes and are untrusted: garbage written
// into an endpoint's receive ring is dropped, and the endpoint keeps working.
#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_cxi_ext.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>

#include "cxi/core/wire.hpp"  // the packet format under attack
#include "transport/shm/shm_transport.hpp"

namespace {

using softnic::cxi::Pkt;
using softnic::cxi::SmallHdr;
using softnic::cxi::WireHdr;

#define OK(call) ASSERT_EQ(0, (call)) << #call

// One cxi endpoint on cxi0 talking to itself, opened through the real libfabric.
struct SelfEndpoint {
    fi_info *info = nullptr;
    fid_fabric *fabric = nullptr;
    fid_domain *domain = nullptr;
    fid_av *av = nullptr;
    fid_cq *cq = nullptr;
    fid_ep *ep = nullptr;
    fi_addr_t self = FI_ADDR_UNSPEC;
    uint32_t nic = 0, pid = 0;

    void open() {
        fi_info *hints = fi_allocinfo();
        hints->fabric_attr->prov_name = strdup("cxi");
        hints->ep_attr->type = FI_EP_RDM;
        hints->caps = FI_MSG | FI_TAGGED;
        OK(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info));
        fi_freeinfo(hints);
        OK(fi_fabric(info->fabric_attr, &fabric, nullptr));
        OK(fi_domain(fabric, info, &domain, nullptr));
        fi_av_attr aa{};
        aa.type = FI_AV_TABLE;
        OK(fi_av_open(domain, &aa, &av, nullptr));
        fi_cq_attr ca{};
        ca.format = FI_CQ_FORMAT_TAGGED;
        OK(fi_cq_open(domain, &ca, &cq, nullptr));
        OK(fi_endpoint(domain, info, &ep, nullptr));
        OK(fi_ep_bind(ep, &av->fid, 0));
        OK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
        OK(fi_enable(ep));
        uint64_t name = 0;
        size_t len = sizeof(name);
        OK(fi_getname(&ep->fid, &name, &len));
        ASSERT_EQ(1, fi_av_insert(av, &name, 1, &self, 0, nullptr));
        pid = name & 0x1ff;
        nic = (name >> 9) & 0xfffff;
    }
    ~SelfEndpoint() {
        for (fid *f : {ep ? &ep->fid : nullptr, cq ? &cq->fid : nullptr, av ? &av->fid : nullptr,
                       domain ? &domain->fid : nullptr, fabric ? &fabric->fid : nullptr})
            if (f) fi_close(f);
        fi_freeinfo(info);
    }
    // A real message still goes through.
    void roundtrip(uint64_t tag) {
        char out[64] = "still alive", in[64] = {};
        OK(fi_trecv(ep, in, sizeof(in), nullptr, FI_ADDR_UNSPEC, tag, 0, nullptr));
        OK(fi_tsend(ep, out, sizeof(out), nullptr, self, tag, nullptr));
        int done = 0;
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (done < 2 && std::chrono::steady_clock::now() < deadline) {
            fi_cq_tagged_entry e;
            ssize_t n = fi_cq_read(cq, &e, 1);
            if (n == 1)
                done++;
            else if (n == -FI_EAVAIL) {
                fi_cq_err_entry err{};
                fi_cq_readerr(cq, &err, 0);
                FAIL() << "error completion " << err.err;
            }
        }
        ASSERT_EQ(2, done) << "the endpoint stopped working";
        EXPECT_STREQ("still alive", in);
    }
};

// Endpoints without an auth key use the default service's first VNI.
constexpr unsigned kDefaultVni = 1;

std::string ring_of(const SelfEndpoint &e) {
    char name[64];
    std::snprintf(name, sizeof(name), "/softnic-cxi-%05x-%u-%u", e.nic, kDefaultVni, e.pid);
    return name;
}

WireHdr header(Pkt type, const SelfEndpoint &e) {
    WireHdr h{};
    h.type = static_cast<uint8_t>(type);
    h.version = softnic::cxi::kWireVersion;
    h.vni = kDefaultVni;
    h.src_nic = e.nic;
    h.src_pid = static_cast<uint16_t>(e.pid);
    return h;
}

SmallHdr small(const SelfEndpoint &e, uint16_t flags) {
    SmallHdr h{};
    static_cast<softnic::cxi::WirePrefix &>(h) =
        softnic::cxi::wire_prefix(Pkt::kSmall, kDefaultVni, e.pid, e.nic);
    h.flags = flags;
    return h;
}

// The endpoint, and its receive ring opened as a peer on the host would open it.
class HostilePackets : public ::testing::Test {
  protected:
    void SetUp() override {
        e.open();
        if (HasFatalFailure()) return;
        int err = 0;
        link = softnic::transport::shm::ShmLink::open(ring_of(e), err);
        ASSERT_TRUE(link) << "ring name scheme changed? err " << err;
    }
    SelfEndpoint e;
    std::unique_ptr<softnic::transport::shm::ShmLink> link;
};

TEST_F(HostilePackets, GarbageInTheRingIsDroppedAndTheEndpointSurvives) {
    fi_cxi_dom_ops *ops = nullptr;
    OK(fi_open_ops(&e.domain->fid, FI_CXI_DOM_OPS_1, 0, reinterpret_cast<void **>(&ops), nullptr));
    constexpr unsigned kDropped = 2527;  // softnic's dropped-packet counter
    uint64_t dropped0 = 0, dropped1 = 0;
    OK(ops->cntr_read(&e.domain->fid, kDropped, &dropped0, nullptr));
    std::mt19937_64 rng(42);
    std::vector<uint8_t> junk(1024);
    auto send_raw = [&](const void *p, size_t n) {
        iovec iov{const_cast<void *>(p), n};
        while (!link->send(nullptr, 0, &iov, 1, false))
            fi_cq_read(e.cq, nullptr, 0);
    };
    for (int i = 0; i < 200; i++) {  // random bytes of random length
        for (auto &b : junk)
            b = static_cast<uint8_t>(rng());
        send_raw(junk.data(), rng() % junk.size());
    }
    WireHdr h = header(Pkt::kMsg, e);
    h.payload = 1000;  // claims more payload than the packet holds
    send_raw(&h, sizeof(h));
    h = header(Pkt::kMsg, e);
    h.msg_len = 10;
    h.eager_len = 100;  // eager part longer than the message
    send_raw(&h, sizeof(h));
    h = header(Pkt::kMsg, e);
    h.tag = ~0ULL;  // tag wider than 48 bits
    send_raw(&h, sizeof(h));
    h = header(Pkt::kData, e);
    h.cookie = 12345;  // data for no message
    send_raw(&h, sizeof(h));
    h = header(Pkt::kDone, e);
    h.cookie = 0xdeadbeef;  // completion of nothing we sent
    send_raw(&h, sizeof(h));
    h = header(Pkt::kGetReq, e);
    h.cookie = 7;
    h.offset = ~0ULL;  // read request far out of bounds
    send_raw(&h, sizeof(h));
    h = header(Pkt::kMsg, e);
    h.version = 99;
    send_raw(&h, sizeof(h));
    // One-sided packets: an atomic naming no op or datatype, one whose element size
    // disagrees with its datatype, values and data for operations nobody started, and
    // a write whose piece lies past its own length.
    h = header(Pkt::kAtomic, e);
    h.cq_data = 0xffff;
    send_raw(&h, sizeof(h));
    h = header(Pkt::kAtomic, e);
    h.cq_data = FI_SUM | uint64_t(FI_UINT64) << 8;
    h.msg_len = 3;
    send_raw(&h, sizeof(h));
    h = header(Pkt::kAtomicResp, e);
    h.cookie = 99;
    send_raw(&h, sizeof(h));
    h = header(Pkt::kRmaReadResp, e);
    h.cookie = 98;
    send_raw(&h, sizeof(h));
    h = header(Pkt::kRmaWrite, e);
    h.msg_len = 8;
    h.offset = 16;
    send_raw(&h, sizeof(h));
    // Compact small-message headers: a payload longer than the packet, a flag they may
    // not carry (rendezvous), a header cut short of its cq_data, a tag wider than 48 bits.
    SmallHdr sh = small(e, softnic::cxi::kWTagged);
    sh.payload = 100;
    send_raw(&sh, softnic::cxi::kSmallHdrNoData);
    sh = small(e, softnic::cxi::kWTagged | softnic::cxi::kWRdzv);
    send_raw(&sh, softnic::cxi::kSmallHdrNoData);
    sh = small(e, softnic::cxi::kWCqData);
    send_raw(&sh, softnic::cxi::kSmallHdrNoData);
    sh = small(e, softnic::cxi::kWTagged);
    sh.tag = ~0ULL;
    send_raw(&sh, softnic::cxi::kSmallHdrNoData);
    // A compact collective packet claiming more payload than it has, and one cut short.
    softnic::cxi::CollHdr ch{};
    static_cast<softnic::cxi::WirePrefix &>(ch) =
        softnic::cxi::wire_prefix(Pkt::kCollSmall, kDefaultVni, e.pid, e.nic);
    ch.payload = 64;
    send_raw(&ch, sizeof(ch));
    send_raw(&ch, sizeof(ch) - 8);
    e.roundtrip(5);
    OK(ops->cntr_read(&e.domain->fid, kDropped, &dropped1, nullptr));
    EXPECT_GE(dropped1 - dropped0, 18u) << "malformed packets must be counted";
}

// A compact small-message record, as a peer on the host writes it, arrives with its tag,
// remote CQ data and bytes.
TEST_F(HostilePackets, SmallRecordsCarryTagDataAndBytes) {
    char in[16] = {};
    OK(fi_trecv(e.ep, in, sizeof(in), nullptr, FI_ADDR_UNSPEC, 0x77, 0, nullptr));
    SmallHdr h = small(e, softnic::cxi::kWTagged | softnic::cxi::kWCqData);
    h.tag = 0x77;
    h.cq_data = 0xfeedULL;
    h.payload = 6;
    iovec iov{const_cast<char *>("hello"), 6};
    ASSERT_TRUE(link->send(&h, sizeof(h), &iov, 1, false));
    fi_cq_tagged_entry c{};
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    ssize_t n = 0;
    while ((n = fi_cq_read(e.cq, &c, 1)) == -FI_EAGAIN &&
           std::chrono::steady_clock::now() < deadline)
        ;
    ASSERT_EQ(1, n);
    EXPECT_EQ(6u, c.len);
    EXPECT_EQ(0x77u, c.tag);
    EXPECT_EQ(0xfeedu, c.data);
    EXPECT_TRUE(c.flags & FI_REMOTE_CQ_DATA);
    EXPECT_STREQ("hello", in);
}

}  // namespace

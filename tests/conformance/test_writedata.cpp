// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Remote CQ data (spec §6.2, upstream writedata.c): fi_writedata / fi_inject_writedata
// and fi_writemsg(FI_REMOTE_CQ_DATA) report the write on the target's receive CQ with
// the MR's context, address, length and the data. A soft NIC offers it by default with
// provider keys; FI_CXI_ENABLE_WRITEDATA=1 adds upstream's key layout (bit 59, no
// optimized keys) and =0 turns it off: ctest runs this suite in each of the three.
#include <rdma/fi_rma.h>

#include <cstdlib>
#include <cstring>

#include "one_sided.hpp"

using namespace cxit;

namespace {

enum class Mode { kSoft, kUpstreamLayout, kOff };
Mode mode() {
    const char *v = std::getenv("FI_CXI_ENABLE_WRITEDATA");
    if (!v) return Mode::kSoft;
    return std::strcmp(v, "0") == 0 ? Mode::kOff : Mode::kUpstreamLayout;
}

constexpr uint64_t kKeyCqDataBit = 1ULL << 59, kKeyOptimizedBit = 1ULL << 61;

class WriteDataTest : public OneSidedTest {
  protected:
    void SetUp() override {
        if (mode() == Mode::kOff) GTEST_SKIP() << "FI_CXI_ENABLE_WRITEDATA=0";
        OneSidedTest::SetUp();
    }
    // The target's receive CQ entry for a remote write: its context is the MR's.
    fi_cq_tagged_entry remote_entry(Pair &p) {
        Comp c = wait_comp(p.b->rx(), &mr_ctx_, "remote CQ data");
        src_ = c.src;
        return c.e;
    }
    fi_addr_t src_ = FI_ADDR_NOTAVAIL;
    int mr_ctx_ = 0;
    uint64_t expose_with_context(Pair &p, size_t len) {
        target_.assign(len, 0);
        fid_domain *d = domain(peer_domain(), opts());
        EXPECT_OK(
            CXIT_OPEN(mr_, fi_mr_reg(d, target_.data(), len, kRemote, 0, 0, 0, OUT, &mr_ctx_)));
        EXPECT_OK(fi_mr_bind(mr_.get(), &p.b->ep()->fid, 0));
        EXPECT_OK(fi_mr_enable(mr_.get()));
        return fi_mr_key(mr_.get());
    }
};

TEST_P(WriteDataTest, TargetCqReportsTheWriteWithItsSource) {
    EpOptions o = opts();
    o.caps |= FI_SOURCE;
    Pair &p = pair(o);
    uint64_t key = expose_with_context(p, 4096);
    std::vector<uint8_t> out = pattern(1000, 3);
    int ctx = 0;
    post(
        [&] {
            return fi_writedata(p.a->ep(), out.data(), out.size(), nullptr, 0xabcdef, p.a2b, 96,
                                key, &ctx);
        },
        "fi_writedata");
    Comp c = wait_comp(p.a->tx(), &ctx, "writedata");
    EXPECT_EQ(FI_RMA | FI_WRITE, c.e.flags);
    fi_cq_tagged_entry e = remote_entry(p);
    EXPECT_EQ(&mr_ctx_, e.op_context);
    EXPECT_EQ(FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA, e.flags);
    EXPECT_EQ(1000u, e.len);
    EXPECT_EQ(target_.data() + 96, e.buf);
    EXPECT_EQ(0xabcdefu, e.data);
    EXPECT_EQ(p.b2a, src_) << "the source comes from the target's AV";
    EXPECT_EQ(0, std::memcmp(target_.data() + 96, out.data(), out.size()));
}

TEST_P(WriteDataTest, InjectAndMsgFormsCarryTheData) {
    Pair &p = pair(opts());
    uint64_t key = expose_with_context(p, 64);
    uint64_t v = 0x1122334455667788;
    post([&] { return fi_inject_writedata(p.a->ep(), &v, 8, 77, p.a2b, 8, key); },
         "fi_inject_writedata");
    EXPECT_EQ(77u, remote_entry(p).data);
    iovec iov{&v, 8};
    fi_rma_iov rma{16, 8, key};
    int ctx = 0;
    fi_msg_rma msg{&iov, nullptr, 1, p.a2b, &rma, 1, &ctx, 78};
    post([&] { return fi_writemsg(p.a->ep(), &msg, FI_REMOTE_CQ_DATA | FI_COMPLETION); },
         "fi_writemsg");
    wait_comp(p.a->tx(), &ctx, "writemsg with data");
    fi_cq_tagged_entry e = remote_entry(p);
    EXPECT_EQ(78u, e.data);
    EXPECT_EQ(target_.data() + 16, e.buf);
    EXPECT_EQ(v, *reinterpret_cast<uint64_t *>(&target_[16]));
    EXPECT_EQ(v, *reinterpret_cast<uint64_t *>(&target_[8]));
}

TEST_P(WriteDataTest, FailedWritesReportNothingAtTheTarget) {
    Pair &p = pair(opts());
    uint64_t key = expose_with_context(p, 64);
    uint64_t v = 1;
    expect_eio(
        p, [&](void *c) { return fi_writedata(p.a->ep(), &v, 8, nullptr, 9, p.a2b, 60, key, c); },
        "writedata past the end");
    progress_for(std::chrono::milliseconds(50));
    p.b->rx().poll();
    EXPECT_EQ(0u, p.b->rx().ok_count());
}

TEST_P(WriteDataTest, ClientKeysRefuseIt) {
    Pair &p = pair(opts(false));
    uint64_t key = expose(p, 64, kRemote, false, 200);
    uint64_t v = 1;
    EXPECT_RC(-FI_ENOSYS, fi_writedata(p.a->ep(), &v, 8, nullptr, 5, p.a2b, 0, key, nullptr));
}

// By default the first MRs of a domain keep their optimized keys and take CQ data too;
// upstream's layout marks every key with bit 59 and optimizes none.
TEST_P(WriteDataTest, KeyLayoutFollowsTheVariable) {
    Pair &p = pair(opts());
    uint64_t key = expose_with_context(p, 64);
    if (mode() == Mode::kSoft) {
        EXPECT_EQ(kKeyOptimizedBit, key & kKeyOptimizedBit) << std::hex << key;
        EXPECT_EQ(0u, key & kKeyCqDataBit) << std::hex << key;
    } else {
        EXPECT_EQ(0u, key & kKeyOptimizedBit) << std::hex << key;
        EXPECT_EQ(kKeyCqDataBit, key & kKeyCqDataBit) << std::hex << key;
    }
    uint64_t v = 0x77;
    int ctx = 0;
    post([&] { return fi_writedata(p.a->ep(), &v, 8, nullptr, 4, p.a2b, 0, key, &ctx); },
         "fi_writedata");
    wait_comp(p.a->tx(), &ctx, "writedata");
    EXPECT_EQ(4u, remote_entry(p).data);
}

class WriteDataOffTest : public OneSidedTest {
  protected:
    void SetUp() override {
        if (mode() != Mode::kOff) GTEST_SKIP() << "needs FI_CXI_ENABLE_WRITEDATA=0";
        OneSidedTest::SetUp();
    }
};

TEST_P(WriteDataOffTest, RefusedInEveryForm) {
    Pair &p = pair(opts());
    uint64_t key = expose(p, 64);
    uint64_t v = 1;
    EXPECT_RC(-FI_ENOSYS, fi_writedata(p.a->ep(), &v, 8, nullptr, 5, p.a2b, 0, key, nullptr));
    EXPECT_RC(-FI_ENOSYS, fi_inject_writedata(p.a->ep(), &v, 8, 5, p.a2b, 0, key));
    iovec iov{&v, 8};
    fi_rma_iov rma{0, 8, key};
    fi_msg_rma msg{&iov, nullptr, 1, p.a2b, &rma, 1, nullptr, 5};
    EXPECT_RC(-FI_ENOSYS, fi_writemsg(p.a->ep(), &msg, FI_REMOTE_CQ_DATA));
}

}  // namespace

CXIT_INSTANTIATE_TRANSPORTS(WriteDataTest);
CXIT_INSTANTIATE_TRANSPORTS(WriteDataOffTest);

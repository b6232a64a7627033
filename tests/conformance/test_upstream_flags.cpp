// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The flags each *msg call takes, as upstream prov/cxi's code (v2.6.0) takes them: one
// flag at a time, accepted (the operation is carried out) or refused with upstream's
// code. Where fi_cxi(7) and upstream's code differ, the code is what clients meet.
// softnic's deliberate extras (FI_TRIGGER on sends and RMA, FI_REMOTE_CQ_DATA on
// fi_writemsg) are not walked here; their own tests cover them.
#include <rdma/fi_atomic.h>
#include <rdma/fi_cxi_ext.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <functional>
#include <map>
#include <string>

#include "one_sided.hpp"

using namespace cxit;

namespace {

// The flags walked, with names for the failure messages.
const std::map<uint64_t, const char *> kFlags = {
    {FI_INJECT, "FI_INJECT"},
    {FI_COMPLETION, "FI_COMPLETION"},
    {FI_INJECT_COMPLETE, "FI_INJECT_COMPLETE"},
    {FI_TRANSMIT_COMPLETE, "FI_TRANSMIT_COMPLETE"},
    {FI_DELIVERY_COMPLETE, "FI_DELIVERY_COMPLETE"},
    {FI_MATCH_COMPLETE, "FI_MATCH_COMPLETE"},
    {FI_REMOTE_CQ_DATA, "FI_REMOTE_CQ_DATA"},
    {FI_MORE, "FI_MORE"},
    {FI_FENCE, "FI_FENCE"},
    {FI_MULTI_RECV, "FI_MULTI_RECV"},
    {FI_PEEK, "FI_PEEK"},
    {FI_CXI_UNRELIABLE, "FI_CXI_UNRELIABLE"},
    {FI_CXI_WEAK_FENCE, "FI_CXI_WEAK_FENCE"},
    {FI_CXI_HRP, "FI_CXI_HRP"},
    {FI_CXI_PCIE_AMO, "FI_CXI_PCIE_AMO"},
};

constexpr uint64_t kLevels =
    FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | FI_MATCH_COMPLETE;
// Upstream's masks (cxip.h): CXIP_TX_OP_FLAGS, CXIP_RX_OP_FLAGS (+ the ignored
// FI_REMOTE_CQ_DATA and FI_INJECT), CXIP_WRITEMSG_ALLOWED_FLAGS, CXIP_READMSG_ALLOWED_FLAGS.
constexpr uint64_t kTxOp =
    FI_INJECT | FI_COMPLETION | kLevels | FI_REMOTE_CQ_DATA | FI_MORE | FI_FENCE;
constexpr uint64_t kRxOp = FI_COMPLETION | FI_MULTI_RECV | FI_MORE | FI_REMOTE_CQ_DATA | FI_INJECT;
constexpr uint64_t kWriteMsg = FI_INJECT | FI_COMPLETION | FI_MORE | FI_FENCE | kLevels;
constexpr uint64_t kReadMsg = FI_COMPLETION | FI_MORE | FI_FENCE | kLevels;

struct Family {
    const char *name;
    bool tx;                          // completes on a's transmit CQ
    uint64_t accept;                  // taken: returns 0
    std::map<uint64_t, int> special;  // refused with another code than -FI_EBADFLAGS
    std::function<ssize_t(uint64_t flags)> call;
};

class UpstreamFlagsTest : public OneSidedTest {
  protected:
    uint64_t caps() const override {
        return FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_FENCE | FI_MULTI_RECV;
    }

    // Walks every flag of kFlags through `f`; accepted transmit operations are waited for.
    void walk(const Family &f, Pair &p) {
        size_t posted = 0;
        for (const auto &[flag, name] : kFlags) {
            int expect = 0;
            if (auto it = f.special.find(flag); it != f.special.end())
                expect = it->second;
            else if (!(f.accept & flag))
                expect = -FI_EBADFLAGS;
            ssize_t rc = f.call(flag);
            for (int i = 0; rc == -FI_EAGAIN && i < 100000; i++) {
                progress_all();
                rc = f.call(flag);
            }
            EXPECT_RC(expect, rc) << f.name << " with " << name;
            if (rc == 0 && f.tx) posted++;
        }
        if (!f.tx) return;
        // An FI_MORE batch leaves with the next operation: the walk ends on one without.
        post([&] { return f.call(0); }, std::string(f.name) + " without flags");
        posted++;
        wait_until([&] { return p.a->tx().poll(), p.a->tx().ok_count() >= posted; },
                   std::string(f.name) + ": every accepted operation completes");
        EXPECT_EQ(0u, p.a->tx().err_count()) << f.name << ": " << p.a->tx().describe_errors();
        while (p.a->tx().take_any()) {
        }
    }
};

TEST_P(UpstreamFlagsTest, EachMsgCallTakesUpstreamsFlags) {
    EpOptions o = opts();
    Pair &p = pair(o);
    uint64_t key = expose(p, 256);
    static uint64_t src = 1, dst = 0, res = 0, cmp = 0;
    static uint8_t rbuf[4096];
    iovec iov{&src, 8}, riov{rbuf, sizeof(rbuf)}, diov{&dst, 8};
    fi_rma_iov rma{0, 8, key};
    fi_ioc ioc{&src, 1}, resv{&res, 1}, cmpv{&cmp, 1};
    fi_rma_ioc rioc{0, 1, key};
    fi_msg msg{&iov, nullptr, 1, p.a2b, nullptr, 0};
    fi_msg rmsg{&riov, nullptr, 1, FI_ADDR_UNSPEC, nullptr, 0};
    fi_msg_tagged tmsg{&iov, nullptr, 1, p.a2b, 9, 0, nullptr, 0};
    fi_msg_tagged trmsg{&riov, nullptr, 1, FI_ADDR_UNSPEC, 10, 0, nullptr, 0};
    fi_msg_rma wmsg{&iov, nullptr, 1, p.a2b, &rma, 1, nullptr, 0};
    fi_msg_rma rdmsg{&diov, nullptr, 1, p.a2b, &rma, 1, nullptr, 0};
    fi_msg_atomic amsg{&ioc, nullptr, 1, p.a2b, &rioc, 1, FI_UINT64, FI_SUM, nullptr, 0};
    fi_msg_atomic cmsg{&ioc, nullptr, 1, p.a2b, &rioc, 1, FI_UINT64, FI_CSWAP, nullptr, 0};
    fid_ep *a = p.a->ep(), *b = p.b->ep();
    // Receives for every send walked: match- and delivery-complete sends wait for them.
    static uint8_t sink[2][32][64];
    for (int i = 0; i < 32; i++) {
        post([&] { return fi_recv(b, sink[0][i], 64, nullptr, FI_ADDR_UNSPEC, nullptr); },
             "fi_recv");
        post([&] { return fi_trecv(b, sink[1][i], 64, nullptr, FI_ADDR_UNSPEC, 9, 0, nullptr); },
             "fi_trecv");
    }
    const Family families[] = {
        {"fi_sendmsg", true, kTxOp, {}, [&](uint64_t f) { return fi_sendmsg(a, &msg, f); }},
        {"fi_tsendmsg", true, kTxOp, {}, [&](uint64_t f) { return fi_tsendmsg(a, &tmsg, f); }},
        {"fi_recvmsg", false, kRxOp, {}, [&](uint64_t f) { return fi_recvmsg(b, &rmsg, f); }},
        {"fi_trecvmsg",
         false,
         kRxOp | FI_PEEK,
         {},
         [&](uint64_t f) { return fi_trecvmsg(b, &trmsg, f); }},
        {"fi_writemsg",
         true,
         kWriteMsg | FI_CXI_WEAK_FENCE,
         // HRP is a restricted write's, and asks for an optimized key: tried elsewhere.
         {{FI_CXI_HRP, 0}, {FI_REMOTE_CQ_DATA, 0}},
         [&](uint64_t f) { return fi_writemsg(a, &wmsg, f); }},
        {"fi_readmsg", true, kReadMsg, {}, [&](uint64_t f) { return fi_readmsg(a, &rdmsg, f); }},
        {"fi_atomicmsg",
         true,
         kWriteMsg | FI_CXI_UNRELIABLE | FI_CXI_WEAK_FENCE,
         {{FI_CXI_HRP, -FI_EINVAL}},  // HRP needs FI_CXI_UNRELIABLE
         [&](uint64_t f) { return fi_atomicmsg(a, &amsg, f); }},
        {"fi_fetch_atomicmsg",
         true,
         kWriteMsg | FI_CXI_UNRELIABLE | FI_CXI_WEAK_FENCE,
         {{FI_CXI_PCIE_AMO, -FI_EOPNOTSUPP}},  // no PCIe fetch-add remap configured
         [&](uint64_t f) { return fi_fetch_atomicmsg(a, &amsg, &resv, nullptr, 1, f); }},
        {"fi_compare_atomicmsg",
         true,
         kWriteMsg | FI_CXI_UNRELIABLE | FI_CXI_WEAK_FENCE,
         {},
         [&](uint64_t f) {
             return fi_compare_atomicmsg(a, &cmsg, &cmpv, nullptr, 1, &resv, nullptr, 1, f);
         }},
    };
    for (const Family &f : families)
        walk(f, p);
}

CXIT_INSTANTIATE_TRANSPORTS(UpstreamFlagsTest);

}  // namespace

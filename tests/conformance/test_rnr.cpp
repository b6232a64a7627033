// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The receiver-not-ready protocol (FI_PROTO_CXI_RNR, spec §5.10): offered only when
// asked for, 40-bit tags and no inject; a message that finds no receive is refused and
// sent again until one is posted, or fails with FI_EIO / C_RC_ENTRY_NOT_FOUND when the
// endpoint's retry budget is spent. FI_CXI_TRUNC_OK turns truncation into a success.
#include <cstdlib>
#include <cstring>
#include <vector>

#include "fixture.hpp"

using namespace cxit;

namespace {

EpOptions rnr_options(bool counters = false) {
    EpOptions o;
    o.protocol = FI_PROTO_CXI_RNR;
    o.counters = counters;
    return o;
}

void set_retry_us(Endpoint &e, uint64_t us) {
    ASSERT_OK(fi_setopt(&e.ep()->fid, FI_OPT_ENDPOINT, FI_OPT_CXI_SET_RNR_MAX_RETRY_TIME, &us,
                        sizeof(us)));
}

class RnrGetinfoTest : public CxiTest {};

TEST_F(RnrGetinfoTest, OfferedOnlyWhenAskedForByName) {
    InfoPtr plain = get_info(EpOptions{}, "cxi0");
    EXPECT_EQ(uint32_t(FI_PROTO_CXI), plain->ep_attr->protocol) << "the default protocol";
    InfoPtr rnr = get_info(rnr_options(), "cxi0");
    EXPECT_EQ(uint32_t(FI_PROTO_CXI_RNR), rnr->ep_attr->protocol);
    EXPECT_EQ(0x000000AAAAAAAAAAULL, rnr->ep_attr->mem_tag_format) << "40 tag bits";
    EXPECT_EQ(0u, rnr->tx_attr->inject_size);
    EXPECT_EQ(0u, rnr->tx_attr->msg_order & FI_ORDER_SAS) << "no send-after-send order";
    EXPECT_EQ(nullptr, rnr->next) << "with hints, one info per domain";
}

class RnrTest : public TransportTest {};

TEST_P(RnrTest, ASendWaitsForTheReceiveInsteadOfBeingKeptUnexpected) {
    for (size_t len : {size_t(8), size_t(kRdzvSize)}) {
        Pair p = make_pair(rnr_options(), rnr_options());
        set_retry_us(*p.a, 60'000'000);  // long enough for any machine's pause
        std::vector<uint8_t> out = pattern(len, 7), in(len);
        int sctx = 0, rctx = 0;
        post([&] { return fi_tsend(p.a->ep(), out.data(), len, nullptr, p.a2b, 0x42, &sctx); },
             "fi_tsend");
        expect_quiet(p.a->tx(), "a send nobody receives yet");
        post(
            [&] {
                return fi_trecv(p.b->ep(), in.data(), len, nullptr, FI_ADDR_UNSPEC, 0x42, 0, &rctx);
            },
            "fi_trecv");
        Comp r = wait_comp(p.b->rx(), &rctx, "receive");
        wait_comp(p.a->tx(), &sctx, "send, once received");
        EXPECT_EQ(len, r.e.len);
        EXPECT_EQ(out, in) << len << " bytes";
    }
}

TEST_P(RnrTest, SpentRetryBudgetFailsTheSendWithEntryNotFound) {
    Pair p = make_pair(rnr_options(true), rnr_options());
    set_retry_us(*p.a, 2000);
    char out[16] = "nobody";
    int sctx = 0;
    post([&] { return fi_send(p.a->ep(), out, sizeof(out), nullptr, p.a2b, &sctx); }, "fi_send");
    ErrComp e = wait_err(p.a->tx(), &sctx, "send without a receive");
    EXPECT_EQ(FI_EIO, e.e.err);
    EXPECT_EQ(C_RC_ENTRY_NOT_FOUND, e.e.prov_errno);
    EXPECT_EQ(1u, fi_cntr_readerr(p.a->send_cntr()));
    // The refused message was not kept: a receive posted now stays empty.
    char in[16] = {};
    int rctx = 0;
    post([&] { return fi_recv(p.b->ep(), in, sizeof(in), nullptr, FI_ADDR_UNSPEC, &rctx); },
         "fi_recv");
    expect_quiet(p.b->rx(), "a receive after the sender gave up");
    ASSERT_OK(fi_cancel(&p.b->ep()->fid, &rctx));
}

TEST_P(RnrTest, TagsAreFortyBitsAndThereIsNoInject) {
    Pair p = make_pair(rnr_options(), rnr_options());
    char buf[8] = {};
    EXPECT_RC(-FI_EINVAL, fi_tsend(p.a->ep(), buf, 8, nullptr, p.a2b, 1ULL << 40, nullptr));
    EXPECT_RC(-FI_EINVAL,
              fi_trecv(p.b->ep(), buf, 8, nullptr, FI_ADDR_UNSPEC, 1ULL << 40, 0, nullptr));
    EXPECT_RC(-FI_EINVAL, fi_inject(p.a->ep(), buf, 8, p.a2b));
    EXPECT_RC(-FI_EINVAL, fi_tinject(p.a->ep(), buf, 8, p.a2b, 1));
    uint64_t order = FI_ORDER_SAS;
    EXPECT_RC(-FI_EINVAL, fi_set_val(&p.a->ep()->fid, FI_OPT_CXI_SET_MSG_ORDER, &order));
}

TEST_P(RnrTest, AppendRetryAttemptsAreReadable) {
    Pair p = make_pair(rnr_options(), rnr_options());
    uint64_t n = 99;
    size_t len = sizeof(n);
    ASSERT_OK(fi_getopt(&p.a->ep()->fid, FI_OPT_ENDPOINT, FI_OPT_CXI_GET_RNR_APPEND_RETRY_ATTEMPTS,
                        &n, &len));
    EXPECT_EQ(0u, n) << "appending a receive never fails in software";
    EXPECT_EQ(sizeof(uint64_t), len);
}

// Registered twice: with the defaults truncation is FI_ETRUNC; with FI_CXI_TRUNC_OK=1
// (ctest's trunc_ok. tests) a success flagged FI_CXI_TRUNC.
TEST_P(RnrTest, TruncationFollowsTruncOk) {
    const char *env = getenv("FI_CXI_TRUNC_OK");
    const bool ok = env && atoi(env) == 1;
    Pair p = make_pair(rnr_options(), rnr_options());
    char out[32] = "longer than the receive", in[8] = {};
    int sctx = 0, rctx = 0;
    post([&] { return fi_recv(p.b->ep(), in, sizeof(in), nullptr, FI_ADDR_UNSPEC, &rctx); },
         "fi_recv");
    post([&] { return fi_send(p.a->ep(), out, sizeof(out), nullptr, p.a2b, &sctx); }, "fi_send");
    wait_comp(p.a->tx(), &sctx, "send");
    if (ok) {
        Comp r = wait_comp(p.b->rx(), &rctx, "truncated receive");
        EXPECT_EQ(FI_MSG | FI_RECV | FI_CXI_TRUNC, r.e.flags);
        EXPECT_EQ(sizeof(in), r.e.len);
    } else {
        ErrComp e = wait_err(p.b->rx(), &rctx, "truncated receive");
        EXPECT_EQ(FI_ETRUNC, e.e.err);
        EXPECT_EQ(sizeof(out) - sizeof(in), e.e.olen);
    }
    EXPECT_EQ(0, memcmp(in, out, sizeof(in)));
}

CXIT_INSTANTIATE_TRANSPORTS(RnrTest);

}  // namespace

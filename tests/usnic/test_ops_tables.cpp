// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Every operation table of every usnic object is complete: a call usnic does not offer
// (collectives, counters' absence aside) returns an error instead of jumping through NULL.
#include <rdma/fi_collective.h>

#include "fixture.hpp"
#include "ops_tables.hpp"

using namespace usnict;

namespace {

class OpsTablesTest : public UsnicTest {};

TEST_F(OpsTablesTest, NoObjectHasANullOperation) {
    InfoPtr msg = info_of(FI_EP_MSG);
    open_domain(msg.get());
    testutil::OpsWalk w;
    w.fabric(fabric());
    w.domain(domain());
    for (Kind k : {Kind::dgram, Kind::rdm, Kind::msg}) {
        std::unique_ptr<Endpoint> bare = bare_endpoint(k);
        w.ep(std::string(kind_name(k)) + "(bare)", bare->ep.get());
        std::unique_ptr<Endpoint> e = endpoint(k);
        w.ep(kind_name(k), e->ep.get());
        w.cq(e->tx_cq.get());
        if (e->av) w.av(e->av.get());
        if (e->eq) w.eq(e->eq.get());
    }
    Fid<fid_pep> pep;
    ASSERT_OK(USNICT_OPEN(pep, fi_passive_ep(fabric(), msg.get(), OUT, nullptr)));
    w.pep(pep.get());
    fi_wait_attr wa{};
    wa.wait_obj = FI_WAIT_FD;
    Fid<fid_wait> ws;
    ASSERT_OK(USNICT_OPEN(ws, fi_wait_open(fabric(), &wa, OUT)));
    w.wait(ws.get());
    fi_poll_attr pa{};
    Fid<fid_poll> ps;
    ASSERT_OK(USNICT_OPEN(ps, fi_poll_open(domain(), &pa, OUT)));
    w.poll(ps.get());
    static char buf[64];
    Fid<fid_mr> mr;
    ASSERT_OK(
        USNICT_OPEN(mr, fi_mr_reg(domain(), buf, sizeof(buf), FI_SEND, 0, 0, 0, OUT, nullptr)));
    w.mr(mr.get());
    EXPECT_TRUE(w.null_members().empty()) << "NULL operations:" << w.report();
}

TEST_F(OpsTablesTest, CollectiveCallsReturnAnError) {
    InfoPtr info = info_of(FI_EP_RDM);
    open_domain(info.get());
    std::unique_ptr<Endpoint> e = endpoint(Kind::rdm);
    EXPECT_LT(fi_barrier(e->ep.get(), 0, nullptr), 0);
    uint64_t v = 1, r = 0;
    EXPECT_LT(
        fi_allreduce(e->ep.get(), &v, 1, nullptr, &r, nullptr, 0, FI_UINT64, FI_SUM, 0, nullptr),
        0);
}

}  // namespace

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Every operation table of every cxi object is complete (issue: fi_barrier on a cxi
// endpoint used to crash on a NULL collective table). Calls the object does not offer
// reach a function that returns an error; the calls below check a few of them.
#include <rdma/fi_collective.h>

#include "fixture.hpp"
#include "ops_tables.hpp"

using namespace cxit;

namespace {

class OpsTablesTest : public CxiTest {};

TEST_F(OpsTablesTest, NoObjectHasANullOperation) {
    testutil::OpsWalk w;
    w.fabric(fabric());
    fid_domain *d = domain("cxi0");
    w.domain(d);

    RawEp r = raw_ep("cxi0");
    w.ep("ep(disabled)", r.ep.get());
    w.av(r.av.get());
    w.cq(r.cq.get());
    ASSERT_OK(fi_ep_bind(r.ep.get(), &r.av->fid, 0));
    ASSERT_OK(fi_ep_bind(r.ep.get(), &r.cq->fid, FI_TRANSMIT | FI_RECV));
    ASSERT_OK(fi_enable(r.ep.get()));
    w.ep("ep", r.ep.get());

    InfoPtr info = get_info(EpOptions{}, "cxi0");
    info->ep_attr->tx_ctx_cnt = 1;
    info->ep_attr->rx_ctx_cnt = 1;
    Fid<fid_ep> sep, tx, rx;
    ASSERT_OK(CXIT_OPEN(sep, fi_scalable_ep(d, info.get(), OUT, nullptr)));
    w.ep("sep", sep.get());
    ASSERT_OK(CXIT_OPEN(tx, fi_tx_context(sep.get(), 0, nullptr, OUT, nullptr)));
    ASSERT_OK(CXIT_OPEN(rx, fi_rx_context(sep.get(), 0, nullptr, OUT, nullptr)));
    w.ep("tx_ctx", tx.get());
    w.ep("rx_ctx", rx.get());

    fi_cntr_attr ca{};
    ca.events = FI_CNTR_EVENTS_COMP;
    Fid<fid_cntr> cntr;
    ASSERT_OK(CXIT_OPEN(cntr, fi_cntr_open(d, &ca, OUT, nullptr)));
    w.cntr(cntr.get());
    fi_eq_attr ea{};
    Fid<fid_eq> eq;
    ASSERT_OK(CXIT_OPEN(eq, fi_eq_open(fabric(), &ea, OUT, nullptr)));
    w.eq(eq.get());
    static char buf[64];
    Fid<fid_mr> mr;
    ASSERT_OK(CXIT_OPEN(mr, fi_mr_reg(d, buf, sizeof(buf), FI_REMOTE_READ, 0, 7, 0, OUT, nullptr)));
    w.mr(mr.get());
    fi_wait_attr wa{};
    wa.wait_obj = FI_WAIT_FD;
    Fid<fid_wait> ws;
    ASSERT_OK(CXIT_OPEN(ws, fi_wait_open(fabric(), &wa, OUT)));
    w.wait(ws.get());
    fi_poll_attr pa{};
    Fid<fid_poll> ps;
    ASSERT_OK(CXIT_OPEN(ps, fi_poll_open(d, &pa, OUT)));
    w.poll(ps.get());
    EXPECT_TRUE(w.null_members().empty()) << "NULL operations:" << w.report();
}

// What used to crash: the collective calls on an endpoint without collectives.
TEST_F(OpsTablesTest, CollectiveCallsOnAPlainEndpointReturnAnError) {
    EndpointPtr e = make_ep("cxi0");
    uint64_t v = 1, r = 0;
    EXPECT_LT(fi_barrier(e->ep(), 0, nullptr), 0);
    EXPECT_LT(fi_broadcast(e->ep(), &v, 1, nullptr, 0, 0, FI_UINT64, 0, nullptr), 0);
    EXPECT_LT(fi_allreduce(e->ep(), &v, 1, nullptr, &r, nullptr, 0, FI_UINT64, FI_SUM, 0, nullptr),
              0);
    fid_mc *mc = nullptr;
    EXPECT_LT(fi_join_collective(e->ep(), 0, nullptr, 0, &mc, nullptr), 0);
}

}  // namespace

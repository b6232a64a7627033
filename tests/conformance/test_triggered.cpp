// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Triggered operations (spec §7.4, upstream deferred_work.c): fi_control(domain,
// FI_QUEUE_WORK) holds each kind of operation until its counter reaches the threshold,
// FI_CXI_CNTR_WB writes the trigger back one event later, FI_FLUSH_WORK drops what has
// not fired, and the queue's argument rules.
#include <rdma/fi_cxi_ext.h>
#include <rdma/fi_trigger.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "one_sided.hpp"

using namespace cxit;

namespace {

class TriggeredTest : public OneSidedTest {
  protected:
    uint64_t caps() const override { return FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_TRIGGER; }
    void SetUp() override {
        OneSidedTest::SetUp();
        Pair &p = pair(opts());
        dom_ = domain("cxi0", opts());
        trig_ = counter();
        key_ = expose(p, 256);
    }
    Fid<fid_cntr> counter() {
        fi_cntr_attr a{};
        Fid<fid_cntr> c;
        CXIT_CHECK(fi_cntr_open(dom_, &a, c.out(), nullptr));
        return c;
    }
    int queue(fi_deferred_work &w) { return fi_control(&dom_->fid, FI_QUEUE_WORK, &w); }
    fi_deferred_work work(fi_op_type type, uint64_t threshold) {
        fi_deferred_work w{};
        w.threshold = threshold;
        w.triggering_cntr = trig_.get();
        w.op_type = type;
        return w;
    }
    // A write of `v` to offset `off` of the target, as a deferred-work op.
    fi_op_rma write_op(uint64_t &v, uint64_t off, void *ctx) {
        iov_ = {&v, sizeof(v)};
        rma_ = {off, sizeof(v), key_};
        return fi_op_rma{p_.a->ep(), {&iov_, nullptr, 1, p_.a2b, &rma_, 1, ctx, 0}, FI_COMPLETION};
    }
    uint64_t at(uint64_t off) {
        uint64_t v;
        std::memcpy(&v, &target_[off], 8);
        return v;
    }
    // The tx CQ stays empty for a while: nothing fired.
    void expect_quiet() {
        progress_for(std::chrono::milliseconds(30));
        p_.a->tx().poll();
        EXPECT_EQ(0u, p_.a->tx().ok_count()) << "an operation fired early";
    }
    void TearDown() override {
        fi_control(&dom_->fid, FI_FLUSH_WORK, nullptr);
        mr_.reset();
        p_ = Pair{};
        trig_.reset();
        OneSidedTest::TearDown();
    }
    fid_domain *dom_ = nullptr;
    Fid<fid_cntr> trig_;
    uint64_t key_ = 0;
    iovec iov_{};
    fi_rma_iov rma_{};
};

TEST_P(TriggeredTest, WriteWaitsForItsThreshold) {
    uint64_t v = 0x5151;
    int ctx = 0;
    fi_op_rma op = write_op(v, 0, &ctx);
    fi_deferred_work w = work(FI_OP_WRITE, 2);
    w.op.rma = &op;
    ASSERT_OK(queue(w));
    ASSERT_OK(fi_cntr_add(trig_.get(), 1));
    expect_quiet();
    EXPECT_NE(v, at(0));
    ASSERT_OK(fi_cntr_add(trig_.get(), 1));
    Comp c = wait_comp(p_.a->tx(), &ctx, "triggered write");
    EXPECT_EQ(FI_RMA | FI_WRITE, c.e.flags);
    EXPECT_EQ(v, at(0));
}

// The iov entries are taken when the work is queued (upstream issues the command then):
// fabtests' fi_rdm_deferred_wq queues from a function whose iovs are gone when it fires.
TEST_P(TriggeredTest, IovsAreCopiedWhenQueued) {
    uint64_t v = 0xabcdef, got = 0;
    int wctx = 0, rctx = 0;
    auto iov = std::make_unique<iovec>(iovec{&v, sizeof(v)});
    auto rma = std::make_unique<fi_rma_iov>(fi_rma_iov{16, sizeof(v), key_});
    fi_op_rma w_op{
        p_.a->ep(), {iov.get(), nullptr, 1, p_.a2b, rma.get(), 1, &wctx, 0}, FI_COMPLETION};
    fi_deferred_work w = work(FI_OP_WRITE, 1);
    w.op.rma = &w_op;
    ASSERT_OK(queue(w));
    auto riov = std::make_unique<iovec>(iovec{&got, sizeof(got)});
    fi_op_rma r_op{
        p_.a->ep(), {riov.get(), nullptr, 1, p_.a2b, rma.get(), 1, &rctx, 0}, FI_COMPLETION};
    fi_deferred_work r = work(FI_OP_READ, 2);
    r.op.rma = &r_op;
    ASSERT_OK(queue(r));
    // The application's arrays are scribbled over and freed before anything fires.
    *iov = iovec{nullptr, 999};
    *riov = iovec{nullptr, 999};
    *rma = fi_rma_iov{1ULL << 40, 999, 12345};
    iov.reset();
    riov.reset();
    rma.reset();
    ASSERT_OK(fi_cntr_add(trig_.get(), 1));
    wait_comp(p_.a->tx(), &wctx, "triggered write");
    EXPECT_EQ(v, at(16));
    ASSERT_OK(fi_cntr_add(trig_.get(), 1));
    wait_comp(p_.a->tx(), &rctx, "triggered read");
    EXPECT_EQ(v, got);
}

// A deferred atomic takes one element, as the call does: refused when queued, not when it
// fires (where no completion would report it).
TEST_P(TriggeredTest, DeferredAtomicOfSeveralElementsIsRefusedWhenQueued) {
    uint8_t ops[4] = {1, 2, 3, 4};
    fi_ioc ioc{ops, 4};
    fi_rma_ioc rioc{0, 4, key_};
    fi_op_atomic a{
        p_.a->ep(), {&ioc, nullptr, 1, p_.a2b, &rioc, 1, FI_UINT8, FI_BOR, nullptr, 0}, 0};
    fi_deferred_work w = work(FI_OP_ATOMIC, 1);
    w.op.atomic = &a;
    EXPECT_RC(-FI_EINVAL, queue(w));
    ioc.count = rioc.count = 1;
    EXPECT_OK(queue(w));
}

TEST_P(TriggeredTest, MetThresholdFiresAtOnce) {
    ASSERT_OK(fi_cntr_set(trig_.get(), 5));
    uint64_t v = 7;
    int ctx = 0;
    fi_op_rma op = write_op(v, 8, &ctx);
    fi_deferred_work w = work(FI_OP_WRITE, 3);
    w.op.rma = &op;
    ASSERT_OK(queue(w));
    wait_comp(p_.a->tx(), &ctx, "write with its threshold met");
    EXPECT_EQ(7u, at(8));
}

// A chain: the first write's completion counter triggers the read.
TEST_P(TriggeredTest, CompletionCounterTriggersTheNext) {
    Fid<fid_cntr> wc = counter();
    ASSERT_OK(fi_ep_bind(p_.a->ep(), &wc->fid, FI_WRITE));
    uint64_t v = 99, back = 0;
    int c1 = 0, c2 = 0;
    fi_op_rma op1 = write_op(v, 16, &c1);
    fi_deferred_work w1 = work(FI_OP_WRITE, 1);
    w1.op.rma = &op1;
    w1.completion_cntr = wc.get();
    iovec riov{&back, 8};
    fi_rma_iov rrma{16, 8, key_};
    fi_op_rma op2{p_.a->ep(), {&riov, nullptr, 1, p_.a2b, &rrma, 1, &c2, 0}, FI_COMPLETION};
    fi_deferred_work w2 = work(FI_OP_READ, 1);
    w2.triggering_cntr = wc.get();
    w2.op.rma = &op2;
    ASSERT_OK(queue(w2));
    ASSERT_OK(queue(w1));
    expect_quiet();
    ASSERT_OK(fi_cntr_add(trig_.get(), 1));
    wait_comp(p_.a->tx(), &c1, "triggering write");
    wait_comp(p_.a->tx(), &c2, "triggered read");
    EXPECT_EQ(99u, back);
    EXPECT_EQ(1u, fi_cntr_read(wc.get()));
    mr_.reset();  // the MR and the endpoint go before the counter bound to it
    p_ = Pair{};
}

TEST_P(TriggeredTest, SendAndReceive) {
    std::vector<uint8_t> out = pattern(300, 4), in(300);
    int sctx = 0, rctx = 0;
    iovec siov{out.data(), out.size()}, riov{in.data(), in.size()};
    fi_op_tagged recv{p_.b->ep(), {&riov, nullptr, 1, p_.b2a, 9, 0, &rctx, 0}, FI_COMPLETION};
    fi_deferred_work wr = work(FI_OP_TRECV, 0);
    wr.op.tagged = &recv;
    fi_op_tagged send{p_.a->ep(), {&siov, nullptr, 1, p_.a2b, 9, 0, &sctx, 0}, FI_COMPLETION};
    fi_deferred_work ws = work(FI_OP_TSEND, 1);
    ws.op.tagged = &send;
    if (std::string(peer_domain()) == "cxi0")
        ASSERT_OK(queue(wr));  // b shares the domain
    else
        post([&] { return fi_trecvmsg(p_.b->ep(), &recv.msg, FI_COMPLETION); }, "fi_trecvmsg");
    ASSERT_OK(queue(ws));
    expect_quiet();
    ASSERT_OK(fi_cntr_add(trig_.get(), 1));
    wait_comp(p_.a->tx(), &sctx, "triggered send");
    Comp r = wait_comp(p_.b->rx(), &rctx, "receive");
    EXPECT_EQ(300u, r.e.len);
    EXPECT_EQ(in, out);
}

TEST_P(TriggeredTest, AtomicsAndCounterOps) {
    std::memset(target_.data(), 0, 16);
    uint64_t one = 1, old = 0, cmp = 1, swap = 50;
    int c1 = 0, c2 = 0, c3 = 0;
    fi_ioc ioc{&one, 1}, res{&old, 1}, cmpv{&cmp, 1}, swv{&swap, 1};
    fi_rma_ioc rioc{0, 1, key_};
    fi_op_atomic a{
        p_.a->ep(), {&ioc, nullptr, 1, p_.a2b, &rioc, 1, FI_UINT64, FI_SUM, &c1, 0}, FI_COMPLETION};
    fi_op_fetch_atomic f{p_.a->ep(),
                         {&ioc, nullptr, 1, p_.a2b, &rioc, 1, FI_UINT64, FI_SUM, &c2, 0},
                         {&res, nullptr, 1},
                         FI_COMPLETION};
    fi_op_compare_atomic c{p_.a->ep(),
                           {&swv, nullptr, 1, p_.a2b, &rioc, 1, FI_UINT64, FI_CSWAP, &c3, 0},
                           {&res, nullptr, 1},
                           {&cmpv, nullptr, 1},
                           FI_COMPLETION};
    fi_deferred_work w1 = work(FI_OP_ATOMIC, 1), w2 = work(FI_OP_FETCH_ATOMIC, 2),
                     w3 = work(FI_OP_COMPARE_ATOMIC, 3);
    w1.op.atomic = &a;
    w2.op.fetch_atomic = &f;
    w3.op.compare_atomic = &c;
    ASSERT_OK(queue(w3));
    ASSERT_OK(queue(w2));
    ASSERT_OK(queue(w1));
    Fid<fid_cntr> other = counter();
    fi_op_cntr add{other.get(), 5}, set{other.get(), 100};
    fi_deferred_work w4 = work(FI_OP_CNTR_ADD, 1), w5 = work(FI_OP_CNTR_SET, 4);
    w4.op.cntr = &add;
    w5.op.cntr = &set;
    ASSERT_OK(queue(w4));
    ASSERT_OK(queue(w5));
    ASSERT_OK(fi_cntr_add(trig_.get(), 1));
    wait_comp(p_.a->tx(), &c1, "triggered atomic");
    EXPECT_EQ(5u, fi_cntr_read(other.get()));
    ASSERT_OK(fi_cntr_add(trig_.get(), 1));
    wait_comp(p_.a->tx(), &c2, "triggered fetch");
    EXPECT_EQ(1u, old);
    ASSERT_OK(fi_cntr_add(trig_.get(), 1));
    wait_comp(p_.a->tx(), &c3, "triggered compare");
    EXPECT_EQ(2u, old) << "2 is not the comparand 1: no swap";
    EXPECT_EQ(2u, at(0));
    ASSERT_OK(fi_cntr_add(trig_.get(), 1));
    wait_until([&] { return fi_cntr_read(other.get()) == 100; }, "triggered counter set");
}

TEST_P(TriggeredTest, FlushDropsWhatHasNotFired) {
    uint64_t v = 1;
    int ctx = 0;
    fi_op_rma op = write_op(v, 24, &ctx);
    fi_deferred_work w = work(FI_OP_WRITE, 1);
    w.op.rma = &op;
    ASSERT_OK(queue(w));
    EXPECT_OK(fi_control(&dom_->fid, FI_FLUSH_WORK, nullptr));
    ASSERT_OK(fi_cntr_add(trig_.get(), 1));
    expect_quiet();
    EXPECT_EQ(0xEEEEEEEEEEEEEEEEull, at(24));
    w.threshold = 5;
    ASSERT_OK(queue(w));
    EXPECT_OK(fi_control(&dom_->fid, FI_CANCEL_WORK, &w));
    EXPECT_RC(-FI_ENOENT, fi_control(&dom_->fid, FI_CANCEL_WORK, &w));
}

TEST_P(TriggeredTest, CounterWritebackFlag) {
    fi_cxi_cntr_ops *ops = nullptr;
    ASSERT_OK(
        fi_open_ops(&trig_->fid, FI_CXI_COUNTER_OPS, 0, reinterpret_cast<void **>(&ops), nullptr));
    alignas(8) uint64_t wb = 0;
    ASSERT_OK(ops->set_wb_buffer(&trig_->fid, &wb, 8));
    uint64_t v = 3;
    int ctx = 0;
    fi_op_rma op = write_op(v, 32, &ctx);
    op.flags |= FI_CXI_CNTR_WB;
    fi_deferred_work w = work(FI_OP_WRITE, 1);
    w.op.rma = &op;
    ASSERT_OK(queue(w));
    ASSERT_OK(fi_cntr_add(trig_.get(), 1));
    wait_comp(p_.a->tx(), &ctx, "write with FI_CXI_CNTR_WB");
    ASSERT_OK(fi_cntr_add(trig_.get(), 1));
    wait_until([&] { return fi_cxi_cntr_success(wb) == 2; }, "writeback of the trigger");
}

TEST_P(TriggeredTest, QueueArgumentRules) {
    uint64_t v = 0;
    int ctx = 0;
    EXPECT_RC(-FI_EINVAL, fi_control(&dom_->fid, FI_QUEUE_WORK, nullptr));
    fi_op_rma op = write_op(v, 0, &ctx);
    fi_deferred_work w = work(FI_OP_WRITE, 1);
    w.op.rma = &op;
    w.triggering_cntr = nullptr;
    EXPECT_RC(-FI_EINVAL, queue(w)) << "no triggering counter";
    w = work(FI_OP_WRITE, 1);
    w.op.rma = &op;
    op.flags = FI_MULTI_RECV;
    EXPECT_RC(-FI_EINVAL, queue(w)) << "flags that cannot be deferred";
    op.flags = FI_INJECT;
    EXPECT_RC(-FI_EINVAL, queue(w)) << "deferred data is read when it fires: no FI_INJECT";
    op.flags = FI_COMPLETION;
    op.msg.iov_count = 2;
    EXPECT_RC(-FI_EINVAL, queue(w)) << "two iovs";
    iovec iov{&v, 8};
    fi_op_msg send{p_.a->ep(), {&iov, nullptr, 1, p_.a2b, nullptr, 0}, FI_INJECT};
    fi_deferred_work ws = work(FI_OP_SEND, 1);
    ws.op.msg = &send;
    EXPECT_RC(-FI_EINVAL, queue(ws)) << "injected send";
    send.ep = p_.a->ep();
    send.flags = 0;
    fi_deferred_work wr = work(FI_OP_RECV, 1);
    wr.op.msg = &send;
    EXPECT_RC(-FI_EINVAL, queue(wr)) << "receive with a threshold";
    Fid<fid_cntr> other = counter();
    fi_op_cntr add{other.get(), 1};
    fi_deferred_work wc = work(FI_OP_CNTR_ADD, 1);
    wc.op.cntr = &add;
    wc.completion_cntr = other.get();
    EXPECT_RC(-FI_EINVAL, queue(wc)) << "counter op with a completion counter";
    fi_deferred_work wbad = work(static_cast<fi_op_type>(99), 1);
    wbad.op.cntr = &add;
    EXPECT_RC(-FI_EINVAL, queue(wbad)) << "unknown op type";
    fi_cxi_dom_ops *dops = nullptr;
    ASSERT_OK(
        fi_open_ops(&dom_->fid, FI_CXI_DOM_OPS_5, 0, reinterpret_cast<void **>(&dops), nullptr));
    size_t depth = 0;
    EXPECT_OK(dops->get_dwq_depth(&dom_->fid, &depth));
    EXPECT_GT(depth, 0u);
}

// A triggered operation counts its completion on its completion counter, instead of
// the counter bound to its endpoint (the hardware command names one counter).
TEST_P(TriggeredTest, CompletionCounterReplacesTheEndpointCounter) {
    Fid<fid_cntr> bound = counter(), comp = counter();
    ASSERT_OK(fi_ep_bind(p_.a->ep(), &bound->fid, FI_WRITE));
    uint64_t v = 5;
    int ctx = 0;
    fi_op_rma op = write_op(v, 40, &ctx);
    fi_deferred_work w = work(FI_OP_WRITE, 1);
    w.op.rma = &op;
    w.completion_cntr = comp.get();
    ASSERT_OK(queue(w));
    ASSERT_OK(fi_cntr_add(trig_.get(), 1));
    wait_comp(p_.a->tx(), &ctx, "triggered write");
    wait_until([&] { return fi_cntr_read(comp.get()) == 1; }, "completion counter");
    EXPECT_EQ(0u, fi_cntr_read(bound.get())) << "the endpoint's counter counted it too";
    write(p_, pattern(8, 1), 48, key_);  // the application's own write
    EXPECT_EQ(1u, fi_cntr_read(bound.get()));
    EXPECT_EQ(1u, fi_cntr_read(comp.get()));
    EXPECT_EQ(5u, at(40));
    mr_.reset();  // the MR and the endpoint go before the counter bound to it
    p_ = Pair{};
}

// The FI_TRIGGER flag (fi_trigger(3), fabtests' fi_rdm_rma_trigger): an alias endpoint
// whose transmit flags carry FI_TRIGGER holds each write until the threshold of its
// fi_triggered_context; it completes on the endpoint's CQ and counter with that context.
TEST_P(TriggeredTest, TriggerFlagOnAliasHoldsTheWrite) {
    Fid<fid_cntr> bound = counter();
    ASSERT_OK(fi_ep_bind(p_.a->ep(), &bound->fid, FI_WRITE));
    Fid<fid_ep> alias;
    ASSERT_OK(fi_ep_alias(p_.a->ep(), alias.out(), FI_TRANSMIT | FI_TRIGGER));
    fi_triggered_context tc{};
    tc.event_type = FI_TRIGGER_THRESHOLD;
    tc.trigger.threshold.cntr = trig_.get();
    tc.trigger.threshold.threshold = 2;
    uint64_t v = 0x1234;
    ASSERT_OK(fi_write(alias.get(), &v, 8, nullptr, p_.a2b, 64, key_, &tc));
    v = 0;  // the queue copied the iov, not the data: the value at firing time goes
    ASSERT_OK(fi_cntr_add(trig_.get(), 1));
    expect_quiet();
    v = 0x5678;
    ASSERT_OK(fi_cntr_add(trig_.get(), 1));
    wait_comp(p_.a->tx(), &tc, "write posted with FI_TRIGGER");
    EXPECT_EQ(0x5678u, at(64));
    EXPECT_EQ(1u, fi_cntr_read(bound.get())) << "the endpoint's own counter counts it";
    alias.reset();
    mr_.reset();
    p_ = Pair{};
}

TEST_P(TriggeredTest, TriggerFlagOnSendAndItsRules) {
    fi_triggered_context tc{};
    tc.event_type = FI_TRIGGER_THRESHOLD;
    tc.trigger.threshold.cntr = trig_.get();
    tc.trigger.threshold.threshold = 1;
    std::vector<uint8_t> out = pattern(100, 8), in(100);
    iovec iov{out.data(), out.size()};
    fi_msg_tagged m{&iov, nullptr, 1, p_.a2b, 3, 0, &tc, 0};
    ASSERT_OK(fi_tsendmsg(p_.a->ep(), &m, FI_TRIGGER | FI_COMPLETION));
    int rctx = 0;
    post([&] { return fi_trecv(p_.b->ep(), in.data(), 100, nullptr, FI_ADDR_UNSPEC, 3, 0, &rctx); },
         "fi_trecv");
    expect_quiet();
    ASSERT_OK(fi_cntr_add(trig_.get(), 1));
    wait_comp(p_.a->tx(), &tc, "tagged send posted with FI_TRIGGER");
    wait_comp(p_.b->rx(), &rctx, "its receive");
    EXPECT_EQ(out, in);
    m.context = nullptr;
    EXPECT_RC(-FI_EINVAL, fi_tsendmsg(p_.a->ep(), &m, FI_TRIGGER)) << "no triggered context";
    fi_triggered_context other{};
    other.event_type = FI_TRIGGER_XPU;
    m.context = &other;
    EXPECT_RC(-FI_ENOSYS, fi_tsendmsg(p_.a->ep(), &m, FI_TRIGGER)) << "only thresholds";
    m.context = &tc;
    EXPECT_RC(-FI_EINVAL, fi_tsendmsg(p_.a->ep(), &m, FI_TRIGGER | FI_INJECT));
}

// FI_CXI_ENABLE_TRIG_OP_LIMIT=1 (its own ctest group, one transport: the budget is
// the NIC's, shared by every process): get_dwq_depth operations fit, the next is
// -FI_ENOSPC, FI_CXI_CNTR_WB takes two slots, cancel and flush give slots back.
class TriggeredLimitTest : public TriggeredTest {};

TEST_P(TriggeredLimitTest, BudgetRefusesTheNextOne) {
    const char *on = std::getenv("FI_CXI_ENABLE_TRIG_OP_LIMIT");
    if (!on || std::string(on) != "1") GTEST_SKIP() << "needs FI_CXI_ENABLE_TRIG_OP_LIMIT=1";
    fi_cxi_dom_ops *dops = nullptr;
    ASSERT_OK(
        fi_open_ops(&dom_->fid, FI_CXI_DOM_OPS_5, 0, reinterpret_cast<void **>(&dops), nullptr));
    size_t depth = 0;
    ASSERT_OK(dops->get_dwq_depth(&dom_->fid, &depth));
    uint64_t v = 1;
    int ctx = 0;
    fi_op_rma op = write_op(v, 0, &ctx);
    std::vector<fi_deferred_work> ws(depth + 1, work(FI_OP_WRITE, 1000));
    for (auto &w : ws)
        w.op.rma = &op;
    for (size_t i = 0; i < depth; i++)
        ASSERT_OK(queue(ws[i])) << "operation " << i << " of " << depth;
    EXPECT_RC(-FI_ENOSPC, queue(ws[depth]));
    ASSERT_OK(fi_control(&dom_->fid, FI_CANCEL_WORK, &ws[0]));
    EXPECT_OK(queue(ws[depth])) << "a cancelled operation gives its slot back";
    ASSERT_OK(fi_control(&dom_->fid, FI_FLUSH_WORK, nullptr));
    for (size_t i = 0; i + 1 < depth; i++)
        ASSERT_OK(queue(ws[i]));
    fi_op_rma wb = op;
    wb.flags |= FI_CXI_CNTR_WB;
    ws[depth].op.rma = &wb;
    EXPECT_RC(-FI_ENOSPC, queue(ws[depth])) << "FI_CXI_CNTR_WB needs two slots";
    ws[depth].op.rma = &op;
    EXPECT_OK(queue(ws[depth]));
    ASSERT_OK(fi_control(&dom_->fid, FI_FLUSH_WORK, nullptr));
    // Fired operations give their slots back too.
    fi_deferred_work now = work(FI_OP_WRITE, 0);
    now.op.rma = &op;
    for (size_t i = 0; i < depth + 8; i++) {
        ASSERT_OK(queue(now)) << "operation " << i;
        wait_comp(p_.a->tx(), &ctx, "triggered write");
    }
}

}  // namespace

CXIT_INSTANTIATE_TRANSPORTS(TriggeredTest);
CXIT_INSTANTIATE_ONE(TriggeredLimitTest, shm, "cxi0");

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "cxi/obj/deferred.hpp"

#include <rdma/fi_cxi_ext.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <fcntl.h>

#include <algorithm>

#include "common/log.hpp"
#include "cxi/obj/cntr.hpp"
#include "cxi/obj/domain.hpp"
#include "cxi/obj/endpoint.hpp"

namespace softnic::cxi {
namespace {

// The flags a queued operation may carry: those its *msg call takes (it is issued through
// that call when it fires) plus FI_CXI_CNTR_WB; upstream passes them all on unmasked.
// Checking here keeps a refusal from surfacing at fire time, where no completion reports it.
// FI_INJECT is not taken (upstream takes it for RMA and atomics, copying the data when
// queued; here the data is read when the operation fires): fi_cxi(7) says so.
uint64_t queued_flags(fi_op_type type) {
    constexpr uint64_t kLevels =
        FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | FI_MATCH_COMPLETE;
    constexpr uint64_t kTx = FI_COMPLETION | FI_MORE | FI_FENCE | kLevels | FI_CXI_CNTR_WB;
    switch (type) {
        case FI_OP_RECV:
        case FI_OP_TRECV:
            return FI_COMPLETION | FI_MORE | FI_MULTI_RECV | FI_CXI_CNTR_WB;
        case FI_OP_SEND:
        case FI_OP_TSEND:
            return kTx | FI_REMOTE_CQ_DATA;
        case FI_OP_READ:
            return kTx;
        case FI_OP_WRITE:
            return kTx | FI_REMOTE_CQ_DATA | FI_CXI_HRP | FI_CXI_WEAK_FENCE;
        default:  // the atomics
            return kTx | FI_CXI_UNRELIABLE | FI_CXI_WEAK_FENCE | FI_CXI_HRP;
    }
}

template <class Op>
fid_ep *ep_flags(const Op *op, uint64_t &flags, size_t &iov_count) {
    flags = op->flags;
    iov_count = op->msg.iov_count;
    return op->ep;
}

// The endpoint and flags of a queued data operation, or null for counter operations.
fid_ep *ep_of(const fi_deferred_work &w, uint64_t &flags, size_t &iov_count) {
    switch (w.op_type) {
        case FI_OP_RECV:
        case FI_OP_SEND:
            return ep_flags(w.op.msg, flags, iov_count);
        case FI_OP_TRECV:
        case FI_OP_TSEND:
            return ep_flags(w.op.tagged, flags, iov_count);
        case FI_OP_READ:
        case FI_OP_WRITE:
            return ep_flags(w.op.rma, flags, iov_count);
        case FI_OP_ATOMIC:
            return ep_flags(w.op.atomic, flags, iov_count);
        case FI_OP_FETCH_ATOMIC:
            return ep_flags(w.op.fetch_atomic, flags, iov_count);
        case FI_OP_COMPARE_ATOMIC:
            return ep_flags(w.op.compare_atomic, flags, iov_count);
        default:
            return nullptr;
    }
}

// The serial an engine has of its own (FI_THREAD_COMPLETION), for the endpoint the
// operation targets; null for counter operations and every other threading level.
const DomainSerial *owner_of_ep(fid_ep *ep) {
    EpView *v = ep ? owner_of<EpView>(ep) : nullptr;
    return v && v->engine ? v->engine->own_serial() : nullptr;
}
const DomainSerial *owner_of_op(const fi_deferred_work &w) {
    uint64_t flags = 0;
    size_t iov_count = 0;
    return owner_of_ep(ep_of(w, flags, iov_count));
}

// Copies a data operation, dropping the flags only the queue reads; true when it asked
// for FI_CXI_CNTR_WB.
template <class Op>
bool copy_op(Op &dst, const Op *src) {
    dst = *src;
    bool wb = dst.flags & FI_CXI_CNTR_WB;
    dst.flags &= ~(FI_MORE | FI_CXI_CNTR_WB);
    return wb;
}

bool supported(int t) {
    return t == FI_OP_RECV || t == FI_OP_SEND || t == FI_OP_TRECV || t == FI_OP_TSEND ||
           t == FI_OP_READ || t == FI_OP_WRITE || t == FI_OP_ATOMIC || t == FI_OP_FETCH_ATOMIC ||
           t == FI_OP_COMPARE_ATOMIC || t == FI_OP_CNTR_SET || t == FI_OP_CNTR_ADD;
}

thread_local TriggeredIssue t_issue;

// Marks the public call issued on this thread as the triggered operation `it`.
class IssueScope {
  public:
    explicit IssueScope(Cntr *c) {
        t_issue = TriggeredIssue{true, c};
        g_triggered_issuing.fetch_add(1, std::memory_order_relaxed);
    }
    ~IssueScope() {
        t_issue = TriggeredIssue{};
        g_triggered_issuing.fetch_sub(1, std::memory_order_relaxed);
    }
};

}  // namespace

std::atomic<int> g_triggered_issuing{0};

TriggeredIssue take_triggered_issue_slow() {
    TriggeredIssue t = t_issue;
    t_issue = TriggeredIssue{};
    return t;
}

DeferredQueue::~DeferredQueue() {
    give_slots(items_.size());
    if (budget_) sem_close(budget_);
}

void DeferredQueue::limit(const std::string &name, unsigned depth) {
    sem_t *s = sem_open(name.c_str(), O_CREAT, 0600, depth);
    if (s == SEM_FAILED) {
        SN_WARN(FI_LOG_DOMAIN, "no triggered-op budget %s: %s; not enforced\n", name.c_str(),
                strerror(errno));
        return;
    }
    budget_ = s;
}

bool DeferredQueue::take_slots(unsigned n) {
    if (!budget_) return true;
    for (unsigned i = 0; i < n; i++) {
        if (sem_trywait(budget_) == 0) continue;
        give_slots(i);
        return false;
    }
    return true;
}

void DeferredQueue::give_slots(size_t n) {
    if (!budget_) return;
    for (size_t i = 0; i < n; i++)
        sem_post(budget_);
}

int DeferredQueue::check(const fi_deferred_work &w, const void *domain) {
    Counter *trig = counter_of(w.triggering_cntr);
    if (!trig || &trig->domain() != domain)
        SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "no triggering counter of this domain\n");
    if (!supported(raw_enum(w.op_type)) || !w.op.msg)
        SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "operation type %d cannot be deferred\n",
                  raw_enum(w.op_type));
    if (w.op_type == FI_OP_CNTR_SET || w.op_type == FI_OP_CNTR_ADD) {
        if (w.completion_cntr)
            SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "counter operations take no completion counter\n");
        if (!counter_of(w.op.cntr->cntr))
            SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "no target counter\n");
        return 0;
    }
    if (w.completion_cntr && !counter_of(w.completion_cntr))
        SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "completion counter is not a counter\n");
    uint64_t flags = 0;
    size_t iov_count = 0;
    fid_ep *ep = ep_of(w, flags, iov_count);
    EpView *v = ep ? owner_of<EpView>(ep) : nullptr;
    if (!v || !v->ep || &v->ep->domain() != domain)
        SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "no endpoint of this domain\n");
    if (iov_count > 1) SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "deferred work takes one iov\n");
    bool recv = w.op_type == FI_OP_RECV || w.op_type == FI_OP_TRECV;
    if (recv && w.threshold)
        SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "triggered receives need threshold 0\n");
    if ((w.op_type == FI_OP_SEND || w.op_type == FI_OP_TSEND) && (flags & FI_INJECT))
        SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "triggered sends cannot be injected\n");
    if (flags & ~queued_flags(w.op_type))
        SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "flags 0x%lx cannot be deferred\n", flags);
    return 0;
}

namespace {

// Keeps the first entry of an application's array in `slot` and marks the pointer as
// present; point_at re-points it to the slot of the copy that fires.
template <class P, class T>
void keep(P &p, size_t n, T &slot) {
    if (!p || !n) return;
    slot = *p;
    p = &slot;
}
template <class P, class T>
void point_at(P &p, T &slot) {
    if (p) p = &slot;
}

}  // namespace

int DeferredQueue::keep_iovs(Item &it) {
    auto &o = it.op;
    Copies &c = it.c;
    auto one_rma = [](size_t n, const void *p) { return n == 1 && p; };
    switch (it.type) {
        case FI_OP_RECV:
        case FI_OP_SEND:
            keep(o.msg.msg.msg_iov, o.msg.msg.iov_count, c.iov);
            keep(o.msg.msg.desc, o.msg.msg.iov_count, c.desc[0]);
            return 0;
        case FI_OP_TRECV:
        case FI_OP_TSEND:
            keep(o.tagged.msg.msg_iov, o.tagged.msg.iov_count, c.iov);
            keep(o.tagged.msg.desc, o.tagged.msg.iov_count, c.desc[0]);
            return 0;
        case FI_OP_READ:
        case FI_OP_WRITE:
            if (!one_rma(o.rma.msg.rma_iov_count, o.rma.msg.rma_iov)) break;
            keep(o.rma.msg.msg_iov, o.rma.msg.iov_count, c.iov);
            keep(o.rma.msg.desc, o.rma.msg.iov_count, c.desc[0]);
            keep(o.rma.msg.rma_iov, 1, c.rma_iov);
            return 0;
        case FI_OP_ATOMIC:
        case FI_OP_FETCH_ATOMIC:
        case FI_OP_COMPARE_ATOMIC: {
            // The three atomic ops share fi_msg_atomic as their first member after ep.
            fi_msg_atomic &m = o.atomic.msg;
            if (!one_rma(m.rma_iov_count, m.rma_iov)) break;
            keep(m.msg_iov, m.iov_count, c.ioc);
            keep(m.desc, m.iov_count, c.desc[0]);
            keep(m.rma_iov, 1, c.rma_ioc);
            // One element each, as the call itself demands (refused here, as upstream
            // refuses it when queued, rather than when it fires with nobody to tell).
            bool ok = c.rma_ioc.count == 1 &&
                      (m.op == FI_ATOMIC_READ || (m.iov_count == 1 && c.ioc.count == 1));
            if (it.type != FI_OP_ATOMIC) {
                const fi_msg_fetch &f = o.fetch.fetch;
                ok = ok && f.msg_iov && f.iov_count == 1 && f.msg_iov->count == 1;
                keep(o.fetch.fetch.msg_iov, f.iov_count, c.result);
                keep(o.fetch.fetch.desc, f.iov_count, c.desc[1]);
            }
            if (it.type == FI_OP_COMPARE_ATOMIC) {
                const fi_msg_compare &k = o.compare.compare;
                ok = ok && k.msg_iov && k.iov_count == 1 && k.msg_iov->count == 1;
                keep(o.compare.compare.msg_iov, k.iov_count, c.compare);
                keep(o.compare.compare.desc, k.iov_count, c.desc[2]);
            }
            if (ok) return 0;
            SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "a deferred atomic takes one element\n");
        }
        default:
            return 0;
    }
    SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "a deferred one-sided operation takes one rma_iov\n");
}

void DeferredQueue::point_at_copies(Item &it) {
    auto &o = it.op;
    Copies &c = it.c;
    switch (it.type) {
        case FI_OP_RECV:
        case FI_OP_SEND:
            point_at(o.msg.msg.msg_iov, c.iov);
            point_at(o.msg.msg.desc, c.desc[0]);
            return;
        case FI_OP_TRECV:
        case FI_OP_TSEND:
            point_at(o.tagged.msg.msg_iov, c.iov);
            point_at(o.tagged.msg.desc, c.desc[0]);
            return;
        case FI_OP_READ:
        case FI_OP_WRITE:
            point_at(o.rma.msg.msg_iov, c.iov);
            point_at(o.rma.msg.desc, c.desc[0]);
            point_at(o.rma.msg.rma_iov, c.rma_iov);
            return;
        case FI_OP_ATOMIC:
        case FI_OP_FETCH_ATOMIC:
        case FI_OP_COMPARE_ATOMIC:
            point_at(o.atomic.msg.msg_iov, c.ioc);
            point_at(o.atomic.msg.desc, c.desc[0]);
            point_at(o.atomic.msg.rma_iov, c.rma_ioc);
            if (it.type == FI_OP_ATOMIC) return;
            point_at(o.fetch.fetch.msg_iov, c.result);
            point_at(o.fetch.fetch.desc, c.desc[1]);
            if (it.type == FI_OP_FETCH_ATOMIC) return;
            point_at(o.compare.compare.msg_iov, c.compare);
            point_at(o.compare.compare.desc, c.desc[2]);
            return;
        default:
            return;
    }
}

int DeferredQueue::queue(fi_deferred_work *w, const void *domain) {
    if (!w) SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "NULL deferred work\n");
    if (int ret = check(*w, domain)) return ret;
    Item it{};
    it.work = w;
    it.type = w->op_type;
    it.trigger = counter_of(w->triggering_cntr);
    it.threshold = w->threshold;
    it.completion = counter_of(w->completion_cntr);
    it.owner = owner_of_op(*w);
    bool wb = false;
    switch (w->op_type) {
        case FI_OP_RECV:
        case FI_OP_SEND:
            wb = copy_op(it.op.msg, w->op.msg);
            break;
        case FI_OP_TRECV:
        case FI_OP_TSEND:
            wb = copy_op(it.op.tagged, w->op.tagged);
            break;
        case FI_OP_READ:
        case FI_OP_WRITE:
            wb = copy_op(it.op.rma, w->op.rma);
            break;
        case FI_OP_ATOMIC:
            wb = copy_op(it.op.atomic, w->op.atomic);
            break;
        case FI_OP_FETCH_ATOMIC:
            wb = copy_op(it.op.fetch, w->op.fetch_atomic);
            break;
        case FI_OP_COMPARE_ATOMIC:
            wb = copy_op(it.op.compare, w->op.compare_atomic);
            break;
        default:
            it.op.cntr = *w->op.cntr;
            break;
    }
    if (int ret = keep_iovs(it)) return ret;
    if (!take_slots(wb ? 2 : 1))
        SN_REJECT(-FI_ENOSPC, FI_LOG_DOMAIN, "triggered-op budget exhausted\n");
    push(it, wb);
    return 0;
}

void DeferredQueue::push(const Item &it, bool wb) {
    {
        std::lock_guard g(lock_);
        items_.push_back(it);
        if (wb) {  // a second action: write the trigger's word back one event later
            Item back = it;
            back.writeback = true;
            back.threshold = it.threshold + 1;
            items_.push_back(back);
        }
    }
    it.trigger->watch_triggers();
    wake();
    run(nullptr);  // a threshold already met fires at once (its engine's, if serialised alone)
}

int DeferredQueue::queue_flagged(const FlaggedOp &op, const void *domain) {
    auto *tc = static_cast<const fi_triggered_context *>(op.context);
    if (!tc) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "FI_TRIGGER needs a fi_triggered_context\n");
    if (tc->event_type != FI_TRIGGER_THRESHOLD)
        SN_REJECT(-FI_ENOSYS, FI_LOG_EP_DATA, "trigger event %d: only thresholds\n",
                  tc->event_type);
    Counter *trig = counter_of(tc->trigger.threshold.cntr);
    if (!trig || &trig->domain() != domain)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "no triggering counter of this domain\n");
    Item it{};
    it.type = op.type;
    it.trigger = trig;
    it.threshold = tc->trigger.threshold.threshold;
    it.flagged = true;
    it.owner = owner_of_ep(op.ep);
    it.c.iov = op.iov;
    it.c.rma_iov = op.rma;
    if (op.flags & FI_INJECT)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "a triggered operation cannot be injected\n");
    const uint64_t flags = op.flags & ~FI_TRIGGER;
    // The iovs are the copies (point_at_copies re-points them when it fires).
    if (op.type == FI_OP_SEND)
        it.op.msg = fi_op_msg{op.ep, {&it.c.iov, nullptr, 1, op.addr, op.context, op.data}, flags};
    else if (op.type == FI_OP_TSEND)
        it.op.tagged = fi_op_tagged{
            op.ep, {&it.c.iov, nullptr, 1, op.addr, op.tag, 0, op.context, op.data}, flags};
    else
        it.op.rma = fi_op_rma{
            op.ep, {&it.c.iov, nullptr, 1, op.addr, &it.c.rma_iov, 1, op.context, op.data}, flags};
    if (!take_slots(1)) SN_REJECT(-FI_ENOSPC, FI_LOG_DOMAIN, "triggered-op budget exhausted\n");
    push(it, false);
    return 0;
}

int DeferredQueue::cancel(fi_deferred_work *w) {
    if (!w) SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "NULL deferred work\n");
    std::lock_guard g(lock_);
    size_t n = std::erase_if(items_, [w](const Item &it) { return it.work == w; });
    give_slots(n);
    return n ? 0 : -FI_ENOENT;
}

// Drops everything that has not fired; no completions.
int DeferredQueue::flush() {
    std::lock_guard g(lock_);
    give_slots(items_.size());
    items_.clear();
    return 0;
}

void DeferredQueue::run(const DomainSerial *mine) {
    std::unique_lock r(running_, std::try_to_lock);
    if (!r.owns_lock()) return;  // another thread fires; the wake stays set for it
    ready_.store(false, std::memory_order_relaxed);
    for (;;) {
        Item it;
        {
            std::lock_guard g(lock_);
            bool others = false;  // due, but for another engine's thread
            auto due = std::find_if(items_.begin(), items_.end(), [&](const Item &i) {
                if (i.trigger->current() < i.threshold) return false;
                if (i.owner && i.owner != mine) others = true;
                return !i.owner || i.owner == mine;
            });
            if (due == items_.end()) {
                if (others) wake();  // their engines fire them when next progressed
                return;
            }
            it = *due;
            items_.erase(due);
        }
        ssize_t rc = fire(it);
        if (rc == -FI_EAGAIN) {  // the endpoint is full: try again at the next progress
            std::lock_guard g(lock_);
            items_.push_front(it);
            wake();
            return;
        }
        give_slots(1);  // the slot is free once the operation has been issued
        if (rc) SN_WARN(FI_LOG_DOMAIN, "triggered operation failed: %zd\n", rc);
    }
}

// A flagged operation completes as the plain call would: no IssueScope.
ssize_t DeferredQueue::fire_flagged(Item &it) {
    auto &o = it.op;
    // On the offload helper, which holds the serialised domain (common/serial.hpp): the
    // tables with locks, whose spinlocks the application leaves free. The serialised ones
    // would count the helper as the application, racing with an application that comes
    // back meanwhile. Reads and writes choose in PidEngine::send.
    auto helper = [](fid_ep *ep) { return owner_of<EpView>(ep)->engine->held_by_helper(); };
    switch (it.type) {
        case FI_OP_SEND:
            if (o.msg.ep->msg == &msg_serial_ops && helper(o.msg.ep))
                return msg_ops.sendmsg(o.msg.ep, &o.msg.msg, o.msg.flags);
            return fi_sendmsg(o.msg.ep, &o.msg.msg, o.msg.flags);
        case FI_OP_TSEND:
            if (o.tagged.ep->tagged == &tagged_serial_ops && helper(o.tagged.ep))
                return tagged_ops.sendmsg(o.tagged.ep, &o.tagged.msg, o.tagged.flags);
            return fi_tsendmsg(o.tagged.ep, &o.tagged.msg, o.tagged.flags);
        case FI_OP_READ:
            return fi_readmsg(o.rma.ep, &o.rma.msg, o.rma.flags);
        default:
            return fi_writemsg(o.rma.ep, &o.rma.msg, o.rma.flags);
    }
}

// Issues the operation exactly as the application's own call would.
ssize_t DeferredQueue::fire(Item &it) {
    if (it.writeback) {
        it.trigger->write_back();
        return 0;
    }
    auto &o = it.op;
    point_at_copies(it);
    if (it.flagged) return fire_flagged(it);  // no completion counter override
    IssueScope scope(it.completion);
    switch (it.type) {
        case FI_OP_RECV:
            return fi_recvmsg(o.msg.ep, &o.msg.msg, o.msg.flags);
        case FI_OP_SEND:
            return fi_sendmsg(o.msg.ep, &o.msg.msg, o.msg.flags);
        case FI_OP_TRECV:
            return fi_trecvmsg(o.tagged.ep, &o.tagged.msg, o.tagged.flags);
        case FI_OP_TSEND:
            return fi_tsendmsg(o.tagged.ep, &o.tagged.msg, o.tagged.flags);
        case FI_OP_READ:
            return fi_readmsg(o.rma.ep, &o.rma.msg, o.rma.flags);
        case FI_OP_WRITE:
            return fi_writemsg(o.rma.ep, &o.rma.msg, o.rma.flags);
        case FI_OP_ATOMIC:
            return fi_atomicmsg(o.atomic.ep, &o.atomic.msg, o.atomic.flags);
        case FI_OP_FETCH_ATOMIC:
            return fi_fetch_atomicmsg(o.fetch.ep, &o.fetch.msg, o.fetch.fetch.msg_iov,
                                      o.fetch.fetch.desc, o.fetch.fetch.iov_count, o.fetch.flags);
        case FI_OP_COMPARE_ATOMIC: {
            auto &c = o.compare;
            return fi_compare_atomicmsg(c.ep, &c.msg, c.compare.msg_iov, c.compare.desc,
                                        c.compare.iov_count, c.fetch.msg_iov, c.fetch.desc,
                                        c.fetch.iov_count, c.flags);
        }
        case FI_OP_CNTR_SET:
            return fi_cntr_set(o.cntr.cntr, o.cntr.value);
        case FI_OP_CNTR_ADD:
            return fi_cntr_add(o.cntr.cntr, o.cntr.value);
        default:
            return -FI_EINVAL;
    }
}

}  // namespace softnic::cxi

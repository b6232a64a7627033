// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Triggered operations (spec §7.4): fi_control(domain, FI_QUEUE_WORK) holds an operation
// until its triggering counter reaches a threshold, then issues it as the ordinary call
// would. FI_FLUSH_WORK drops what has not fired; FI_CANCEL_WORK one item.
//
// Counters wake the queue when they move; whoever progresses an endpoint of the domain
// next (the application or the offload helper) fires what is due, holding no lock of
// the provider's, so the operation takes the public path like any call.
#pragma once

#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>

#include <semaphore.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <string>

namespace softnic {
class Cntr;
class DomainSerial;
}  // namespace softnic

namespace softnic::cxi {

class Counter;

// Triggered operations the default service allows, less the 8 reserved (get_dwq_depth).
constexpr unsigned kTrigOpDepth = 512 - 8;

// While a triggered operation is being issued through the public call: the counter its
// completion counts on instead of the endpoint's (fi_deferred_work.completion_cntr,
// possibly none). The transmit and receive paths take it once.
struct TriggeredIssue {
    bool active = false;
    Cntr *cntr = nullptr;
};
TriggeredIssue take_triggered_issue_slow();
// Threads issuing a triggered operation right now; while none is, the data path does
// not even look at the thread-local record.
extern std::atomic<int> g_triggered_issuing;
inline TriggeredIssue take_triggered_issue() {
    if (g_triggered_issuing.load(std::memory_order_relaxed) == 0) return {};
    return take_triggered_issue_slow();
}

// An operation posted with the FI_TRIGGER flag (fi_trigger(3)): its context is a
// struct fi_triggered_context. The queue keeps its own copy of the one iov and the one
// remote iov, since the application's call built them on its stack.
struct FlaggedOp {
    fi_op_type type;  // FI_OP_SEND, FI_OP_TSEND, FI_OP_WRITE or FI_OP_READ
    fid_ep *ep;
    iovec iov;
    fi_addr_t addr;
    fi_rma_iov rma;  // FI_OP_WRITE / FI_OP_READ
    uint64_t tag, data;
    void *context;  // the fi_triggered_context
    uint64_t flags;
};

class DeferredQueue {
  public:
    DeferredQueue() = default;
    ~DeferredQueue();
    DeferredQueue(const DeferredQueue &) = delete;
    DeferredQueue &operator=(const DeferredQueue &) = delete;

    // FI_CXI_ENABLE_TRIG_OP_LIMIT: queued operations take slots of a budget of `depth`
    // shared by every process on the NIC (a named semaphore); none left: -FI_ENOSPC.
    void limit(const std::string &name, unsigned depth);
    int queue(fi_deferred_work *work, const void *domain);
    // Holds `op` until its threshold; it then completes on the endpoint's own CQ and
    // counters, with its fi_triggered_context as the context.
    int queue_flagged(const FlaggedOp &op, const void *domain);
    int cancel(fi_deferred_work *work);
    int flush();
    void wake() { ready_.store(true, std::memory_order_release); }
    bool ready() const { return ready_.load(std::memory_order_relaxed); }
    // Fire what is due; never with a provider lock held. `mine`: the engine serial the
    // calling thread holds or may enter (FI_THREAD_COMPLETION); the operations of an
    // engine serialised on its own fire only on a thread that passes its serial, the
    // rest wait for that engine's progress.
    void run(const DomainSerial *mine);

  private:
    // The one-entry iov arrays (and descriptors) an operation points at, copied when it
    // is queued: upstream issues the command then, and applications let theirs go out of
    // scope (fabtests' fi_rdm_deferred_wq). The op is pointed at them when it fires.
    struct Copies {
        iovec iov;
        fi_rma_iov rma_iov;
        fi_ioc ioc, result, compare;
        fi_rma_ioc rma_ioc;
        void *desc[3];
    };
    // A copy of the application's request: the op structure and its iov entries; the
    // buffers stay the application's, as for any posted operation.
    struct Item {
        fi_deferred_work *work;  // the application's, for FI_CANCEL_WORK
        fi_op_type type;
        Counter *trigger;
        uint64_t threshold;
        bool writeback;    // FI_CXI_CNTR_WB: only write the trigger's word back
        Cntr *completion;  // counts the operation's completion (may be null)
        bool flagged;      // FI_TRIGGER: the endpoint's bindings complete it
        // The target engine's own serial (FI_THREAD_COMPLETION), else null: any thread.
        const DomainSerial *owner;
        Copies c;
        union {
            fi_op_msg msg;
            fi_op_tagged tagged;
            fi_op_rma rma;
            fi_op_atomic atomic;
            fi_op_fetch_atomic fetch;
            fi_op_compare_atomic compare;
            fi_op_cntr cntr;
        } op;
    };
    static int check(const fi_deferred_work &w, const void *domain);
    static int keep_iovs(Item &it);
    static void point_at_copies(Item &it);
    static ssize_t fire(Item &it);
    static ssize_t fire_flagged(Item &it);
    void push(const Item &it, bool writeback);
    bool take_slots(unsigned n);
    void give_slots(size_t n);

    std::mutex lock_;     // items_
    std::mutex running_;  // one thread fires at a time, in queue order
    std::deque<Item> items_;
    std::atomic<bool> ready_{false};
    sem_t *budget_ = nullptr;  // with FI_CXI_ENABLE_TRIG_OP_LIMIT
};

}  // namespace softnic::cxi

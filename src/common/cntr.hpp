// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Counters: success and error counts, add/set, wait with progress.
#pragma once

#include <rdma/fi_domain.h>

#include <atomic>

#include "common/fid.hpp"
#include "common/progress.hpp"
#include "common/wait.hpp"
#include "common/wait_set.hpp"

namespace softnic {

class Cntr {
  public:
    static constexpr uint64_t kSuccessMax = (1ULL << 48) - 1;
    static constexpr uint64_t kErrorMax = 127;

    static int check_attr(const fi_cntr_attr &attr);
    Cntr(const fi_cntr_attr &attr, void *context);
    virtual ~Cntr() = default;
    Cntr(const Cntr &) = delete;
    Cntr &operator=(const Cntr &) = delete;

    fid_cntr *fid() { return &handle_.fid; }
    ProgressList &progress() { return progress_; }
    // As Cq::serialise_by: the values stay atomic, the endpoint list's lock goes.
    void serialise_by(DomainSerial *s) { progress_.serialise_by(s); }
    DomainSerial *serial() const { return progress_.serial(); }
    RefCount &refs() { return refs_; }
    bool counts_bytes() const { return events_ == 1; }

    // Completion side (called by endpoints).
    void inc(uint64_t n = 1) {
        value_.fetch_add(n, std::memory_order_release);
        notify();
    }
    void inc_err() {
        err_.fetch_add(1, std::memory_order_release);
        notify();
    }

    uint64_t read();
    uint64_t readerr();
    int add(uint64_t v);
    int adderr(uint64_t v);
    int set(uint64_t v);
    int seterr(uint64_t v);
    int wait(uint64_t threshold, int timeout_ms);
    // Wait objects (FI_WAIT_FD, FI_WAIT_POLLFD, FI_WAIT_UNSPEC): FI_GETWAIT, fi_trywait.
    int getwait(void *arg);
    int trywait();

  protected:
    // Subclasses that watch the values (writeback words, triggered operations) set
    // watched_ and are told of every change; the others pay one relaxed load.
    virtual void changed() {}
    void notify() {
        if (watched_.load(std::memory_order_relaxed)) changed();
        if (wait_) wait_->signal();
    }
    std::atomic<bool> watched_{false};
    Handle<fid_cntr, Cntr> handle_;
    int events_;
    fi_wait_obj wait_obj_;
    std::atomic<uint64_t> value_{0}, err_{0};
    ProgressList progress_;
    RefCount refs_;
    MemberWait wait_;  // last: a wait set may ask it about the members above
};

// The fid ops shared by every provider's counters; providers may extend ops_open.
extern fi_ops_cntr cntr_ops;
extern fi_ops cntr_fid_ops;
int cntr_close(fid *f);

}  // namespace softnic

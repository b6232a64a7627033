// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// RAII holder for any libfabric object with an embedded `struct fid fid`, shared by the
// cxi and usnic suites. `Report` says how a suite reports a failed close in the
// destructor (its own assertion style).
#pragma once

#include <rdma/fabric.h>

#include <utility>

namespace testutil {

template <typename T, typename Report>
class Fid {
  public:
    Fid() = default;
    explicit Fid(T *p) : p_(p) {}
    Fid(const Fid &) = delete;
    Fid &operator=(const Fid &) = delete;
    Fid(Fid &&o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    Fid &operator=(Fid &&o) noexcept {
        if (this != &o) {
            reset();
            p_ = std::exchange(o.p_, nullptr);
        }
        return *this;
    }
    ~Fid() { reset(); }

    T *get() const { return p_; }
    T *operator->() const { return p_; }
    explicit operator bool() const { return p_ != nullptr; }
    fid_t fid() const { return &p_->fid; }
    // Output slot for an open call; keep it only when the call returned 0.
    T **out() {
        reset();
        return &p_;
    }
    void drop_on_error(long rc) {
        if (rc != 0) p_ = nullptr;
    }
    T *release() { return std::exchange(p_, nullptr); }
    // Closes now and returns fi_close's result; the holder keeps the object when the
    // close fails so that a later close can be retried.
    int close() {
        if (!p_) return 0;
        const int rc = fi_close(&p_->fid);
        if (rc == 0) p_ = nullptr;
        return rc;
    }
    void reset() {
        if (!p_) return;
        const int rc = fi_close(&p_->fid);
        if (rc != 0) Report{}(rc);
        p_ = nullptr;
    }

  private:
    T *p_ = nullptr;
};

}  // namespace testutil

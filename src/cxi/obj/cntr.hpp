// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The cxi counter: the common counter plus what the Cassini adds (spec §7.3): the
// writeback word (set_wb_buffer), the doorbell window (get_mmio_addr), the op flags of
// fi_control, and waking the domain's triggered operations when its value moves.
#pragma once

#include <array>
#include <atomic>

#include "common/cntr.hpp"

namespace softnic::cxi {

class Domain;

class Counter : public Cntr {
  public:
    Counter(Domain &domain, const fi_cntr_attr &attr, void *context);
    ~Counter() override;

    Domain &domain() { return domain_; }
    // The success value as it is, without driving progress (triggers compare it).
    uint64_t current() const { return value_.load(std::memory_order_acquire); }

    int set_wb_buffer(void *buf, size_t len);
    int get_mmio_addr(void **addr, size_t *len);
    int control(int command, void *arg);
    void write_back();      // the writeback word, now (FI_CXI_CNTR_WB triggered actions)
    void watch_triggers();  // deferred work waits on this counter from now on

  private:
    void changed() override;
    void ring();  // apply what the application stored into the doorbell window

    struct Doorbell : ProgressSource {
        explicit Doorbell(Counter &c) : c(c) {}
        void progress() override { c.ring(); }
        Counter &c;
    };

    Domain &domain_;
    uint64_t op_flags_;
    std::atomic<uint64_t *> wb_{nullptr};
    std::atomic<bool> triggers_{false};
    // 32 words: add success at 0, add failure at 8, reset success at 16 and failure at
    // 24. Reset slots hold kArmed until the application stores its 0 there.
    static constexpr uint64_t kArmed = ~0ULL;
    alignas(64) std::array<std::atomic<uint64_t>, 32> mmio_{};
    Doorbell doorbell_{*this};
};

int counter_open(fid_domain *domain, fi_cntr_attr *attr, fid_cntr **cntr, void *context);
Counter *counter_of(fid_cntr *cntr);  // null unless a cxi counter

}  // namespace softnic::cxi

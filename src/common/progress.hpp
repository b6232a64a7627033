// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Manual progress: CQs and counters drive the endpoints bound to them.
#pragma once

#include <algorithm>
#include <vector>

#include "common/serial.hpp"

namespace softnic {

class ProgressSource {
  public:
    virtual ~ProgressSource() = default;
    virtual void progress() = 0;
};

// The endpoints whose completions land in one CQ or counter.
class ProgressList {
  public:
    // In a domain the application serialises (common/serial.hpp), only the application
    // touches the list (the offload helper progresses engines directly): no lock.
    void serialise_by(DomainSerial *s) { lock_.serialise_by(s); }
    DomainSerial *serial() const { return lock_.serial(); }
    void add(ProgressSource *s) {
        lock_.nested([&] {
            if (std::find(list_.begin(), list_.end(), s) == list_.end()) list_.push_back(s);
        });
    }
    void remove(ProgressSource *s) {
        lock_.nested([&] { list_.erase(std::remove(list_.begin(), list_.end(), s), list_.end()); });
    }
    void run() { serial() ? run_as<true>() : run_as<false>(); }
    template <bool kSerial>
    [[gnu::always_inline]] void run_as() {
        if constexpr (kSerial) {
            for (auto *s : list_)
                s->progress();
        } else {
            DataGuardAs<false> g(lock_);
            for (auto *s : list_)
                s->progress();
        }
    }

  private:
    DataLock lock_;
    std::vector<ProgressSource *> list_;
};

}  // namespace softnic

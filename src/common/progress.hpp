// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Manual progress: CQs and counters drive the endpoints bound to them.
#pragma once

#include <algorithm>
#include <vector>

#include "common/lock.hpp"

namespace softnic {

class ProgressSource {
  public:
    virtual ~ProgressSource() = default;
    virtual void progress() = 0;
};

// The endpoints whose completions land in one CQ or counter.
class ProgressList {
  public:
    void add(ProgressSource *s) {
        SpinGuard g(lock_);
        if (std::find(list_.begin(), list_.end(), s) == list_.end()) list_.push_back(s);
    }
    void remove(ProgressSource *s) {
        SpinGuard g(lock_);
        list_.erase(std::remove(list_.begin(), list_.end(), s), list_.end());
    }
    void run() {
        SpinGuard g(lock_);
        for (auto *s : list_)
            s->progress();
    }

  private:
    SpinLock lock_;
    std::vector<ProgressSource *> list_;
};

}  // namespace softnic

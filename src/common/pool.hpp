// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A growable free list of records with stable addresses: after warm-up, taking and
// giving back a record allocates nothing.
#pragma once

#include <deque>
#include <vector>

namespace softnic {

template <class T>
class Pool {
  public:
    // A value-initialised record.
    T *take() {
        if (free_.empty())
            store_.emplace_back();
        else {
            T *t = free_.back();
            free_.pop_back();
            *t = T{};
            return t;
        }
        return &store_.back();
    }
    // A record as its last user left it, for a caller that assigns all of it.
    T *take_any() {
        if (free_.empty()) return &store_.emplace_back();
        T *t = free_.back();
        free_.pop_back();
        return t;
    }
    void give(T *t) { free_.push_back(t); }

  private:
    std::deque<T> store_;
    std::vector<T *> free_;  // grows with the store only: no allocation once warm
};

}  // namespace softnic

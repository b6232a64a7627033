// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Small synchronisation primitives for the data path.
#pragma once

#include <atomic>
#include <mutex>

namespace softnic {

// Test-and-test-and-set spinlock: cheap when uncontended, which is the normal case.
class SpinLock {
  public:
    void lock() noexcept {
        for (;;) {
            if (!flag_.exchange(true, std::memory_order_acquire)) return;
            while (flag_.load(std::memory_order_relaxed))
                __builtin_ia32_pause();
        }
    }
    bool try_lock() noexcept {
        return !flag_.load(std::memory_order_relaxed) &&
               !flag_.exchange(true, std::memory_order_acquire);
    }
    void unlock() noexcept { flag_.store(false, std::memory_order_release); }

  private:
    std::atomic<bool> flag_{false};
};

using SpinGuard = std::lock_guard<SpinLock>;

}  // namespace softnic

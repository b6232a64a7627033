// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The wait object behind FI_WAIT_FD, FI_WAIT_POLLFD and FI_WAIT_UNSPEC on CQs and
// counters: an eventfd that producers ring only after a waiter armed it (fi_trywait, or
// a blocking read about to sleep), so the completion path pays one relaxed load.
//
// A soft NIC has no interrupt: while any wait object of the process is armed, the
// providers' background progress (the offload helper) keeps running on the sleeping
// application's behalf (armed_anywhere()), and a blocking read naps in short slices,
// progressing between them. Either way a blocked reader sleeps instead of spinning.
#pragma once

#include <rdma/fi_eq.h>

#include <atomic>
#include <chrono>

namespace softnic {

class WaitFd {
  public:
    WaitFd();  // throws std::bad_alloc when no eventfd can be had
    ~WaitFd();
    WaitFd(const WaitFd &) = delete;
    WaitFd &operator=(const WaitFd &) = delete;

    // Whether `w` is a wait object this class serves.
    static bool serves(fi_wait_obj w) {
        return w == FI_WAIT_FD || w == FI_WAIT_POLLFD || w == FI_WAIT_UNSPEC;
    }
    // Whether a waiter sleeps anywhere in this process.
    static bool armed_anywhere() { return armed_count_.load(std::memory_order_relaxed) > 0; }

    int fd() const { return efd_; }
    // Waiter: drain old signals and arm; then re-check the condition before sleeping.
    void arm();
    void disarm();
    // Producer: wake the waiter, if one armed.
    void signal() {
        if (armed_.load(std::memory_order_relaxed)) ring();
    }
    // Wake the waiter even if it has not armed (fi_cq_signal).
    void kick();
    // Sleeps until rung or `timeout_ms` (negative: no limit); disarms.
    void sleep(int timeout_ms);
    // FI_GETWAIT: an int for FI_WAIT_FD, a struct fi_wait_pollfd for FI_WAIT_POLLFD.
    int getwait(fi_wait_obj kind, void *arg) const;

  private:
    void ring();
    int efd_ = -1;
    std::atomic<bool> armed_{false};
    static std::atomic<int> armed_count_;
};

// Blocking with a wait object: calls ready() (which progresses and checks) until it
// returns true; in between, arms `w`, re-checks and sleeps in slices of at most
// kNapMs, so progress runs even where nothing else would ring. False when timeout_ms
// (negative: none) elapsed first.
constexpr int kNapMs = 1;

// The loop behind sleep_until and fi_wait on a wait set: `arm(true)` arms what rings,
// `sleep(ms)` sleeps on it, `arm(false)` disarms. ready() may consume what it finds
// (sread reads into the caller's buffer), so a true answer ends the loop at once.
template <class Ready, class Arm, class Sleep>
bool nap_until(int timeout_ms, Ready &&ready, Arm &&arm, Sleep &&sleep) {
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        if (ready()) return true;
        int slice = kNapMs;
        if (timeout_ms >= 0) {
            auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
            if (left.count() <= 0) return false;
            if (left.count() < slice) slice = static_cast<int>(left.count());
        }
        arm(true);
        const bool now = ready();  // ready() may consume what it found: never ask twice
        if (!now) sleep(slice);
        arm(false);
        if (now) return true;
    }
}

template <class Ready>
bool sleep_until(WaitFd &w, int timeout_ms, Ready &&ready) {
    return nap_until(
        timeout_ms, ready, [&w](bool on) { on ? w.arm() : w.disarm(); },
        [&w](int ms) { w.sleep(ms); });
}

}  // namespace softnic

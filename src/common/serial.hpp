// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// FI_THREAD_DOMAIN without locked instructions. The application promises to call into a
// domain from one thread at a time; the only other thread that comes in is the offload
// helper, and only while the application has gone quiet. So the application's side of
// every data-path lock becomes a counter it alone writes (no locked instruction, no
// fence), and the rare side, the helper, pays for both: it marks an attempt, makes every
// thread of the process execute a memory barrier (membarrier(2)), and comes in only if the
// counter is then zero. Either the application's increment is visible to the helper after
// that barrier, or the helper's mark is visible to the application after its increment;
// then the application waits for that one attempt to end, keeping its count, so the
// helper never gets ahead of an application that waits.
#pragma once

#include <atomic>
#include <mutex>

#include "common/lock.hpp"

namespace softnic {

class DomainSerial;
// The domain the offload helper holds on this thread (null on every other thread):
// its locks are then already held. initial-exec: a plain thread-pointer load.
extern constinit thread_local const DomainSerial *t_serial_held
    __attribute__((tls_model("initial-exec")));

class DomainSerial {
  public:
    // Whether this process can use it (membarrier's private expedited command, registered
    // once per process); false: keep the locks.
    static bool available();

    // The application's side, nested freely. The helper, holding the domain, reaches no
    // call that enters it (triggered operations check t_serial_held first).
    [[gnu::always_inline]] void enter() noexcept {
        raise();
        if (helper_trying()) [[unlikely]]
            wait_for_helper();
    }
    // enter() for a caller that would rather not call: false (and not entered) while a
    // helper's attempt is under way; then enter() it.
    [[gnu::always_inline]] bool enter_unless_helper() noexcept {
        const unsigned d = raise();
        if (helper_trying()) [[unlikely]] {
            depth_.store(d, std::memory_order_relaxed);
            return false;
        }
        return true;
    }
    [[gnu::always_inline]] void leave() noexcept {
        depth_.store(depth_.load(std::memory_order_relaxed) - 1, std::memory_order_release);
    }

    // The helper's: false while the application is inside (the helper tries again later).
    bool helper_try_enter() noexcept;
    void helper_leave() noexcept;

  private:
    // The count up, then (the helper's barrier fences for us) a look at the helper.
    [[gnu::always_inline]] unsigned raise() noexcept {
        const unsigned d = depth_.load(std::memory_order_relaxed);
        depth_.store(d + 1, std::memory_order_relaxed);
        std::atomic_signal_fence(std::memory_order_seq_cst);
        return d;
    }
    bool helper_trying() const noexcept { return attempt_.load(std::memory_order_acquire) & 1; }
    [[gnu::noinline]] void wait_for_helper() noexcept;

    std::atomic<unsigned> depth_{0};  // the application's nesting; written by it alone
    // The helper's attempts: odd while one is under way (trying, or in); written by the
    // helper alone.
    std::atomic<uint32_t> attempt_{0};
};

// A data-path lock: a spinlock, or, in a domain the application serialises, that
// domain's DomainSerial. Chosen when the object is made, before any thread shares it.
// The message path knows which at compile time (`kSerial`: its ops tables are chosen
// per domain), so that a domain of either kind pays nothing for the other.
class DataLock {
  public:
    void serialise_by(DomainSerial *s) { serial_ = s; }
    DomainSerial *serial() const { return serial_; }

    template <bool kSerial>
    [[gnu::always_inline]] void lock_as() noexcept {
        if constexpr (kSerial)
            serial_->enter();
        else
            spin_.lock();
    }
    template <bool kSerial>
    [[gnu::always_inline]] void unlock_as() noexcept {
        if constexpr (kSerial)
            serial_->leave();
        else
            spin_.unlock();
    }
    // The spinlock itself, for a caller that knows its domain has locks.
    SpinLock &spin() { return spin_; }
    // Either kind, decided here (what is not on the message path).
    void lock() noexcept { serial_ ? lock_as<true>() : lock_as<false>(); }
    void unlock() noexcept { serial_ ? unlock_as<true>() : unlock_as<false>(); }
    bool try_lock() noexcept {
        if (!serial_) return spin_.try_lock();
        serial_->enter();
        return true;
    }
    // For a caller that already holds its domain when serialised (an engine's lock, or
    // the helper's hold), or for what only the application touches: then no lock.
    template <class Fn>
    [[gnu::always_inline]] void nested(Fn &&fn) {
        if (serial_) [[unlikely]] {
            fn();
            return;
        }
        spin_.lock();
        fn();
        spin_.unlock();
    }

  private:
    DomainSerial *serial_ = nullptr;
    SpinLock spin_;
};

using DataGuard = std::lock_guard<DataLock>;

template <bool kSerial>
class DataGuardAs {
  public:
    [[gnu::always_inline]] explicit DataGuardAs(DataLock &l) : l_(l) { l_.lock_as<kSerial>(); }
    [[gnu::always_inline]] ~DataGuardAs() { l_.unlock_as<kSerial>(); }
    DataGuardAs(const DataGuardAs &) = delete;
    DataGuardAs &operator=(const DataGuardAs &) = delete;

  private:
    DataLock &l_;
};

}  // namespace softnic

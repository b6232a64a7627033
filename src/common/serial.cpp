// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "common/serial.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.hpp"

namespace softnic {

constinit thread_local const DomainSerial *t_serial_held = nullptr;

namespace {

long membarrier(int cmd) {
    return syscall(__NR_membarrier, cmd, 0, 0);
}

}  // namespace

bool DomainSerial::available() {
    static const bool ok = [] {
        long cmds = membarrier(MEMBARRIER_CMD_QUERY);
        if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) ||
            membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0) {
            SN_INFO(FI_LOG_DOMAIN, "no membarrier(2): FI_THREAD_DOMAIN keeps its locks\n");
            return false;
        }
        return true;
    }();
    return ok;
}

// The helper's attempt `seen` is under way: it either sees our depth and backs off, or
// saw none and is in. Either way it ends soon, and we keep our depth meanwhile: any later
// attempt's barrier makes our depth visible to it, so that one backs off. We wait for
// this attempt alone, never for a helper that keeps retrying.
void DomainSerial::wait_for_helper() noexcept {
    if (t_serial_held == this) [[unlikely]] {  // the helper itself: it holds the domain
        static std::atomic<bool> told{false};
        if (!told.exchange(true))
            SN_WARN(FI_LOG_DOMAIN, "offload helper re-entered a serialised domain it holds\n");
        return;
    }
    const uint32_t seen = attempt_.load(std::memory_order_acquire);
    if (!(seen & 1)) return;
    while (attempt_.load(std::memory_order_acquire) == seen)
        __builtin_ia32_pause();
}

bool DomainSerial::helper_try_enter() noexcept {
    const uint32_t a = attempt_.load(std::memory_order_relaxed);  // the helper's alone
    attempt_.store(a + 1, std::memory_order_release);             // odd: trying
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // Every running thread of the process executes a full barrier before this returns:
    // the application's compiler-only fence in enter() becomes a real one.
    if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) [[unlikely]] {
        static std::atomic<bool> told{false};  // registered in available(): should not be
        if (!told.exchange(true))
            SN_WARN(FI_LOG_DOMAIN, "membarrier: %s; the helper stays out\n", strerror(errno));
        attempt_.store(a + 2, std::memory_order_release);
        return false;
    }
    if (depth_.load(std::memory_order_acquire) != 0) {
        attempt_.store(a + 2, std::memory_order_release);
        return false;
    }
    t_serial_held = this;
    return true;
}

void DomainSerial::helper_leave() noexcept {
    t_serial_held = nullptr;
    attempt_.store(attempt_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

}  // namespace softnic

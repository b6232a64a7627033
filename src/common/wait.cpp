// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "common/wait.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <new>

#include "common/log.hpp"

namespace softnic {

std::atomic<int> WaitFd::armed_count_{0};

WaitFd::WaitFd() : efd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (efd_ < 0) throw std::bad_alloc();
}

WaitFd::~WaitFd() {
    disarm();
    close(efd_);
}

void WaitFd::arm() {
    uint64_t v;
    if (read(efd_, &v, sizeof(v)) < 0) {
        // nothing was pending
    }
    if (!armed_.exchange(true, std::memory_order_acq_rel))
        armed_count_.fetch_add(1, std::memory_order_relaxed);
}

void WaitFd::disarm() {
    if (armed_.exchange(false, std::memory_order_acq_rel))
        armed_count_.fetch_sub(1, std::memory_order_relaxed);
}

void WaitFd::ring() {
    if (!armed_.exchange(false, std::memory_order_acq_rel)) return;  // another producer rang
    armed_count_.fetch_sub(1, std::memory_order_relaxed);
    kick();
}

void WaitFd::kick() {
    uint64_t one = 1;
    if (write(efd_, &one, sizeof(one)) < 0) {
        // the counter is saturated: the descriptor is readable anyway
    }
}

void WaitFd::sleep(int timeout_ms) {
    pollfd p{efd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) < 0) {
        // EINTR: the caller checks again
    }
    disarm();
}

int WaitFd::getwait(fi_wait_obj kind, void *arg) const {
    if (!arg) SN_REJECT(-FI_EINVAL, FI_LOG_CORE, "NULL FI_GETWAIT argument\n");
    if (kind == FI_WAIT_POLLFD) {
        auto *p = static_cast<fi_wait_pollfd *>(arg);
        if (p->nfds < 1 || !p->fd) {
            p->nfds = 1;
            return -FI_ETOOSMALL;
        }
        p->fd[0] = pollfd{efd_, POLLIN, 0};
        p->nfds = 1;
        p->change_index = 1;  // the set never changes
        return 0;
    }
    *static_cast<int *>(arg) = efd_;
    return 0;
}

}  // namespace softnic

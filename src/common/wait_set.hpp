// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Wait sets (fi_wait_open): CQs and counters opened with FI_WAIT_SET and the set in
// attr->wait_set join it; fi_wait sleeps until one of them has something (each member
// keeps its own WaitFd, which the set's epoll descriptor watches). The set's wait
// object is FI_WAIT_UNSPEC or FI_WAIT_FD (the epoll descriptor, for FI_GETWAIT).
#pragma once

#include <rdma/fi_eq.h>

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "common/fid.hpp"
#include "common/wait.hpp"

namespace softnic {

class WaitSet {
  public:
    // `fabric_refs` is held while the set lives.
    static int open(RefCount &fabric_refs, fi_wait_attr *attr, fid_wait **out);
    static WaitSet *of(fid_wait *f) { return owner_of<WaitSet>(f); }
    ~WaitSet();

    fid_wait *fid() { return &handle_.fid; }
    RefCount &refs() { return refs_; }
    // A member: its wait object and a check that progresses it and says whether it
    // has something for the application.
    void join(WaitFd *w, std::function<bool()> ready);
    // A member with a wait object of its own kind: `key` names it, `fd` turns readable
    // when it is rung or has input, `arm(on)` arms and disarms it.
    void join(const void *key, int fd, std::function<void(bool)> arm, std::function<bool()> ready);
    void leave(const void *key);
    int wait(int timeout_ms);
    int trywait();
    int getwait(void *arg);

  private:
    WaitSet(RefCount &fabric_refs, fi_wait_obj kind, int epfd);
    bool any_ready();
    void arm_all(bool on);

    struct Member {
        const void *key;
        int fd;
        std::function<void(bool)> arm;
        std::function<bool()> ready;
    };
    Handle<fid_wait, WaitSet> handle_;
    RefCount &fabric_refs_;
    fi_wait_obj kind_;
    int epfd_;
    std::mutex lock_;
    std::vector<Member> members_;
    RefCount refs_;
};

// The wait object of a CQ or counter opened with `kind`: none (it polls), a WaitFd of
// its own (FI_WAIT_FD, POLLFD, UNSPEC), or a WaitFd in the wait set `set` (FI_WAIT_SET),
// which asks `ready` whether the owner has something. It leaves the set when destroyed,
// so owners declare it after what `ready` reads.
class MemberWait {
  public:
    MemberWait(fi_wait_obj kind, fid_wait *set, std::function<bool()> ready);
    ~MemberWait();
    MemberWait(const MemberWait &) = delete;
    MemberWait &operator=(const MemberWait &) = delete;

    explicit operator bool() const { return w_ != nullptr; }
    WaitFd *operator->() const { return w_.get(); }
    WaitFd &operator*() const { return *w_; }
    bool in_set() const { return set_ != nullptr; }

  private:
    std::unique_ptr<WaitFd> w_;
    WaitSet *set_ = nullptr;
};

}  // namespace softnic

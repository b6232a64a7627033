// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "common/wait_set.hpp"

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "common/log.hpp"

namespace softnic {
namespace {

int ws_wait(fid_wait *f, int timeout) {
    return guarded([&] { return WaitSet::of(f)->wait(timeout); });
}

int ws_close(fid *f) {
    WaitSet *ws = owner_of_fid<WaitSet, fid_wait>(f);
    if (ws->refs().busy()) SN_REJECT(-FI_EBUSY, FI_LOG_CORE, "wait set still has members\n");
    delete ws;
    return 0;
}

int ws_control(fid *f, int command, void *arg) {
    if (command != FI_GETWAIT)
        SN_REJECT(-FI_ENOSYS, FI_LOG_CORE, "unsupported wait set control %d\n", command);
    return owner_of_fid<WaitSet, fid_wait>(f)->getwait(arg);
}

fi_ops_wait wait_ops = {sizeof(fi_ops_wait), ws_wait};
fi_ops wait_fid_ops = make_fid_ops(ws_close, fid_no_bind, ws_control, fid_no_ops_open);

}  // namespace

int WaitSet::open(RefCount &fabric_refs, fi_wait_attr *attr, fid_wait **out) {
    if (!attr || !out) SN_REJECT(-FI_EINVAL, FI_LOG_CORE, "NULL attr or wait set\n");
    if (attr->flags) SN_REJECT(-FI_EINVAL, FI_LOG_CORE, "wait set flags must be 0\n");
    const int wait = raw_enum(attr->wait_obj);
    if (wait != FI_WAIT_UNSPEC && wait != FI_WAIT_FD)
        SN_REJECT(-FI_ENOSYS, FI_LOG_CORE, "wait set wait object %d: FD or UNSPEC only\n", wait);
    int epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0) SN_REJECT(-FI_ENOMEM, FI_LOG_CORE, "epoll_create1 failed\n");
    return guarded([&] {
        *out = (new WaitSet(fabric_refs, attr->wait_obj, epfd))->fid();
        return 0;
    });
}

WaitSet::WaitSet(RefCount &fabric_refs, fi_wait_obj kind, int epfd)
    : fabric_refs_(fabric_refs), kind_(kind), epfd_(epfd) {
    handle_.owner = this;
    handle_.fid.fid.fclass = FI_CLASS_WAIT;
    handle_.fid.fid.ops = &wait_fid_ops;
    handle_.fid.ops = &wait_ops;
    fabric_refs_.get();
}

WaitSet::~WaitSet() {
    close(epfd_);
    fabric_refs_.put();
}

void WaitSet::join(WaitFd *w, std::function<bool()> ready) {
    join(
        w, w->fd(), [w](bool on) { on ? w->arm() : w->disarm(); }, std::move(ready));
}

void WaitSet::join(const void *key, int fd, std::function<void(bool)> arm,
                   std::function<bool()> ready) {
    std::lock_guard<std::mutex> g(lock_);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
    members_.push_back({key, fd, std::move(arm), std::move(ready)});
    refs_.get();
}

void WaitSet::leave(const void *key) {
    std::lock_guard<std::mutex> g(lock_);
    auto it = std::find_if(members_.begin(), members_.end(),
                           [key](const Member &m) { return m.key == key; });
    if (it == members_.end()) return;
    epoll_ctl(epfd_, EPOLL_CTL_DEL, it->fd, nullptr);
    members_.erase(it);
    refs_.put();
}

bool WaitSet::any_ready() {
    std::lock_guard<std::mutex> g(lock_);
    return std::any_of(members_.begin(), members_.end(), [](Member &m) { return m.ready(); });
}

void WaitSet::arm_all(bool on) {
    std::lock_guard<std::mutex> g(lock_);
    for (Member &m : members_)
        m.arm(on);
}

// As sleep_until (wait.hpp), over every member: slices of kNapMs with progress between.
int WaitSet::wait(int timeout_ms) {
    bool got = nap_until(
        timeout_ms, [this] { return any_ready(); }, [this](bool on) { arm_all(on); },
        [this](int ms) {
            epoll_event ev[8];
            epoll_wait(epfd_, ev, 8, ms);
        });
    return got ? 0 : -FI_ETIMEDOUT;
}

int WaitSet::trywait() {
    if (any_ready()) return -FI_EAGAIN;
    arm_all(true);
    if (!any_ready()) return 0;
    arm_all(false);
    return -FI_EAGAIN;
}

MemberWait::MemberWait(fi_wait_obj kind, fid_wait *set, std::function<bool()> ready) {
    if (!WaitFd::serves(kind) && kind != FI_WAIT_SET) return;
    w_ = std::make_unique<WaitFd>();
    if (kind != FI_WAIT_SET) return;
    set_ = WaitSet::of(set);
    set_->join(w_.get(), std::move(ready));
}

MemberWait::~MemberWait() {
    if (set_) set_->leave(w_.get());
}

int WaitSet::getwait(void *arg) {
    if (!arg) SN_REJECT(-FI_EINVAL, FI_LOG_CORE, "NULL FI_GETWAIT argument\n");
    if (kind_ != FI_WAIT_FD) SN_REJECT(-FI_ENODATA, FI_LOG_CORE, "wait set has no FD\n");
    *static_cast<int *>(arg) = epfd_;
    return 0;
}

}  // namespace softnic

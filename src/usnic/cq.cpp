// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "usnic/cq.hpp"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include "common/log.hpp"
#include "usnic/caps.hpp"
#include "usnic/domain.hpp"

namespace softnic::usnic {
namespace {

ssize_t op_read(fid_cq *f, void *buf, size_t n) {
    return guarded([&] { return UCq::of(f)->core().read(buf, n, nullptr); });
}
ssize_t op_readfrom(fid_cq *f, void *buf, size_t n, fi_addr_t *src) {
    if (!UCq::of(f)->context_format())
        SN_REJECT(-FI_ENOSYS, FI_LOG_CQ, "fi_cq_readfrom needs FI_CQ_FORMAT_CONTEXT\n");
    return guarded([&] { return UCq::of(f)->core().read(buf, n, src); });
}
ssize_t op_readerr(fid_cq *f, fi_cq_err_entry *e, uint64_t flags) {
    return guarded([&] { return UCq::of(f)->core().readerr(e, flags); });
}
ssize_t op_sread(fid_cq *f, void *buf, size_t n, const void *, int timeout) {
    return guarded([&] { return UCq::of(f)->sread(buf, n, nullptr, timeout); });
}
ssize_t op_sreadfrom(fid_cq *f, void *buf, size_t n, fi_addr_t *src, const void *, int timeout) {
    if (!UCq::of(f)->context_format())
        SN_REJECT(-FI_ENOSYS, FI_LOG_CQ, "fi_cq_sreadfrom needs FI_CQ_FORMAT_CONTEXT\n");
    return guarded([&] { return UCq::of(f)->sread(buf, n, src, timeout); });
}
int op_signal(fid_cq *) {
    SN_REJECT(-FI_ENOSYS, FI_LOG_CQ, "fi_cq_signal is not supported\n");
}
const char *op_strerror(fid_cq *f, int prov_errno, const void *err_data, char *buf, size_t len) {
    return UCq::of(f)->core().strerror(prov_errno, err_data, buf, len);
}
fi_ops_cq cq_ops = {
    sizeof(fi_ops_cq), op_read,      op_readfrom, op_readerr,
    op_sread,          op_sreadfrom, op_signal,   op_strerror,
};

int cq_close(fid *f) {
    UCq *cq = UCq::of(reinterpret_cast<fid_cq *>(f));
    if (cq->core().refs().busy()) SN_REJECT(-FI_EBUSY, FI_LOG_CQ, "CQ still bound\n");
    delete cq;
    return 0;
}
int cq_control(fid *f, int command, void *arg) {
    if (command != FI_GETWAIT)
        SN_REJECT(-FI_EINVAL, FI_LOG_CQ, "unsupported CQ control %d\n", command);
    return UCq::of(reinterpret_cast<fid_cq *>(f))->getwait(arg);
}
fi_ops cq_fid_ops = make_fid_ops(cq_close, fid_no_bind, cq_control, fid_no_ops_open);

}  // namespace

namespace {
// usnic's wait object is its own (an epoll set over the sockets): the shared CQ has none.
fi_cq_attr without_wait(fi_cq_attr a) {
    a.wait_obj = FI_WAIT_NONE;
    return a;
}
}  // namespace

UCq::UCq(Domain *domain, const fi_cq_attr &attr, void *context)
    : core_(domain->api_version(), without_wait(attr), kMaxCqSize, context, nullptr),
      domain_(domain),
      wait_obj_(attr.wait_obj),
      context_format_(attr.format == FI_CQ_FORMAT_UNSPEC || attr.format == FI_CQ_FORMAT_CONTEXT) {
    core_.ext = this;
    core_.fid()->fid.ops = &cq_fid_ops;
    core_.fid()->ops = &cq_ops;
    if (wait_obj_ == FI_WAIT_FD || wait_obj_ == FI_WAIT_SET) {
        epfd_ = epoll_create1(EPOLL_CLOEXEC);
        efd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (epfd_ < 0 || efd_ < 0) {
            if (epfd_ >= 0) close(epfd_);
            if (efd_ >= 0) close(efd_);
            throw std::bad_alloc();
        }
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = efd_;
        epoll_ctl(epfd_, EPOLL_CTL_ADD, efd_, &ev);
        core_.set_notify(&UCq::notify, this);
    }
    if (wait_obj_ == FI_WAIT_SET) {  // the set watches our epoll descriptor
        set_ = WaitSet::of(attr.wait_set);
        set_->join(
            this, epfd_, [this](bool on) { set_armed(on); },
            [this] {
                core_.progress().run();
                return !core_.empty();
            });
    }
    domain_->refs().get();
}

UCq::~UCq() {
    if (set_) set_->leave(this);
    if (epfd_ >= 0) close(epfd_);
    if (efd_ >= 0) close(efd_);
    domain_->refs().put();
}

void UCq::notify(void *self) {
    auto *cq = static_cast<UCq *>(self);
    if (!cq->armed_.exchange(false, std::memory_order_acq_rel)) return;  // nobody sleeps
    uint64_t one = 1;
    ssize_t r = write(cq->efd_, &one, sizeof(one));
    (void)r;
}

void UCq::set_armed(bool on) {
    uint64_t v;
    if (on && read(efd_, &v, sizeof(v)) < 0) {
        // nothing was pending
    }
    armed_.store(on, std::memory_order_release);
}

void UCq::attach(int sock_fd) {
    if (epfd_ < 0 || sock_fd < 0) return;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = sock_fd;
    epoll_ctl(epfd_, EPOLL_CTL_ADD, sock_fd, &ev);
}

void UCq::detach(int sock_fd) {
    if (epfd_ >= 0 && sock_fd >= 0) epoll_ctl(epfd_, EPOLL_CTL_DEL, sock_fd, nullptr);
}

int UCq::trywait() {
    if (wait_obj_ == FI_WAIT_UNSPEC) return 0;
    if (wait_obj_ != FI_WAIT_FD && wait_obj_ != FI_WAIT_SET)
        SN_REJECT(-FI_EINVAL, FI_LOG_CQ, "CQ has no wait fd\n");
    core_.progress().run();
    if (!core_.empty()) return -FI_EAGAIN;
    uint64_t v;
    ssize_t r = read(efd_, &v, sizeof(v));
    (void)r;
    armed_.store(true, std::memory_order_release);
    return core_.empty() ? 0 : -FI_EAGAIN;  // a completion that slipped in before arming
}

int UCq::getwait(void *arg) {
    if (!arg) SN_REJECT(-FI_EINVAL, FI_LOG_CQ, "NULL FI_GETWAIT argument\n");
    if (wait_obj_ != FI_WAIT_FD) SN_REJECT(-FI_EINVAL, FI_LOG_CQ, "CQ has no wait fd\n");
    // The descriptor exists from fi_cq_open, so it is handed out before the CQ is bound
    // (the hardware page says -FI_EOPBADSTATE; ofi_rxd asks right after opening).
    *static_cast<int *>(arg) = epfd_;
    return 0;
}

ssize_t UCq::sread(void *buf, size_t count, fi_addr_t *src, int timeout_ms) {
    if (wait_obj_ == FI_WAIT_NONE) SN_REJECT(-FI_EOPNOTSUPP, FI_LOG_CQ, "CQ has no wait object\n");
    if (wait_obj_ == FI_WAIT_UNSPEC) return core_.sread(buf, count, src, timeout_ms);
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        ssize_t n = core_.read(buf, count, src);
        if (n != -FI_EAGAIN) return n;
        if (trywait() != 0) continue;
        int left = -1;
        if (timeout_ms >= 0) {
            auto ms =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
            if (ms.count() <= 0) return -FI_EAGAIN;
            left = static_cast<int>(ms.count());
        }
        epoll_event ev[4];
        int r = epoll_wait(epfd_, ev, 4, left);
        if (r < 0 && errno != EINTR) return -errno;
    }
}

int cq_open(Domain *domain, fi_cq_attr *attr, fid_cq **cq, void *context) {
    if (!attr || !cq) SN_REJECT(-FI_EINVAL, FI_LOG_CQ, "NULL attr or cq\n");
    if (attr->format == FI_CQ_FORMAT_TAGGED)
        SN_REJECT(-FI_ENOSYS, FI_LOG_CQ, "usnic has no tagged completions\n");
    switch (attr->wait_obj) {
        case FI_WAIT_NONE:
        case FI_WAIT_UNSPEC:
        case FI_WAIT_FD:
            break;
        case FI_WAIT_SET:
            if (!attr->wait_set) SN_REJECT(-FI_EINVAL, FI_LOG_CQ, "FI_WAIT_SET without a set\n");
            break;
        default:
            SN_REJECT(-FI_ENOSYS, FI_LOG_CQ, "CQ wait object %d is not supported\n",
                      attr->wait_obj);
    }
    if (attr->size > kMaxCqSize)
        SN_REJECT(-FI_EINVAL, FI_LOG_CQ, "CQ size above %zu\n", kMaxCqSize);
    fi_cq_attr a = *attr;
    a.wait_obj = FI_WAIT_NONE;  // the shared CQ checks the rest; the wait object is ours
    int ret = Cq::check_attr(a);
    if (ret) return ret;
    if (!attr->size) attr->size = kMaxCqSize;
    auto *c = new UCq(domain, *attr, context);
    *cq = c->fid();
    return 0;
}

int cq_trywait(fid_cq *cq) {
    return UCq::of(cq)->trywait();
}

}  // namespace softnic::usnic

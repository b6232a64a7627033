// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "common/eq.hpp"

#include "common/deadline.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace softnic {
namespace {

Eq *eq_of(fid_eq *f) {
    return owner_of<Eq>(f);
}

ssize_t op_read(fid_eq *f, uint32_t *event, void *buf, size_t len, uint64_t flags) {
    return guarded([&] { return eq_of(f)->read(event, buf, len, flags); });
}
ssize_t op_readerr(fid_eq *f, fi_eq_err_entry *e, uint64_t flags) {
    return guarded([&] { return eq_of(f)->readerr(e, flags); });
}
ssize_t op_write(fid_eq *f, uint32_t event, const void *buf, size_t len, uint64_t flags) {
    return guarded([&] { return eq_of(f)->write(event, buf, len, flags); });
}
ssize_t op_sread(fid_eq *f, uint32_t *event, void *buf, size_t len, int timeout, uint64_t flags) {
    return guarded([&] { return eq_of(f)->sread(event, buf, len, timeout, flags); });
}
const char *op_strerror(fid_eq *, int prov_errno, const void *, char *buf, size_t len) {
    return eq_strerror(prov_errno, buf, len);
}

fi_ops_eq eq_ops = {sizeof(fi_ops_eq), op_read, op_readerr, op_write, op_sread, op_strerror};

int eq_close(fid *f) {
    Eq *eq = owner_of_fid<Eq, fid_eq>(f);
    if (eq->refs().busy()) SN_REJECT(-FI_EBUSY, FI_LOG_EQ, "EQ still bound\n");
    delete eq;
    return 0;
}

int eq_control(fid *f, int command, void *arg) {
    return owner_of_fid<Eq, fid_eq>(f)->control(command, arg);
}

fi_ops eq_fid_ops = make_fid_ops(eq_close, fid_no_bind, eq_control, fid_no_ops_open);

}  // namespace

const char *eq_strerror(int prov_errno, char *buf, size_t len) {
    const char *s = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);
    if (buf && len) {
        std::strncpy(buf, s, len - 1);
        buf[len - 1] = '\0';
        return buf;
    }
    return s;
}

int Eq::check_attr(const fi_eq_attr &attr) {
    const int wait = raw_enum(attr.wait_obj);
    if (wait != FI_WAIT_NONE && wait != FI_WAIT_UNSPEC && wait != FI_WAIT_YIELD &&
        wait != FI_WAIT_FD)
        SN_REJECT(-FI_ENOSYS, FI_LOG_EQ, "unsupported EQ wait object %d\n", wait);
    return 0;
}

int Eq::trywait() {
    if (efd_ < 0) SN_REJECT(-FI_EINVAL, FI_LOG_EQ, "fi_trywait on an EQ without a wait fd\n");
    SpinGuard g(lock_);
    return events_.empty() && errors_.empty() ? 0 : -FI_EAGAIN;
}

Eq::Eq(const fi_eq_attr &attr, void *context, const EqRules &rules)
    : rules_(rules), wait_obj_(attr.wait_obj), writable_(attr.flags & FI_WRITE) {
    handle_.owner = this;
    handle_.fid.fid.fclass = FI_CLASS_EQ;
    handle_.fid.fid.context = context;
    handle_.fid.fid.ops = &eq_fid_ops;
    handle_.fid.ops = &eq_ops;
    if (wait_obj_ == FI_WAIT_FD && (efd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
        throw std::bad_alloc();
}

Eq::~Eq() {
    if (efd_ >= 0) close(efd_);
}

void Eq::signal() {
    uint64_t one = 1;
    if (efd_ >= 0 && ::write(efd_, &one, sizeof(one)) < 0)
        SN_DBG(FI_LOG_EQ, "eventfd write failed\n");
}

void Eq::settle() {
    uint64_t v;
    if (efd_ >= 0 && events_.empty() && errors_.empty() && ::read(efd_, &v, sizeof(v)) < 0)
        SN_DBG(FI_LOG_EQ, "eventfd already drained\n");
}

bool Eq::post(uint32_t event, const void *buf, size_t len) {
    Event ev{event, std::vector<uint8_t>(len)};
    if (len) std::memcpy(ev.data.data(), buf, len);
    {
        SpinGuard g(lock_);
        if (full()) {
            SN_WARN(FI_LOG_EQ, "EQ full: event %u lost\n", event);
            return false;
        }
        events_.push_back(std::move(ev));
        signal();  // under the lock: a reader may close the EQ once it has the event
    }
    return true;
}

bool Eq::post_error(const fi_eq_err_entry &err, const void *err_data, size_t len) {
    Error e{err, std::vector<uint8_t>(len)};
    if (len) std::memcpy(e.err_data.data(), err_data, len);
    {
        SpinGuard g(lock_);
        if (full()) {
            SN_WARN(FI_LOG_EQ, "EQ full: error event lost\n");
            return false;
        }
        errors_.push_back(std::move(e));
        signal();
    }
    return true;
}

ssize_t Eq::write(uint32_t event, const void *buf, size_t len, uint64_t flags) {
    if (rules_.write_needs_flag && !writable_)
        SN_REJECT(-FI_ENOSYS, FI_LOG_EQ, "EQ was not opened with FI_WRITE\n");
    if (len && !buf) SN_REJECT(-FI_EINVAL, FI_LOG_EQ, "NULL event buffer\n");
    (void)flags;
    return post(event, buf, len) ? static_cast<ssize_t>(len) : -FI_EAGAIN;
}

ssize_t Eq::read(uint32_t *event, void *buf, size_t len, uint64_t flags) {
    SpinGuard g(lock_);
    if (!errors_.empty()) return -FI_EAVAIL;
    if (events_.empty()) return -FI_EAGAIN;
    Event &ev = events_.front();
    if (len < ev.data.size()) SN_REJECT(-FI_ETOOSMALL, FI_LOG_EQ, "event buffer too small\n");
    if (!ev.data.empty() && !buf) SN_REJECT(-FI_EINVAL, FI_LOG_EQ, "NULL event buffer\n");
    if (event) *event = ev.type;
    if (!ev.data.empty()) std::memcpy(buf, ev.data.data(), ev.data.size());
    ssize_t n = static_cast<ssize_t>(ev.data.size());
    if (!(flags & FI_PEEK)) {
        events_.pop_front();
        settle();
    }
    return n;
}

ssize_t Eq::readerr(fi_eq_err_entry *out, uint64_t flags) {
    if (!out) SN_REJECT(-FI_EINVAL, FI_LOG_EQ, "NULL error entry\n");
    SpinGuard g(lock_);
    if (errors_.empty()) return -FI_EAGAIN;
    void *user = out->err_data;
    size_t user_size = out->err_data_size;
    const Error &head = errors_.front();
    *out = head.entry;
    out->err_data = nullptr;
    out->err_data_size = 0;
    if (user && user_size) {  // API >= 1.5: into the caller's buffer
        size_t n = std::min(user_size, head.err_data.size());
        if (n) std::memcpy(user, head.err_data.data(), n);
        out->err_data = user;
        out->err_data_size = n;
    } else if (!head.err_data.empty()) {
        last_error_ = head;
        out->err_data = last_error_.err_data.data();
        out->err_data_size = last_error_.err_data.size();
    }
    if (!(flags & FI_PEEK)) {
        errors_.pop_front();
        settle();
    }
    return sizeof(*out);
}

ssize_t Eq::sread(uint32_t *event, void *buf, size_t len, int timeout_ms, uint64_t flags) {
    if (rules_.sread_needs_wait && wait_obj_ == FI_WAIT_NONE)
        SN_REJECT(-FI_ENOSYS, FI_LOG_EQ, "EQ has no wait object\n");
    ssize_t n = -FI_EAGAIN;
    if (efd_ < 0) {
        poll_until(timeout_ms, [&] { return (n = read(event, buf, len, flags)) != -FI_EAGAIN; });
        return n;
    }
    for (;;) {  // sleep on the eventfd
        if ((n = read(event, buf, len, flags)) != -FI_EAGAIN) return n;
        pollfd p{efd_, POLLIN, 0};
        int r = ::poll(&p, 1, timeout_ms);
        if (r == 0) return -FI_EAGAIN;
        if (r < 0 && errno != EINTR) return -errno;
    }
}

int Eq::control(int command, void *arg) {
    if (command != FI_GETWAIT)
        SN_REJECT(rules_.bad_control_code, FI_LOG_EQ, "unsupported EQ control %d\n", command);
    if (efd_ < 0) SN_REJECT(rules_.no_wait_code, FI_LOG_EQ, "EQ has no wait fd\n");
    if (!arg) SN_REJECT(-FI_EINVAL, FI_LOG_EQ, "NULL FI_GETWAIT argument\n");
    *static_cast<int *>(arg) = efd_;
    return 0;
}

}  // namespace softnic

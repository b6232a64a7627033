#include "common/eq.hpp"

#include "common/deadline.hpp"

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

int eq_control(fid *, int command, void *) {
    if (command == FI_GETWAIT) SN_REJECT(-FI_ENODATA, FI_LOG_EQ, "EQ has no wait object\n");
    SN_REJECT(-FI_ENOSYS, FI_LOG_EQ, "unsupported EQ control %d\n", command);
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
    if (!polled_wait_obj(attr.wait_obj))
        SN_REJECT(-FI_ENOSYS, FI_LOG_EQ, "unsupported EQ wait object %d\n", attr.wait_obj);
    return 0;
}

Eq::Eq(const fi_eq_attr &, void *context) {
    handle_.owner = this;
    handle_.fid.fid.fclass = FI_CLASS_EQ;
    handle_.fid.fid.context = context;
    handle_.fid.fid.ops = &eq_fid_ops;
    handle_.fid.ops = &eq_ops;
}

ssize_t Eq::write(uint32_t event, const void *buf, size_t len, uint64_t flags) {
    if (len && !buf) SN_REJECT(-FI_EINVAL, FI_LOG_EQ, "NULL event buffer\n");
    (void)flags;
    Event ev{event, std::vector<uint8_t>(len)};
    if (len) std::memcpy(ev.data.data(), buf, len);
    SpinGuard g(lock_);
    events_.push_back(std::move(ev));
    return static_cast<ssize_t>(len);
}

void Eq::write_error(const fi_eq_err_entry &err) {
    SpinGuard g(lock_);
    errors_.push_back(err);
}

ssize_t Eq::read(uint32_t *event, void *buf, size_t len, uint64_t flags) {
    SpinGuard g(lock_);
    if (!errors_.empty()) return -FI_EAVAIL;
    if (events_.empty()) return -FI_EAGAIN;
    Event &ev = events_.front();
    if (len < ev.data.size()) SN_REJECT(-FI_ETOOSMALL, FI_LOG_EQ, "event buffer too small\n");
    if (event) *event = ev.type;
    if (buf && !ev.data.empty()) std::memcpy(buf, ev.data.data(), ev.data.size());
    ssize_t n = static_cast<ssize_t>(ev.data.size());
    if (!(flags & FI_PEEK)) events_.pop_front();
    return n;
}

ssize_t Eq::readerr(fi_eq_err_entry *out, uint64_t flags) {
    if (!out) SN_REJECT(-FI_EINVAL, FI_LOG_EQ, "NULL error entry\n");
    SpinGuard g(lock_);
    if (errors_.empty()) return -FI_EAGAIN;
    *out = errors_.front();
    if (!(flags & FI_PEEK)) errors_.pop_front();
    return sizeof(*out);
}

ssize_t Eq::sread(uint32_t *event, void *buf, size_t len, int timeout_ms, uint64_t flags) {
    ssize_t n = -FI_EAGAIN;
    poll_until(timeout_ms, [&] { return (n = read(event, buf, len, flags)) != -FI_EAGAIN; });
    return n;
}

}  // namespace softnic

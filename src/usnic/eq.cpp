#include "usnic/eq.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>

#include "common/eq.hpp"
#include "common/log.hpp"

namespace softnic::usnic {
namespace {

constexpr size_t kDefaultSize = 1024;

Eq *eq_of(fid_eq *f) {
    return Eq::of(f);
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
    return softnic::eq_strerror(prov_errno, buf, len);
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

int Eq::check_attr(fi_eq_attr &attr) {
    switch (attr.wait_obj) {
        case FI_WAIT_NONE:
        case FI_WAIT_FD:
            break;
        case FI_WAIT_UNSPEC:
            attr.wait_obj = FI_WAIT_FD;
            break;
        default:
            SN_REJECT(-FI_ENOSYS, FI_LOG_EQ, "EQ wait object %d is not supported\n", attr.wait_obj);
    }
    if (attr.flags & ~uint64_t(FI_WRITE))
        SN_REJECT(-FI_EINVAL, FI_LOG_EQ, "unknown EQ flags %#llx\n",
                  (unsigned long long)attr.flags);
    if (!attr.size) attr.size = kDefaultSize;
    return 0;
}

Eq::Eq(const fi_eq_attr &attr, void *context)
    : wait_obj_(attr.wait_obj), writable_(attr.flags & FI_WRITE), size_(attr.size) {
    handle_.owner = this;
    handle_.fid.fid.fclass = FI_CLASS_EQ;
    handle_.fid.fid.context = context;
    handle_.fid.fid.ops = &eq_fid_ops;
    handle_.fid.ops = &eq_ops;
    if (wait_obj_ == FI_WAIT_FD) efd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wait_obj_ == FI_WAIT_FD && efd_ < 0) throw std::bad_alloc();
}

Eq::~Eq() {
    if (efd_ >= 0) close(efd_);
}

void Eq::signal() {
    if (efd_ < 0) return;
    uint64_t one = 1;
    ssize_t r = ::write(efd_, &one, sizeof(one));
    (void)r;
}

void Eq::settle() {
    if (efd_ < 0 || !events_.empty() || !errors_.empty()) return;
    uint64_t v;
    ssize_t r = ::read(efd_, &v, sizeof(v));
    (void)r;
}

bool Eq::post(uint32_t type, const void *buf, size_t len) {
    {
        std::lock_guard<std::mutex> g(lock_);
        if (events_.size() + errors_.size() >= size_) {
            SN_WARN(FI_LOG_EQ, "EQ full: event %u lost\n", type);
            return false;
        }
        Event ev{type, std::vector<uint8_t>(len)};
        if (len) std::memcpy(ev.data.data(), buf, len);
        events_.push_back(std::move(ev));
    }
    signal();
    return true;
}

bool Eq::post_error(const fi_eq_err_entry &e, const void *err_data, size_t err_len) {
    {
        std::lock_guard<std::mutex> g(lock_);
        if (events_.size() + errors_.size() >= size_) {
            SN_WARN(FI_LOG_EQ, "EQ full: error event lost\n");
            return false;
        }
        Error err{e, std::vector<uint8_t>(err_len)};
        if (err_len) std::memcpy(err.err_data.data(), err_data, err_len);
        errors_.push_back(std::move(err));
    }
    signal();
    return true;
}

ssize_t Eq::write(uint32_t type, const void *buf, size_t len, uint64_t flags) {
    if (!writable_) SN_REJECT(-FI_ENOSYS, FI_LOG_EQ, "EQ was not opened with FI_WRITE\n");
    if (len && !buf) SN_REJECT(-FI_EINVAL, FI_LOG_EQ, "NULL event buffer\n");
    (void)flags;
    return post(type, buf, len) ? static_cast<ssize_t>(len) : -FI_EAGAIN;
}

ssize_t Eq::read(uint32_t *type, void *buf, size_t len, uint64_t flags) {
    std::lock_guard<std::mutex> g(lock_);
    if (!errors_.empty()) return -FI_EAVAIL;
    if (events_.empty()) return -FI_EAGAIN;
    Event &ev = events_.front();
    if (len < ev.data.size()) SN_REJECT(-FI_ETOOSMALL, FI_LOG_EQ, "event buffer too small\n");
    if (ev.data.size() && !buf) SN_REJECT(-FI_EINVAL, FI_LOG_EQ, "NULL event buffer\n");
    if (type) *type = ev.type;
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
    std::lock_guard<std::mutex> g(lock_);
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

ssize_t Eq::sread(uint32_t *type, void *buf, size_t len, int timeout_ms, uint64_t flags) {
    if (wait_obj_ == FI_WAIT_NONE) SN_REJECT(-FI_ENOSYS, FI_LOG_EQ, "EQ has no wait object\n");
    for (;;) {
        ssize_t n = read(type, buf, len, flags);
        if (n != -FI_EAGAIN) return n;
        pollfd p{efd_, POLLIN, 0};
        int r = ::poll(&p, 1, timeout_ms);
        if (r == 0) return -FI_EAGAIN;
        if (r < 0 && errno != EINTR) return -errno;
    }
}

int Eq::control(int command, void *arg) {
    if (command != FI_GETWAIT)
        SN_REJECT(-FI_EINVAL, FI_LOG_EQ, "unsupported EQ control %d\n", command);
    if (!arg) SN_REJECT(-FI_EINVAL, FI_LOG_EQ, "NULL FI_GETWAIT argument\n");
    if (wait_obj_ != FI_WAIT_FD) SN_REJECT(-FI_EINVAL, FI_LOG_EQ, "EQ has no wait fd\n");
    *static_cast<int *>(arg) = efd_;
    return 0;
}

}  // namespace softnic::usnic

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "common/cq.hpp"

#include "common/call_clock.hpp"
#include "common/deadline.hpp"
#include "common/fi_api.hpp"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstring>

namespace softnic {

constinit thread_local CqDirectRead *t_cq_reader = nullptr;
constinit thread_local const Cq *t_drained_cq = nullptr;

namespace {

size_t entry_size_of(fi_cq_format f) {
    switch (f) {
        case FI_CQ_FORMAT_CONTEXT:
            return sizeof(fi_cq_entry);
        case FI_CQ_FORMAT_MSG:
            return sizeof(fi_cq_msg_entry);
        case FI_CQ_FORMAT_DATA:
            return sizeof(fi_cq_data_entry);
        case FI_CQ_FORMAT_TAGGED:
            return sizeof(fi_cq_tagged_entry);
        default:
            return 0;
    }
}

// Sets t_reader for the scope of a read's progress (progress may throw: guarded()).
class ReaderScope {
  public:
    explicit ReaderScope(CqDirectRead *d) : set_(!t_cq_reader) {
        if (set_) t_cq_reader = d;
    }
    ~ReaderScope() {
        if (set_) t_cq_reader = nullptr;
    }
    ReaderScope(const ReaderScope &) = delete;
    ReaderScope &operator=(const ReaderScope &) = delete;

  private:
    bool set_;
};

Cq *cq_of(fid_cq *f) {
    return owner_of<Cq>(f);
}

template <bool kSerial>
ssize_t op_read(fid_cq *f, void *buf, size_t n) {
    return guarded([&] { return cq_of(f)->read<kSerial, true>(buf, n, nullptr); });
}
template <bool kSerial>
ssize_t op_readfrom(fid_cq *f, void *buf, size_t n, fi_addr_t *src) {
    return guarded([&] { return cq_of(f)->read<kSerial, true>(buf, n, src); });
}
ssize_t op_readerr(fid_cq *f, fi_cq_err_entry *e, uint64_t flags) {
    return guarded([&] { return cq_of(f)->readerr(e, flags); });
}
ssize_t op_sread(fid_cq *f, void *buf, size_t n, const void *, int timeout) {
    return guarded([&] { return cq_of(f)->sread(buf, n, nullptr, timeout); });
}
ssize_t op_sreadfrom(fid_cq *f, void *buf, size_t n, fi_addr_t *src, const void *, int timeout) {
    return guarded([&] { return cq_of(f)->sread(buf, n, src, timeout); });
}
int op_signal(fid_cq *f) {
    return cq_of(f)->signal();
}
const char *op_strerror(fid_cq *f, int prov_errno, const void *err_data, char *buf, size_t len) {
    return cq_of(f)->strerror(prov_errno, err_data, buf, len);
}

template <bool kSerial>
constexpr fi_ops_cq make_cq_ops() {
    using call_clock::Call, call_clock::clocked;  // timed in a measuring build
    return {sizeof(fi_ops_cq),
            clocked<Call::kRead, op_read<kSerial>>(),
            clocked<Call::kRead, op_readfrom<kSerial>>(),
            op_readerr,
            op_sread,
            op_sreadfrom,
            op_signal,
            op_strerror};
}
fi_ops_cq cq_ops = make_cq_ops<false>();
fi_ops_cq cq_serial_ops = make_cq_ops<true>();

int cq_close(fid *f) {
    Cq *cq = owner_of_fid<Cq, fid_cq>(f);
    if (cq->refs().busy()) SN_REJECT(-FI_EBUSY, FI_LOG_CQ, "CQ still bound to an endpoint\n");
    delete cq;
    return 0;
}

int cq_control(fid *f, int command, void *arg) {
    if (command == FI_GETWAIT) return owner_of_fid<Cq, fid_cq>(f)->getwait(arg);
    SN_REJECT(-FI_ENOSYS, FI_LOG_CQ, "unsupported CQ control %d\n", command);
}

fi_ops cq_fid_ops = make_fid_ops(cq_close, fid_no_bind, cq_control, fid_no_ops_open);

}  // namespace

int Cq::check_attr(const fi_cq_attr &attr) {
    const int format = raw_enum(attr.format), wait = raw_enum(attr.wait_obj);
    const int cond = raw_enum(attr.wait_cond);
    switch (format) {
        case FI_CQ_FORMAT_UNSPEC:
        case FI_CQ_FORMAT_CONTEXT:
        case FI_CQ_FORMAT_MSG:
        case FI_CQ_FORMAT_DATA:
        case FI_CQ_FORMAT_TAGGED:
            break;
        default:
            SN_REJECT(-FI_ENOSYS, FI_LOG_CQ, "unsupported CQ format %d\n", format);
    }
    if (wait == FI_WAIT_SET && !attr.wait_set)
        SN_REJECT(-FI_EINVAL, FI_LOG_CQ, "FI_WAIT_SET without a wait set\n");
    if (wait != FI_WAIT_NONE && wait != FI_WAIT_SET &&
        (wait < FI_WAIT_NONE || wait > FI_WAIT_POLLFD || !WaitFd::serves(fi_wait_obj(wait))))
        SN_REJECT(-FI_ENOSYS, FI_LOG_CQ, "unsupported CQ wait object %d\n", wait);
    if (cond != FI_CQ_COND_NONE)
        SN_REJECT(-FI_ENOSYS, FI_LOG_CQ, "unsupported CQ wait condition %d\n", cond);
    if (attr.flags & FI_AFFINITY)
        SN_REJECT(-FI_ENOSYS, FI_LOG_CQ, "FI_AFFINITY is not supported\n");
    return 0;
}

Cq::Cq(uint32_t api_version, const fi_cq_attr &attr, size_t default_size, void *context,
       ProvStrError prov_strerror)
    : api_version_(api_version),
      format_(attr.format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT : attr.format),
      entry_size_(entry_size_of(format_)),
      prov_strerror_(prov_strerror),
      // The ring starts small and doubles when full (completions are never dropped), so
      // a CQ's size is not memory touched up front: cxi's default is 131072 entries, 8 MiB
      // zeroed at every fi_cq_open otherwise.
      ring_(std::bit_ceil(std::min<size_t>(attr.size ? attr.size : default_size, kInitialRing))),
      mask_(ring_.size() - 1),
      wait_obj_(attr.wait_obj),
      wait_(attr.wait_obj, attr.wait_set, [this] {
          progress_.run();
          return !empty();
      }) {
    wakes_ = bool(wait_);
    handle_.owner = this;
    handle_.fid.fid.fclass = FI_CLASS_CQ;
    handle_.fid.fid.context = context;
    handle_.fid.fid.ops = &cq_fid_ops;
    handle_.fid.ops = &cq_ops;
}

void Cq::push_queued(const Completion &c) {
    push_locked(c);
    if (wakes_) [[unlikely]]
        wake();
}

[[gnu::noinline]] void Cq::wake() {
    if (notify_) notify_(notify_arg_);
    if (wait_) wait_->signal();
}

// Every push comes from a provider's engine, under its own lock (in a serialised domain,
// the domain's): nested.
void Cq::push_locked(const Completion &c) {
    lock_.nested([&] {
        if (count_ > mask_) [[unlikely]]  // rare: grow rather than lose a completion
            grow();
        ring_[(head_ + count_) & mask_] = c;  // a power of two: wrapped by a mask
        count_++;
        add_pending(1);
    });
}

void Cq::serialise_by(DomainSerial *s) {
    domain_serial_ = s;
    use_serial(s);
}

void Cq::use_serial(DomainSerial *s) {
    lock_.serialise_by(s);
    progress_.serialise_by(s);
    handle_.fid.ops = s ? &cq_serial_ops : &cq_ops;
}

void Cq::bind_engine(DomainSerial *s) {
    if (domain_serial_ || engines_shared_) return;  // the domain's serial, or the lock for good
    DomainSerial *cur = lock_.serial();
    if (cur && cur == s) return;  // the same engine, its other direction
    if (!cur && s) {              // the first engine: nothing completes into the CQ yet
        use_serial(s);
        return;
    }
    engines_shared_ = true;
    if (!cur) return;
    // The first engine's helper may be pushing: hold that engine as its application
    // does, so that the helper is out while the lock changes kind.
    cur->enter();
    use_serial(nullptr);
    cur->leave();
}

void Cq::unbind_engine(DomainSerial *s) {
    if (!s || domain_serial_ || lock_.serial() != s) return;
    use_serial(nullptr);
    engines_shared_ = true;
}

[[gnu::noinline]] void Cq::grow() {
    std::vector<Completion> bigger(ring_.size() * 2);
    for (size_t i = 0; i < count_; i++)
        bigger[i] = ring_[(head_ + i) & mask_];
    ring_.swap(bigger);
    mask_ = ring_.size() - 1;
    head_ = 0;
}

void Cq::push_error(const ErrorCompletion &e) {
    lock_.nested([&] {
        errors_.push_back(e);
#if FI_MAJOR_VERSION >= 2
        errors_.back().entry.src_addr = e.src;
#endif
        add_pending(1);
    });
    wake();
}

static_assert(offsetof(Completion, op_context) == offsetof(fi_cq_tagged_entry, op_context) &&
              offsetof(Completion, flags) == offsetof(fi_cq_tagged_entry, flags) &&
              offsetof(Completion, len) == offsetof(fi_cq_tagged_entry, len) &&
              offsetof(Completion, buf) == offsetof(fi_cq_tagged_entry, buf) &&
              offsetof(Completion, data) == offsetof(fi_cq_tagged_entry, data) &&
              offsetof(Completion, tag) == offsetof(fi_cq_tagged_entry, tag) &&
              offsetof(Completion, src) == sizeof(fi_cq_tagged_entry));

ssize_t Cq::reject_null_buffer() {
    SN_REJECT(-FI_EINVAL, FI_LOG_CQ, "NULL buffer\n");
}

// Progress first: what it completes while nothing older is queued lands in the reader's
// buffer (push_direct). Out of line, so that a read of queued entries saves no more
// registers than it uses.
template <bool kSerial>
[[gnu::noinline]] ssize_t Cq::progress_and_read(uint8_t *out, size_t count, fi_addr_t *src) {
    if (skipped_.load(std::memory_order_relaxed)) skipped_.store(0, std::memory_order_relaxed);
    CqDirectRead d{this, out, src, count, 0};
    {
        ReaderScope scope(&d);
        progress_.run_as<kSerial>();
    }
    if (d.n) {
        if (d.n < count) t_drained_cq = this;  // read's kDrainEnd
        return static_cast<ssize_t>(d.n);
    }
    if (!pending_.load(std::memory_order_relaxed)) return -FI_EAGAIN;
    return take<kSerial>(d.out, d.room, d.src);  // from d: no register is kept across progress
}
template ssize_t Cq::progress_and_read<false>(uint8_t *, size_t, fi_addr_t *);
template ssize_t Cq::progress_and_read<true>(uint8_t *, size_t, fi_addr_t *);

// Queued entries, oldest first; -FI_EAVAIL while an error waits (pending_ counts the
// errors beside count_).
// Under the lock.
[[gnu::always_inline]] inline ssize_t Cq::take_locked(uint8_t *out, size_t count, fi_addr_t *src) {
    if (pending_.load(std::memory_order_relaxed) != count_) return -FI_EAVAIL;
    if (!count_) return -FI_EAGAIN;
    const size_t n = std::min(count, count_);
    for (size_t i = 0; i < n; i++) {
        const Completion &c = ring_[head_];
        write_entry(out + i * entry_size_, c);
        if (src) src[i] = c.src;
        head_ = (head_ + 1) & mask_;
    }
    count_ -= n;
    add_pending(-ptrdiff_t(n));
    return static_cast<ssize_t>(n);
}

// In a serialised domain the wait for the helper is a tail call, so that the common
// case calls nothing (and saves no register).
template <bool kSerial>
ssize_t Cq::take(uint8_t *out, size_t count, fi_addr_t *src) {
    if constexpr (kSerial) {
        if (!lock_.serial()->enter_unless_helper()) [[unlikely]]
            return take_after_helper(out, count, src);
        const ssize_t n = take_locked(out, count, src);
        lock_.serial()->leave();
        return n;
    } else {
        DataGuardAs<false> g(lock_);
        return take_locked(out, count, src);
    }
}
[[gnu::noinline]] ssize_t Cq::take_after_helper(uint8_t *out, size_t count, fi_addr_t *src) {
    DataGuardAs<true> g(lock_);
    return take_locked(out, count, src);
}
template ssize_t Cq::take<false>(uint8_t *, size_t, fi_addr_t *);
template ssize_t Cq::take<true>(uint8_t *, size_t, fi_addr_t *);

ssize_t Cq::readerr(fi_cq_err_entry *out, uint64_t flags) {
    if (!out) SN_REJECT(-FI_EINVAL, FI_LOG_CQ, "NULL error entry\n");
    (void)flags;
    progress_.run();
    DataGuard g(lock_);
    if (errors_.empty()) return -FI_EAGAIN;
    last_error_ = std::move(errors_.front());
    errors_.pop_front();
    add_pending(-1);
    void *user_data = out->err_data;
    size_t user_size = out->err_data_size;
    std::memcpy(out, &last_error_.entry, cq_err_entry_size(api_version_));
    const auto &ed = last_error_.err_data;
    if (user_data && user_size) {  // API >= 1.5: copy into the caller's buffer
        size_t n = std::min(user_size, ed.size());
        if (n) std::memcpy(user_data, ed.data(), n);
        out->err_data = user_data;
        out->err_data_size = n;
    } else {
        out->err_data = ed.empty() ? nullptr : const_cast<uint8_t *>(ed.data());
        out->err_data_size = ed.size();
    }
    return 1;
}

// With a wait object the reader sleeps (wait.hpp); without one it polls, as before. The
// read is the one fi_cq_read would make: in a serialised domain, under the domain's
// serial, not the spinlock that the helper's pushes never take.
ssize_t Cq::sread(void *buf, size_t count, fi_addr_t *src, int timeout_ms) {
    ssize_t n = -FI_EAGAIN;
    const bool serial = lock_.serial() != nullptr;
    auto ready = [&] {
        if (signaled_.exchange(false, std::memory_order_acq_rel)) return true;
        n = serial ? read<true>(buf, count, src) : read<false>(buf, count, src);
        return n != -FI_EAGAIN;
    };
    if (wait_)
        sleep_until(*wait_, timeout_ms, ready);
    else
        poll_until(timeout_ms, ready);
    return n;
}

int Cq::getwait(void *arg) {
    if (!wait_ || wait_obj_ == FI_WAIT_UNSPEC || wait_.in_set())
        SN_REJECT(-FI_ENODATA, FI_LOG_CQ, "CQ has no FD or POLLFD wait object\n");
    return wait_->getwait(wait_obj_, arg);
}

int Cq::trywait() {
    if (!wait_) SN_REJECT(-FI_EINVAL, FI_LOG_CQ, "fi_trywait on a CQ without a wait object\n");
    progress_.run();
    if (!empty()) return -FI_EAGAIN;
    wait_->arm();
    if (empty()) return 0;
    wait_->disarm();
    return -FI_EAGAIN;
}

int Cq::signal() {
    if (!wait_) SN_REJECT(-FI_ENOSYS, FI_LOG_CQ, "fi_cq_signal on a CQ without a wait object\n");
    signaled_.store(true, std::memory_order_release);
    wait_->kick();
    return 0;
}

const char *Cq::strerror(int prov_errno, const void *, char *buf, size_t len) {
    const char *s = prov_strerror_ ? prov_strerror_(prov_errno) : fi_strerror(prov_errno);
    if (buf && len) {
        std::strncpy(buf, s, len - 1);
        buf[len - 1] = '\0';
        return buf;
    }
    return s;
}

}  // namespace softnic

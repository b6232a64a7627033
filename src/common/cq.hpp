// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Completion queue: every fi_cq_format, an error queue, fi_cq_readfrom, sread.
#pragma once

#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

#include <cstddef>
#include <cstring>
#include <deque>
#include <functional>
#include <vector>

#include "common/fid.hpp"
#include "common/progress.hpp"
#include "common/wait.hpp"
#include "common/wait_set.hpp"

namespace softnic {

// Format-independent completion; written once, formatted at read time. Its first six
// fields are fi_cq_tagged_entry's, in its order (asserted in cq.cpp): every format is a
// prefix of it, so an entry is one copy of the first entry_size_ bytes.
struct Completion {
    void *op_context = nullptr;
    uint64_t flags = 0;
    size_t len = 0;
    void *buf = nullptr;
    uint64_t data = 0;
    uint64_t tag = 0;
    fi_addr_t src = FI_ADDR_NOTAVAIL;
};

// An error completion that owns a copy of its err_data.
struct ErrorCompletion {
    fi_cq_err_entry entry{};
    fi_addr_t src = FI_ADDR_NOTAVAIL;
    std::vector<uint8_t> err_data;
};

// An fi_cq_err_entry, fields by name (libfabric 2.x appends src_addr, which the CQ
// fills from ErrorCompletion::src).
inline fi_cq_err_entry err_entry(void *context, uint64_t flags, size_t len, void *buf,
                                 uint64_t data, uint64_t tag, size_t olen, int err,
                                 int prov_errno) {
    fi_cq_err_entry e{};
    e.op_context = context;
    e.flags = flags;
    e.len = len;
    e.buf = buf;
    e.data = data;
    e.tag = tag;
    e.olen = olen;
    e.err = err;
    e.prov_errno = prov_errno;
    return e;
}

using ProvStrError = const char *(*)(int prov_errno);

class Cq;
// The buffer of the fi_cq_read running on this thread, while its progress runs.
struct CqDirectRead {
    const Cq *cq;
    uint8_t *out;
    fi_addr_t *src;
    size_t room, n;
};
// initial-exec: a plain thread-pointer load on the message path, not __tls_get_addr;
// constinit: no initialisation wrapper around it.
extern constinit thread_local CqDirectRead *t_cq_reader __attribute__((tls_model("initial-exec")));
// The CQ whose last read on this thread came back short from a progress pass, until the
// thread posts a receive (Cq::read's kDrainEnd).
extern constinit thread_local const Cq *t_drained_cq __attribute__((tls_model("initial-exec")));
// A receive posted on this thread: its CQ reads progress again (one store; on the
// receive alone, as a request-reply loop posts one between its reads).
inline void note_post() {
    t_drained_cq = nullptr;
}

class Cq {
  public:
    // Validates attr; returns 0 or a -FI_E* code (and logs why).
    static int check_attr(const fi_cq_attr &attr);

    // `api_version`: the application's (fid_fabric::api_version), for the layout of
    // what readerr hands back.
    Cq(uint32_t api_version, const fi_cq_attr &attr, size_t default_size, void *context,
       ProvStrError prov_strerror);
    ~Cq() {
        if (on_close_) on_close_();
    }
    Cq(const Cq &) = delete;
    Cq &operator=(const Cq &) = delete;

    fid_cq *fid() { return &handle_.fid; }
    ProgressList &progress() { return progress_; }
    // Before the CQ is shared: its domain's application serialises its calls
    // (FI_THREAD_DOMAIN, common/serial.hpp), and only endpoints of that domain bind it.
    void serialise_by(DomainSerial *s);
    // The domain's serial the CQ was opened under (null: none), which a bind checks.
    DomainSerial *domain_serial() const { return domain_serial_; }
    // FI_THREAD_COMPLETION: an engine binds this CQ, `s` its own serial (null for an
    // engine with locks). While one engine alone completes into it, the CQ takes that
    // engine's serial and no lock of its own; a second engine puts it back on its lock
    // for good. On the binding application's thread, before the new engine runs.
    void bind_engine(DomainSerial *s);
    // That engine goes, its helper gone: the CQ keeps its own lock from then on.
    void unbind_engine(DomainSerial *s);
    // Run when the CQ closes (a provider's resource accounting).
    void on_close(std::function<void()> f) { on_close_ = std::move(f); }
    RefCount &refs() { return refs_; }
    // Keeps the parent (domain, or fabric for an EQ) open while this object lives.
    void hold_parent(RefCount &parent) { parent_.hold(parent); }

    // A provider that wraps this CQ (its own ops tables) finds itself here.
    void *ext = nullptr;
    // Called after every push (wait objects: wake a sleeping reader).
    void set_notify(void (*fn)(void *), void *arg) {
        notify_arg_ = arg;
        notify_ = fn;
        wakes_ = notify_ || wait_;
    }
    bool empty() {
        DataGuard g(lock_);  // either kind: not on the message path
        return !count_ && errors_.empty();
    }
    // Inline: the direct case is the 8-byte path's (push_direct).
    void push(const Completion &c) {
        if (push_direct(c)) return;  // the reader is this thread: nobody to wake
        push_queued(c);
    }
    void push_error(const ErrorCompletion &e);

    // Inline, into each provider's fi_cq_read. What is queued is handed out before
    // progress runs again: progress would only add behind it, and a send's completion
    // (queued as the send was posted) then costs no poll of the peers. At most kSkips
    // reads in a row skip progress, so a CQ that never empties still drives its endpoints.
    // kDrainEnd: fi_cq_read's and fi_cq_readfrom's (not sread's, which sleeps on what a
    // read saw). A reader that drains the CQ, reading until a read finds nothing (Open
    // MPI's mtl, after every entry), gets that nothing at once when the read before on
    // this thread came back short from a progress pass, nothing was queued since and the
    // thread posted no receive in between: that pass took all there was, and a second pass
    // now would sit on a ping-pong's critical path (6 % of Open MPI's 8-byte round trip).
    // A reader that reads once per progress call and posts its next receive in between
    // (MPICH) progresses at every read: skipping there cost it 2-14 %. Once: the read after it
    // progresses, so a loop of reads still drives the endpoints; a zero-count read always does.
    template <bool kSerial = false, bool kDrainEnd = false>  // kSerial: serial.hpp
    ssize_t read(void *buf, size_t count, fi_addr_t *src) {
        if (count && !buf) [[unlikely]]
            return reject_null_buffer();
        if constexpr (kDrainEnd) {
            if (t_drained_cq == this) [[unlikely]] {
                t_drained_cq = nullptr;
                if (count && !pending_.load(std::memory_order_relaxed)) return -FI_EAGAIN;
            }
        }
        auto *out = static_cast<uint8_t *>(buf);
        const unsigned skipped = skipped_.load(std::memory_order_relaxed);
        if (pending_.load(std::memory_order_relaxed) && skipped < kSkips) {
            skipped_.store(skipped + 1, std::memory_order_relaxed);
            return take<kSerial>(out, count, src);
        }
        return progress_and_read<kSerial>(out, count, src);
    }
    ssize_t readerr(fi_cq_err_entry *out, uint64_t flags);
    ssize_t sread(void *buf, size_t count, fi_addr_t *src, int timeout_ms);
    // Wait objects (FI_WAIT_FD, FI_WAIT_POLLFD, FI_WAIT_UNSPEC, FI_WAIT_SET).
    int getwait(void *arg);
    // fi_trywait: 0 once armed with nothing to read, -FI_EAGAIN when there is.
    int trywait();
    // fi_cq_signal: wake a reader blocked in sread.
    int signal();
    const char *strerror(int prov_errno, const void *err_data, char *buf, size_t len);

  private:
    // A completion made by the progress of this thread's own fi_cq_read of this CQ, while
    // the CQ holds nothing older, goes straight into the reader's buffer. The order is
    // the ring's; what is saved is the lock that the push and the read would each take
    // on the message path. A push from another thread racing with this one is
    // concurrent with it, so either order is one the application could see.
    bool push_direct(const Completion &c) {
        CqDirectRead *d = t_cq_reader;
        if (!d || d->cq != this || d->n == d->room || pending_.load(std::memory_order_relaxed))
            return false;
        write_entry(d->out + d->n * entry_size_, c);
        if (d->src) d->src[d->n] = c.src;
        d->n++;
        return true;
    }
    void push_queued(const Completion &c);
    void use_serial(DomainSerial *s);  // the lock's kind, the list's and the ops table
    // Under the lock: a plain store, since only lock holders write it.
    void add_pending(ptrdiff_t d) {
        pending_.store(pending_.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
    }
    void push_locked(const Completion &c);
    void grow();
    void wake();  // after a push: the notify hook and a sleeping reader
    template <bool kSerial>
    ssize_t progress_and_read(uint8_t *out, size_t count, fi_addr_t *src);
    template <bool kSerial>
    ssize_t take(uint8_t *out, size_t count, fi_addr_t *src);
    ssize_t take_locked(uint8_t *out, size_t count, fi_addr_t *src);
    ssize_t take_after_helper(uint8_t *out, size_t count, fi_addr_t *src);
    static ssize_t reject_null_buffer();  // logs why
    // fi_cq_tagged_entry's layout, stored into the reader's bytes: packed, since nothing
    // says the reader's buffer is aligned. (Not may_alias: the compiler may then assume,
    // rightly, that these stores change none of the CQ's own fields.)
    struct [[gnu::packed]] TaggedEntryAt {
        void *op_context;
        uint64_t flags;
        size_t len;
        void *buf;
        uint64_t data;
        uint64_t tag;
    };
    static_assert(sizeof(TaggedEntryAt) == sizeof(fi_cq_tagged_entry));
    // The formats are prefixes of the tagged one; each size a constant, so no call.
    void write_entry(uint8_t *dst, const Completion &c) const {
        switch (entry_size_) {
            case sizeof(fi_cq_tagged_entry): {  // the common case (MPI's): field by field,
                // so that an inlined push stores what it was given without a copy
                auto *e = reinterpret_cast<TaggedEntryAt *>(dst);
                e->op_context = c.op_context;
                e->flags = c.flags;
                e->len = c.len;
                e->buf = c.buf;
                e->data = c.data;
                e->tag = c.tag;
                break;
            }
            case sizeof(fi_cq_data_entry):
                std::memcpy(dst, &c, sizeof(fi_cq_data_entry));
                break;
            case sizeof(fi_cq_msg_entry):
                std::memcpy(dst, &c, sizeof(fi_cq_msg_entry));
                break;
            default:
                std::memcpy(dst, &c, sizeof(fi_cq_entry));
        }
    }

    Handle<fid_cq, Cq> handle_;
    uint32_t api_version_;
    fi_cq_format format_;
    size_t entry_size_;
    ProvStrError prov_strerror_;
    DataLock lock_;
    DomainSerial *domain_serial_ = nullptr;
    bool engines_shared_ = false;  // two engines, or one with locks: the lock for good
    static constexpr size_t kInitialRing = 1024;
    std::vector<Completion> ring_;  // grows when full: completions are never dropped
    size_t mask_;                   // ring_.size() - 1: the size is a power of two
    size_t head_ = 0, count_ = 0;
    std::deque<ErrorCompletion> errors_;
    // count_ plus the errors, kept under the lock and read without it: an empty poll
    // and a reader's own completions (push_direct) need no lock.
    std::atomic<size_t> pending_{0};
    // Reads in a row that found completions queued and so skipped progress (read()).
    static constexpr unsigned kSkips = 8;
    std::atomic<unsigned> skipped_{0};
    ErrorCompletion last_error_;  // err_data handed out by readerr stays valid until the next
    ProgressList progress_;
    RefCount refs_;
    ParentRef parent_;
    std::function<void()> on_close_;
    void (*notify_)(void *) = nullptr;
    void *notify_arg_ = nullptr;
    bool wakes_ = false;  // notify_ or wait_: a push has someone to tell
    fi_wait_obj wait_obj_;
    std::atomic<bool> signaled_{false};
    MemberWait wait_;  // last: a wait set may ask it about the members above
};

}  // namespace softnic

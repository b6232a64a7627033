// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Glue between libfabric's C fid objects and our C++ objects.
//
// Every object embeds a Handle whose first member is the libfabric fid struct the
// application sees, followed by a pointer back to the owner. The ops tables are
// static C functions that recover the owner and call into C++; `guarded` makes
// sure no exception ever crosses back into C.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <new>
#include <utility>

#include "common/log.hpp"
#include "common/not_supported.hpp"

namespace softnic {

template <class Fid, class Owner>
struct Handle {
    Fid fid{};
    Owner *owner = nullptr;
};

// Recover the owner from any fid whose handle was declared as Handle<Fid, Owner>.
// (Through an integer: the compiler cannot see that a `fid *` is the head of a Handle.)
template <class Owner, class Fid>
inline Owner *owner_of(Fid *f) {
    auto *h = reinterpret_cast<Handle<Fid, Owner> *>(reinterpret_cast<uintptr_t>(f));
    return h->owner;  // libfabric never hands us a null fid
}

template <class Owner, class Fid>
inline Owner *owner_of_fid(fid *f) {
    return owner_of<Owner>(reinterpret_cast<Fid *>(reinterpret_cast<uintptr_t>(f)));
}

// Run `fn`, turning allocation failure (the only exception we use) into -FI_ENOMEM.
template <class Fn>
inline auto guarded(Fn &&fn) noexcept -> decltype(fn()) {
    try {
        return std::forward<Fn>(fn)();
    } catch (const std::bad_alloc &) {
        SN_WARN(FI_LOG_CORE, "out of memory\n");
        return static_cast<decltype(fn())>(-FI_ENOMEM);
    } catch (...) {
        SN_WARN(FI_LOG_CORE, "unexpected internal error\n");
        return static_cast<decltype(fn())>(-FI_EOTHER);
    }
}

// Reference count for objects that others bind to (fi_close of a busy object is -FI_EBUSY).
class RefCount {
  public:
    // get() is relaxed: whoever takes a reference found the object under a lock that
    // already orders it. put() releases and busy() acquires, so that a closer that sees
    // no reference left also sees every access the holders made (an MR's bytes, its
    // fields) before it frees the object.
    void get() noexcept { n_.fetch_add(1, std::memory_order_relaxed); }
    void put() noexcept { n_.fetch_sub(1, std::memory_order_release); }
    bool busy() const noexcept { return n_.load(std::memory_order_acquire) != 0; }

  private:
    std::atomic<int> n_{0};
};

// An enum field of an application's struct may hold any bit pattern (a bad value is
// what argument checks exist for); loading it as the enum type is undefined behaviour,
// so checks read it as the integer it is.
template <class E>
int raw_enum(const E &field) {
    static_assert(sizeof(E) == sizeof(int));
    int v;
    std::memcpy(&v, &field, sizeof(v));
    return v;
}

// The reference an object holds on its parent (a domain or fabric) for as long as it
// lives, so that closing the parent first answers -FI_EBUSY instead of leaving the
// object pointing at freed state.
class ParentRef {
  public:
    ParentRef() = default;
    ParentRef(const ParentRef &) = delete;
    ParentRef &operator=(const ParentRef &) = delete;
    ~ParentRef() {
        if (r_) r_->put();
    }
    void hold(RefCount &r) noexcept {
        r.get();
        if (r_) r_->put();
        r_ = &r;
    }

  private:
    RefCount *r_ = nullptr;
};

// A fid ops table; members newer than these four stay null.
inline fi_ops make_fid_ops(int (*close)(fid *), int (*bind)(fid *, fid *, uint64_t),
                           int (*control)(fid *, int, void *),
                           int (*ops_open)(fid *, const char *, uint64_t, void **, void *)) {
    fi_ops o{};
    o.size = sizeof(fi_ops);
    o.close = close;
    o.bind = bind;
    o.control = control;
    o.ops_open = ops_open;
    return o;
}

// Operations that libfabric defines for every fid but most objects do not support.
inline constexpr auto fid_no_bind = NotSupported<int (*)(fid *, fid *, uint64_t)>::fn;
inline constexpr auto fid_no_control = NotSupported<int (*)(fid *, int, void *)>::fn;
inline constexpr auto fid_no_ops_open =
    NotSupported<int (*)(fid *, const char *, uint64_t, void **, void *)>::fn;

}  // namespace softnic

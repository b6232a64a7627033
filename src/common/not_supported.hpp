// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Operation-table entries for calls an object or a provider does not offer: each logs
// that it was called and returns -FI_ENOSYS (upstream leaves some of these NULL, and the
// caller crashes). One helper for both providers:
//
//   fi_ops_rma ops = {sizeof(ops), not_supported, not_supported, ...};
//   SN_NOT_SUPPORTED(o, read);          // one member of a table filled field by field
//   fi_ops_collective c = all_not_supported<fi_ops_collective>();  // a whole table
#pragma once

#include <rdma/fi_errno.h>

#include "common/log.hpp"

namespace softnic {

template <class F>
struct NotSupported;
template <class R, class... A>
struct NotSupported<R (*)(A...)> {
    static R fn(A...) {
        SN_WARN(FI_LOG_CORE, "operation not supported\n");
        return static_cast<R>(-FI_ENOSYS);
    }
};

// Converts to any operation-table function pointer type.
struct NotSupportedFn {
    template <class R, class... A>
    using Fn = R (*)(A...);
    template <class R, class... A>
    operator Fn<R, A...>() const {
        return NotSupported<Fn<R, A...>>::fn;
    }
};
inline constexpr NotSupportedFn not_supported{};

// A whole table of one kind (fi_ops_collective...) with every member not supported,
// however many members the libfabric being built against declares.
template <class T, class... F>
constexpr T all_not_supported(F... fns) {
    if constexpr (requires { T{sizeof(T), fns..., not_supported}; })
        return all_not_supported<T>(fns..., not_supported);
    else
        return T{sizeof(T), fns...};
}

}  // namespace softnic

#define SN_NOT_SUPPORTED(table, member) \
    (table).member = ::softnic::NotSupported<decltype((table).member)>::fn

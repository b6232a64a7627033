// Operation table entries for calls usnic does not offer: one function per signature
// that logs and returns -FI_ENOSYS (upstream left some of these NULL and crashed).
#pragma once

#include <rdma/fi_errno.h>

#include "common/log.hpp"

namespace softnic::usnic {

template <class F>
struct Refuse;
template <class R, class... A>
struct Refuse<R (*)(A...)> {
    static R fn(A...) {
        SN_WARN(FI_LOG_CORE, "operation not supported by usnic\n");
        return static_cast<R>(-FI_ENOSYS);
    }
};

}  // namespace softnic::usnic

#define USNIC_REFUSE(table, member) \
    (table).member = ::softnic::usnic::Refuse<decltype((table).member)>::fn

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The atomics the software Cassini offers (spec §6.4): which (op, datatype) pairs each
// kind of call takes, and the fi_query_atomic answer built on that table.
#pragma once

#include <rdma/fi_atomic.h>

#include <cstdint>

namespace softnic::cxi {

enum class AmoKind : uint8_t { kWrite, kFetch, kCompare };

// 0, -FI_EINVAL (no such op or datatype) or -FI_EOPNOTSUPP (a pair not in the table).
int amo_check(AmoKind kind, int op, int dt);

// fi_query_atomic and the fi_*valid calls.
int amo_query(int dt, int op, fi_atomic_attr *attr, uint64_t flags);

extern fi_ops_atomic atomic_ops;  // atomic_ops.cpp

}  // namespace softnic::cxi

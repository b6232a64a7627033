// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The arithmetic of libfabric atomics, on one element: what fi_atomic & co do to the
// target's memory. Providers decide which (op, datatype) pairs they offer; this file
// only knows how to compute them.
#pragma once

#include <rdma/fi_domain.h>

#include <cstddef>

namespace softnic::amo {

// Bytes of one element of `dt`; 0 for a datatype outside the point-to-point set.
size_t datatype_size(int dt);

// Whether `dt` / `op` are point-to-point atomic datatypes / operations at all.
bool datatype_known(int dt);
bool op_known(int op);

// Apply `op` to the element at `target` (any alignment). `operand` is the initiator's
// value (ignored by FI_ATOMIC_READ), `compare` the comparand of the FI_CSWAP family
// and the mask of FI_MSWAP; `fetched` (may be null) receives the previous value.
// Concurrent calls on the same element serialise. False when the pair cannot be
// computed (e.g. bitwise ops on floating point): nothing is touched then.
bool apply(int op, int dt, void *target, const void *operand, const void *compare, void *fetched);

}  // namespace softnic::amo

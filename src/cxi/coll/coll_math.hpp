// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The reductions of cxi collectives (fi_cxi(7), spec §8.8): which op x datatype pairs
// the hardware reduces, how many bytes a call carries, and the reduction itself.
#pragma once

#include <rdma/fi_atomic.h>

#include <cstddef>
#include <cstdint>

namespace softnic::cxi {

constexpr size_t kCollMaxBytes = 32;  // payload of one reduction

enum class CollKind : uint8_t { kBarrier, kBroadcast, kReduce, kAllreduce };

// The bytes `count` elements of `dt` take in a reduction by `op` (MINMAXLOC elements are
// the 32-byte cxip_coll_*minmax records); 0 when the pair is not reduced.
size_t coll_bytes(CollKind kind, int op, int dt, size_t count);

// acc = acc (op) in, element by element, for `count` elements of `dt`. Returns 0 or a
// reduction error (FI_CXI_ERRNO_RED_*): integer overflow of a sum, a NaN summed...
int coll_reduce(int op, int dt, uint8_t *acc, const uint8_t *in, size_t count);

// The floating-point environment a double sum rounds in. The hardware's opcode is chosen
// from the caller's rounding direction and flush-to-zero mode at the call; so is this
// (bits 0-1: nearest, upward, downward, toward zero; bit 2: flush to zero), carried in
// the call's shape (members in different modes mismatch) and applied while folding.
uint8_t fp_mode_now();
class FpModeScope {
  public:
    explicit FpModeScope(uint8_t mode);
    ~FpModeScope();
    FpModeScope(const FpModeScope &) = delete;
    FpModeScope &operator=(const FpModeScope &) = delete;

  private:
    int round_;
    unsigned ftz_;
};

// REPSUM and double SUM are folded in rank order by the root with a compensated sum, so
// every member gets the same bits whatever the arrival order.
struct RepSum {
    double sum = 0, comp = 0;
    void add(double x);
    double value() const { return sum + comp; }
};

}  // namespace softnic::cxi

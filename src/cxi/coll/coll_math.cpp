// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "cxi/coll/coll_math.hpp"

#include <rdma/fi_cxi_ext.h>

#include <cfenv>
#include <cmath>
#include <cstring>
#ifdef __SSE__
#include <xmmintrin.h>
#endif

#include "common/atomic_math.hpp"

namespace softnic::cxi {
namespace {

bool bitwise(int op) {
    return op == FI_BOR || op == FI_BAND || op == FI_BXOR;
}

bool small_int(int dt) {
    return dt == FI_INT8 || dt == FI_INT16 || dt == FI_INT32 || dt == FI_UINT8 || dt == FI_UINT16 ||
           dt == FI_UINT32 || dt == FI_UINT64;
}

bool reduced(int op, int dt) {
    if (small_int(dt)) return bitwise(op);
    if (dt == FI_INT64)
        return op == FI_MIN || op == FI_MAX || op == FI_SUM || op == FI_CXI_MINMAXLOC;
    if (dt == FI_DOUBLE)
        return op == FI_MIN || op == FI_MAX || op == FI_SUM || op == FI_CXI_MINMAXLOC ||
               op == FI_CXI_REPSUM;
    return false;
}

template <class T>
T load(const uint8_t *p) {
    T v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}
template <class T>
void store(uint8_t *p, T v) {
    std::memcpy(p, &v, sizeof(v));
}

int reduce_bits(int op, size_t bytes, uint8_t *acc, const uint8_t *in) {
    for (size_t i = 0; i < bytes; i++)
        acc[i] = op == FI_BOR ? acc[i] | in[i] : op == FI_BAND ? acc[i] & in[i] : acc[i] ^ in[i];
    return 0;
}

int reduce_int64(int op, int64_t &a, int64_t b) {
    switch (op) {
        case FI_MIN:
            a = std::min(a, b);
            return 0;
        case FI_MAX:
            a = std::max(a, b);
            return 0;
        default:
            if (__builtin_add_overflow(a, b, &a)) return FI_CXI_ERRNO_RED_INT_OVERFLOW;
            return 0;
    }
}

// MIN/MAX ignore NaN (minnum/maxnum); a sum of a NaN is invalid, of finite values to an
// infinity an overflow.
int reduce_double(int op, double &a, double b) {
    switch (op) {
        case FI_MIN:
            a = std::fmin(a, b);
            return 0;
        case FI_MAX:
            a = std::fmax(a, b);
            return 0;
        default: {
            if (std::isnan(a) || std::isnan(b)) return FI_CXI_ERRNO_RED_FLT_INVALID;
            double s = a + b;
            if (std::isnan(s)) return FI_CXI_ERRNO_RED_FLT_INVALID;  // inf - inf
            if (std::isinf(s) && !std::isinf(a) && !std::isinf(b))
                return FI_CXI_ERRNO_RED_FLT_OVERFLOW;
            a = s;
            return 0;
        }
    }
}

// MINMAXLOC: the smaller minimum (the lower index on a tie), the larger maximum.
void minmax_int(uint8_t *acc, const uint8_t *in) {
    auto a = load<cxip_coll_intminmax>(acc), b = load<cxip_coll_intminmax>(in);
    if (b.iminval < a.iminval || (b.iminval == a.iminval && b.iminidx < a.iminidx)) {
        a.iminval = b.iminval;
        a.iminidx = b.iminidx;
    }
    if (b.imaxval > a.imaxval || (b.imaxval == a.imaxval && b.imaxidx < a.imaxidx)) {
        a.imaxval = b.imaxval;
        a.imaxidx = b.imaxidx;
    }
    store(acc, a);
}

void minmax_flt(uint8_t *acc, const uint8_t *in) {
    auto a = load<cxip_coll_fltminmax>(acc), b = load<cxip_coll_fltminmax>(in);
    bool lower = std::isnan(a.fminval) || b.fminval < a.fminval ||
                 (b.fminval == a.fminval && b.fminidx < a.fminidx);
    if (!std::isnan(b.fminval) && lower) {
        a.fminval = b.fminval;
        a.fminidx = b.fminidx;
    }
    bool higher = std::isnan(a.fmaxval) || b.fmaxval > a.fmaxval ||
                  (b.fmaxval == a.fmaxval && b.fmaxidx < a.fmaxidx);
    if (!std::isnan(b.fmaxval) && higher) {
        a.fmaxval = b.fmaxval;
        a.fmaxidx = b.fmaxidx;
    }
    store(acc, a);
}

}  // namespace

size_t coll_bytes(CollKind kind, int op, int dt, size_t count) {
    if (kind == CollKind::kBarrier) return 0;
    if (dt < 0 || dt >= FI_DATATYPE_LAST) return 0;
    size_t each = amo::datatype_size(dt);
    if (kind != CollKind::kBroadcast) {
        if (!reduced(op, dt)) return 0;
        if (op == FI_CXI_MINMAXLOC) each = sizeof(cxip_coll_intminmax);
    }
    if (!each || !count || count > kCollMaxBytes / each) return 0;
    return count * each;
}

int coll_reduce(int op, int dt, uint8_t *acc, const uint8_t *in, size_t count) {
    if (small_int(dt)) return reduce_bits(op, count * amo::datatype_size(dt), acc, in);
    for (size_t i = 0; i < count; i++) {
        if (op == FI_CXI_MINMAXLOC) {
            (dt == FI_INT64 ? minmax_int : minmax_flt)(acc + 32 * i, in + 32 * i);
            continue;
        }
        int err = 0;
        if (dt == FI_INT64) {
            int64_t a = load<int64_t>(acc + 8 * i);
            err = reduce_int64(op, a, load<int64_t>(in + 8 * i));
            store(acc + 8 * i, a);
        } else {
            double a = load<double>(acc + 8 * i);
            err = reduce_double(op == FI_CXI_REPSUM ? FI_SUM : op, a, load<double>(in + 8 * i));
            store(acc + 8 * i, a);
        }
        if (err) return err;
    }
    return 0;
}

void RepSum::add(double x) {
    double t = sum + x;
    if (!std::isfinite(t)) {  // an infinity (given, or reached): nothing to compensate
        sum = t;
        comp = 0;
        return;
    }
    // Neumaier: keep what the addition rounded away.
    comp += std::fabs(sum) >= std::fabs(x) ? (sum - t) + x : (x - t) + sum;
    sum = t;
}

constexpr int kRoundings[4] = {FE_TONEAREST, FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};

uint8_t fp_mode_now() {
    int r = fegetround();
    uint8_t m = 0;
    for (uint8_t i = 0; i < 4; i++)
        if (kRoundings[i] == r) m = i;
#ifdef __SSE__
    if (_MM_GET_FLUSH_ZERO_MODE() == _MM_FLUSH_ZERO_ON) m |= 4;
#endif
    return m;
}

FpModeScope::FpModeScope(uint8_t mode) : round_(fegetround()), ftz_(0) {
    fesetround(kRoundings[mode & 3]);
#ifdef __SSE__
    ftz_ = _MM_GET_FLUSH_ZERO_MODE();
    _MM_SET_FLUSH_ZERO_MODE((mode & 4) ? _MM_FLUSH_ZERO_ON : _MM_FLUSH_ZERO_OFF);
#endif
}

FpModeScope::~FpModeScope() {
    fesetround(round_);
#ifdef __SSE__
    _MM_SET_FLUSH_ZERO_MODE(ftz_);
#endif
}

}  // namespace softnic::cxi

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "common/atomic_math.hpp"

#include <array>
#include <complex>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <type_traits>

#include "common/lock.hpp"

namespace softnic::amo {
namespace {

using i128 = __int128;
using u128 = unsigned __int128;

template <class T>
constexpr bool kWide = std::is_same_v<T, i128> || std::is_same_v<T, u128>;
template <class T>
constexpr bool kInt = std::is_integral_v<T> && !kWide<T>;
template <class T>
constexpr bool kReal = std::is_floating_point_v<T>;
template <class T>
constexpr bool kOrdered = kInt<T> || kReal<T>;
template <class T>
constexpr bool kArith = !kWide<T>;  // integers, reals and complex numbers

// Integer arithmetic wraps, as the hardware's does (no signed-overflow UB here).
template <class T>
T wrap_sum(T a, T b) {
    if constexpr (kInt<T>) {
        using U = std::make_unsigned_t<T>;
        return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else {
        return a + b;
    }
}
template <class T>
T wrap_prod(T a, T b) {
    if constexpr (kInt<T>) {
        using U =
            std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
        return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    } else {
        return a * b;
    }
}

// The new value of `cur` under `op`; false when `op` means nothing for T.
template <class T>
bool compute(int op, T &cur, const T &x, const T &c) {
    switch (op) {
        case FI_ATOMIC_READ:
            return true;
        case FI_ATOMIC_WRITE:
            cur = x;
            return true;
        case FI_CSWAP:
            if (c == cur) cur = x;
            return true;
        case FI_CSWAP_NE:
            if (c != cur) cur = x;
            return true;
        default:
            break;
    }
    if constexpr (kOrdered<T>) {
        switch (op) {
            case FI_MIN:
                if (x < cur) cur = x;
                return true;
            case FI_MAX:
                if (x > cur) cur = x;
                return true;
            case FI_CSWAP_LE:
                if (c <= cur) cur = x;
                return true;
            case FI_CSWAP_LT:
                if (c < cur) cur = x;
                return true;
            case FI_CSWAP_GE:
                if (c >= cur) cur = x;
                return true;
            case FI_CSWAP_GT:
                if (c > cur) cur = x;
                return true;
            default:
                break;
        }
    }
    if constexpr (kArith<T>) {
        if (op == FI_SUM) {
            cur = wrap_sum(cur, x);
            return true;
        }
        if (op == FI_PROD) {
            cur = wrap_prod(cur, x);
            return true;
        }
    }
    if constexpr (kInt<T>) {
        switch (op) {
            case FI_LOR:
                cur = T(cur || x);
                return true;
            case FI_LAND:
                cur = T(cur && x);
                return true;
            case FI_LXOR:
                cur = T((cur != 0) != (x != 0));
                return true;
            case FI_BOR:
                cur = T(cur | x);
                return true;
            case FI_BAND:
                cur = T(cur & x);
                return true;
            case FI_BXOR:
                cur = T(cur ^ x);
                return true;
            case FI_MSWAP:
                cur = T((x & c) | (cur & ~c));
                return true;
            default:
                break;
        }
    }
    return false;
}

// Atomics on one cache line serialise on one of these; distinct lines rarely collide.
std::array<SpinLock, 256> stripes;

SpinLock &stripe(const void *p) {
    return stripes[(reinterpret_cast<uintptr_t>(p) >> 6) % stripes.size()];
}

template <class T>
bool run(int op, void *target, const void *operand, const void *compare, void *fetched) {
    T x{}, c{}, cur;
    if (operand && op != FI_ATOMIC_READ) std::memcpy(&x, operand, sizeof(T));
    if (compare) std::memcpy(&c, compare, sizeof(T));
    SpinGuard g(stripe(target));
    std::memcpy(&cur, target, sizeof(T));
    T old = cur;
    if (!compute(op, cur, x, c)) return false;
    if (std::memcmp(&cur, &old, sizeof(T))) std::memcpy(target, &cur, sizeof(T));
    if (fetched) std::memcpy(fetched, &old, sizeof(T));
    return true;
}

}  // namespace

bool datatype_known(int dt) {
    return dt >= FI_INT8 && dt <= FI_UINT128;
}

bool op_known(int op) {
    return op >= FI_MIN && op < FI_ATOMIC_OP_LAST;
}

namespace {

// Per datatype, in enum order: its element size and the arithmetic on it (none for
// long double, whose padding bytes are undefined).
struct TypeOps {
    size_t size;
    bool (*run)(int op, void *target, const void *operand, const void *compare, void *fetched);
};
constexpr TypeOps kTypes[] = {
    {1, run<int8_t>},
    {1, run<uint8_t>},
    {2, run<int16_t>},
    {2, run<uint16_t>},
    {4, run<int32_t>},
    {4, run<uint32_t>},
    {8, run<int64_t>},
    {8, run<uint64_t>},
    {4, run<float>},
    {8, run<double>},
    {8, run<std::complex<float>>},
    {16, run<std::complex<double>>},
    {sizeof(long double), nullptr},
    {2 * sizeof(long double), nullptr},
    {16, run<i128>},
    {16, run<u128>},
};
static_assert(std::size(kTypes) == FI_UINT128 + 1, "one entry per datatype");

}  // namespace

size_t datatype_size(int dt) {
    return datatype_known(dt) ? kTypes[dt].size : 0;
}

bool apply(int op, int dt, void *target, const void *operand, const void *compare, void *fetched) {
    if (!datatype_known(dt) || !kTypes[dt].run) return false;
    return kTypes[dt].run(op, target, operand, compare, fetched);
}

}  // namespace softnic::amo

#include "common/atomic_math.hpp"

#include <array>
#include <complex>
#include <cstdint>
#include <cstring>
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

size_t datatype_size(int dt) {
    switch (dt) {
        case FI_INT8:
        case FI_UINT8:
            return 1;
        case FI_INT16:
        case FI_UINT16:
            return 2;
        case FI_INT32:
        case FI_UINT32:
        case FI_FLOAT:
            return 4;
        case FI_INT64:
        case FI_UINT64:
        case FI_DOUBLE:
        case FI_FLOAT_COMPLEX:
            return 8;
        case FI_DOUBLE_COMPLEX:
        case FI_INT128:
        case FI_UINT128:
            return 16;
        case FI_LONG_DOUBLE:
            return sizeof(long double);
        case FI_LONG_DOUBLE_COMPLEX:
            return 2 * sizeof(long double);
        default:
            return 0;
    }
}

bool apply(int op, int dt, void *target, const void *operand, const void *compare, void *fetched) {
    switch (dt) {
        case FI_INT8:
            return run<int8_t>(op, target, operand, compare, fetched);
        case FI_UINT8:
            return run<uint8_t>(op, target, operand, compare, fetched);
        case FI_INT16:
            return run<int16_t>(op, target, operand, compare, fetched);
        case FI_UINT16:
            return run<uint16_t>(op, target, operand, compare, fetched);
        case FI_INT32:
            return run<int32_t>(op, target, operand, compare, fetched);
        case FI_UINT32:
            return run<uint32_t>(op, target, operand, compare, fetched);
        case FI_INT64:
            return run<int64_t>(op, target, operand, compare, fetched);
        case FI_UINT64:
            return run<uint64_t>(op, target, operand, compare, fetched);
        case FI_FLOAT:
            return run<float>(op, target, operand, compare, fetched);
        case FI_DOUBLE:
            return run<double>(op, target, operand, compare, fetched);
        case FI_FLOAT_COMPLEX:
            return run<std::complex<float>>(op, target, operand, compare, fetched);
        case FI_DOUBLE_COMPLEX:
            return run<std::complex<double>>(op, target, operand, compare, fetched);
        case FI_INT128:
            return run<i128>(op, target, operand, compare, fetched);
        case FI_UINT128:
            return run<u128>(op, target, operand, compare, fetched);
        default:
            return false;  // long double is left out: its padding bytes are undefined
    }
}

}  // namespace softnic::amo

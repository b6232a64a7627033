// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Copies of a few dozen bytes without a call into the C library: a packet's header and
// an 8-byte payload cost less as overlapping word moves than as memcpy's call and its
// size dispatch. Longer copies still go to memcpy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace softnic {

constexpr size_t kShortCopyMax = 32;

// n <= kShortCopyMax, and dst and src do not overlap (as with memcpy): never a call.
inline void copy_upto32(void *dst, const void *src, size_t n) {
    auto *d = static_cast<uint8_t *>(dst);
    auto *s = static_cast<const uint8_t *>(src);
    if (n - 8 <= 8) {  // 8 to 16 bytes: the first and the last word
        uint64_t a, b;
        std::memcpy(&a, s, 8);
        std::memcpy(&b, s + n - 8, 8);
        std::memcpy(d, &a, 8);
        std::memcpy(d + n - 8, &b, 8);
    } else if (n - 17 <= 15) {  // 17 to 32 bytes: the first and the last 16
        struct Pair {
            uint64_t lo, hi;
        } a, b;
        std::memcpy(&a, s, 16);
        std::memcpy(&b, s + n - 16, 16);
        std::memcpy(d, &a, 16);
        std::memcpy(d + n - 16, &b, 16);
    } else if (n - 4 <= 3) {  // 4 to 7 bytes
        uint32_t a, b;
        std::memcpy(&a, s, 4);
        std::memcpy(&b, s + n - 4, 4);
        std::memcpy(d, &a, 4);
        std::memcpy(d + n - 4, &b, 4);
    } else if (n) {  // 1 to 3 bytes
        d[0] = s[0];
        d[n - 1] = s[n - 1];
        d[n / 2] = s[n / 2];
    }
}

// Any length: short ones as above, the rest through memcpy.
inline void short_copy(void *dst, const void *src, size_t n) {
    if (n <= kShortCopyMax)
        copy_upto32(dst, src, n);
    else
        std::memcpy(dst, src, n);
}

}  // namespace softnic

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Copies of a few dozen bytes without a call into the C library: a packet's header and
// an 8-byte payload cost less as overlapping word moves than as memcpy's call and its
// size dispatch. Longer or shorter copies still go to memcpy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace softnic {

// dst and src must not overlap (as with memcpy).
inline void short_copy(void *dst, const void *src, size_t n) {
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
    } else if (n) {
        std::memcpy(d, s, n);
    }
}

}  // namespace softnic

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* The soak programs' message bytes: each a function of a 64-bit key (source,
 * destination, sequence) and the byte's offset, so that a receiver can check every one. */
#ifndef SOAK_PATTERN_H
#define SOAK_PATTERN_H

#include <stdint.h>

/* splitmix64's finaliser: consecutive keys give unrelated values. */
static inline uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static inline unsigned char body_byte(uint64_t key, uint32_t i) {
    return (unsigned char)(mix(key + i / 8) >> (8 * (i % 8)));
}

#endif

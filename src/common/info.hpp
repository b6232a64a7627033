// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// fi_getinfo hints matching shared by the providers: each provider builds the infos it
// can offer, and these checks decide which of them satisfy the application's hints.
#pragma once

#include <rdma/fabric.h>

namespace softnic::info {

// True when `offer` satisfies `hints` (null hints match everything). Logs the reason
// for a mismatch at FI_LOG_INFO, as users debug fi_getinfo with FI_LOG_LEVEL=info.
bool matches(const fi_info &offer, const fi_info *hints, uint32_t api_version);

// Copy of `offer` narrowed to what the hints asked for (sizes, op flags, order).
// Returns nullptr when out of memory. The result is freed with fi_freeinfo.
fi_info *narrow(const fi_info &offer, const fi_info *hints);

// Helpers for parsing node/service strings.
bool parse_uint(const char *s, unsigned long &out);

}  // namespace softnic::info

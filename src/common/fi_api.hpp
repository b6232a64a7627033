// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The one place that knows which libfabric API the plugins are built for. The build
// takes whichever libfabric pkg-config finds (Debian's 1.17, or a 2.x); everything that
// differs between the two APIs is named here, so the providers read the same either way.
//
// - The API version a provider declares is the headers' own: libfabric 2.x ignores
//   providers that declare less than the application asks for.
// - 2.x dropped or deprecated names that 1.x applications still pass (FI_MR_BASIC,
//   FI_LOCAL_MR...); their bits keep their meaning, so they are spelt out here without
//   the headers' deprecation warnings.
// - 2.x appended src_addr to fi_cq_err_entry: an application built for 1.x hands in the
//   shorter struct, so what is copied out depends on the caller's API version.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>

#include <cstddef>
#include <cstdint>

namespace softnic {

constexpr uint32_t kBuiltApi = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);

// Removed or deprecated in 2.x; the values of 1.x.
constexpr int kMrUnspec = 0;
constexpr int kMrBasic = 1 << 0;
constexpr int kMrScalable = 1 << 1;
constexpr uint64_t kLocalMrMode = 1ULL << 55;  // FI_LOCAL_MR
constexpr uint64_t kRegMrFlag = 1ULL << 59;    // FI_REG_MR (asynchronous registration)
constexpr uint64_t kOrderNone = 0;

// Per-entry authorization keys arrived in 1.20 (fi_av_insert_auth_key): the flag and
// the domain's auth_key_size that asks for them, spelt out so 1.17 builds parse them too.
#define SOFTNIC_HAS_AV_AUTH_KEY (FI_MAJOR_VERSION > 1 || FI_MINOR_VERSION >= 20)
constexpr uint64_t kAuthKeyFlag = 1ULL << 57;  // FI_AUTH_KEY
constexpr size_t kAvAuthKey = SIZE_MAX;        // FI_AV_AUTH_KEY

// Bytes of fi_cq_err_entry that a caller of API `api` owns.
constexpr size_t cq_err_entry_size(uint32_t api) {
#if FI_MAJOR_VERSION >= 2
    if (FI_MAJOR(api) < 2) return offsetof(fi_cq_err_entry, src_addr);
#else
    (void)api;
#endif
    return sizeof(fi_cq_err_entry);
}

}  // namespace softnic

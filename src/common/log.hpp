// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Logging through libfabric's fi_log, attributed to the provider that loaded us.
#pragma once

#include <rdma/fabric.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

namespace softnic {

// Each plugin links its own copy of src/common, so this is per provider.
const fi_provider *log_provider();
void set_log_provider(const fi_provider *prov);

}  // namespace softnic

#define SN_LOG(level, subsys, ...)                                                           \
    do {                                                                                     \
        if (fi_log_enabled(softnic::log_provider(), level, subsys))                          \
            fi_log(softnic::log_provider(), level, subsys, __func__, __LINE__, __VA_ARGS__); \
    } while (0)

#define SN_WARN(subsys, ...) SN_LOG(FI_LOG_WARN, subsys, __VA_ARGS__)
#define SN_INFO(subsys, ...) SN_LOG(FI_LOG_INFO, subsys, __VA_ARGS__)
#define SN_DBG(subsys, ...) SN_LOG(FI_LOG_DEBUG, subsys, __VA_ARGS__)

// Validation helper: log why and return the error code.
#define SN_REJECT(code, subsys, ...)  \
    do {                              \
        SN_WARN(subsys, __VA_ARGS__); \
        return (code);                \
    } while (0)

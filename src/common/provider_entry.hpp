// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A plugin's entry point, the same for both providers: libfabric dlopen()s the plugin,
// calls fi_prov_ini and gets a provider whose getinfo runs guarded (no exception
// crosses into C) and whose parameters were defined and read before any call.
//
//   constexpr ProviderHooks kHooks{"cxi", kProviderVersion, getinfo, fabric_open, init};
//   extern "C" SOFTNIC_PLUGIN_ENTRY fi_provider *fi_prov_ini() {
//       return ProviderEntry<kHooks>::init();
//   }
#pragma once

#include <rdma/providers/fi_prov.h>

#include "common/fi_api.hpp"
#include "common/fid.hpp"
#include "common/log.hpp"

#define SOFTNIC_PLUGIN_ENTRY __attribute__((visibility("default")))

namespace softnic {

struct ProviderHooks {
    const char *name;
    uint32_t version;
    int (*getinfo)(uint32_t version, const char *node, const char *service, uint64_t flags,
                   const fi_info *hints, fi_info **info);
    int (*fabric)(fi_fabric_attr *attr, fid_fabric **fabric, void *context);
    void (*init)(const fi_provider *prov);  // defines and reads the provider's parameters
};

template <const ProviderHooks &H>
struct ProviderEntry {
    static int getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
                       const fi_info *hints, fi_info **info) {
        return guarded([&] { return H.getinfo(version, node, service, flags, hints, info); });
    }
    static void cleanup() {}
    // Not const: the core keeps its own bookkeeping in `context`.
    static inline fi_provider provider = {H.version, kBuiltApi, {},     H.name,
                                          getinfo,   H.fabric,  cleanup};
    static fi_provider *init() {
        set_log_provider(&provider);
        H.init(&provider);
        return &provider;
    }
};

}  // namespace softnic

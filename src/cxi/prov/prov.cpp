// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Plugin entry point: libfabric dlopen()s libcxi-fi.so and calls fi_prov_ini.
#include "common/provider_entry.hpp"
#include "cxi/obj/fabric.hpp"
#include "cxi/prov/caps.hpp"
#include "cxi/prov/env.hpp"
#include "cxi/prov/getinfo.hpp"

namespace softnic::cxi {
namespace {

void init(const fi_provider *prov) {
    define_params(prov);
    load_env(prov);
}

constexpr ProviderHooks kHooks{"cxi", kProviderVersion, getinfo, fabric_open, init};

}  // namespace
}  // namespace softnic::cxi

extern "C" SOFTNIC_PLUGIN_ENTRY fi_provider *fi_prov_ini(void) {
    return softnic::ProviderEntry<softnic::cxi::kHooks>::init();
}

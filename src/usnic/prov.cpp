// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Plugin entry point: libfabric dlopen()s libusnic-fi.so and calls fi_prov_ini.
#include "common/provider_entry.hpp"
#include "usnic/caps.hpp"
#include "usnic/fabric.hpp"
#include "usnic/getinfo.hpp"
#include "usnic/params.hpp"

namespace softnic::usnic {
namespace {

void init(const fi_provider *prov) {
    define_params(prov);
    load_params(prov);
}

constexpr ProviderHooks kHooks{"usnic", kProviderVersion, getinfo, fabric_open, init};

}  // namespace
}  // namespace softnic::usnic

extern "C" SOFTNIC_PLUGIN_ENTRY fi_provider *fi_prov_ini(void) {
    return softnic::ProviderEntry<softnic::usnic::kHooks>::init();
}

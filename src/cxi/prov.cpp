// Plugin entry point: libfabric dlopen()s libcxi-fi.so and calls fi_prov_ini.
#include "common/provider_entry.hpp"
#include "cxi/caps.hpp"
#include "cxi/env.hpp"
#include "cxi/fabric.hpp"
#include "cxi/getinfo.hpp"

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

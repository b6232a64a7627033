// Plugin entry point: libfabric dlopen()s libcxi-fi.so and calls fi_prov_ini.
#include <rdma/providers/fi_prov.h>

#include "common/fi_api.hpp"
#include "common/log.hpp"
#include "cxi/caps.hpp"
#include "cxi/env.hpp"
#include "cxi/fabric.hpp"
#include "cxi/getinfo.hpp"

namespace softnic::cxi {
namespace {

int prov_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
                 const fi_info *hints, fi_info **info) {
    return guarded([&] { return getinfo(version, node, service, flags, hints, info); });
}

void prov_cleanup() {}

// Not const: the core keeps its own bookkeeping in `context`.
fi_provider provider = {
    kProviderVersion, kBuiltApi, {}, "cxi", prov_getinfo, fabric_open, prov_cleanup,
};

}  // namespace
}  // namespace softnic::cxi

extern "C" __attribute__((visibility("default"))) fi_provider *fi_prov_ini(void) {
    using namespace softnic::cxi;
    softnic::set_log_provider(&provider);
    define_params(&provider);
    load_env(&provider);
    return &provider;
}

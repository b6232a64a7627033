// Plugin entry point: libfabric dlopen()s libusnic-fi.so and calls fi_prov_ini.
#include <rdma/providers/fi_prov.h>

#include "common/fi_api.hpp"
#include "common/fid.hpp"
#include "common/log.hpp"
#include "usnic/caps.hpp"
#include "usnic/fabric.hpp"
#include "usnic/getinfo.hpp"
#include "usnic/params.hpp"

namespace softnic::usnic {
namespace {

int prov_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
                 const fi_info *hints, fi_info **info) {
    return guarded([&] { return getinfo(version, node, service, flags, hints, info); });
}

void prov_cleanup() {}

// Not const: the core keeps its own bookkeeping in `context`.
fi_provider provider = {
    kProviderVersion, kBuiltApi, {}, "usnic", prov_getinfo, fabric_open, prov_cleanup,
};

}  // namespace
}  // namespace softnic::usnic

extern "C" __attribute__((visibility("default"))) fi_provider *fi_prov_ini(void) {
    using namespace softnic::usnic;
    softnic::set_log_provider(&provider);
    define_params(&provider);
    load_params(&provider);
    return &provider;
}

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "cxi/prov/auth.hpp"

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#include "common/log.hpp"
#include "cxi/prov/env.hpp"

namespace softnic::cxi {
namespace {

std::vector<std::string> split(const char *s) {
    std::vector<std::string> out;
    if (!s) return out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ','))
        out.push_back(item);
    return out;
}

bool to_number(const std::string &s, unsigned long max, unsigned long &out) {
    if (s.empty() || s[0] == '-') return false;
    char *end = nullptr;
    out = std::strtoul(s.c_str(), &end, 0);
    return *end == '\0' && out <= max;
}

// Step 1 of spec §3.2: this device's entry of the launcher's SLINGSHOT_* variables.
bool slingshot_key(const SoftNic &nic, AuthKey &out) {
    auto vnis = split(std::getenv("SLINGSHOT_VNIS"));
    auto devs = split(std::getenv("SLINGSHOT_DEVICES"));
    auto svcs = split(std::getenv("SLINGSHOT_SVC_IDS"));
    if (vnis.empty() || devs.empty() || svcs.empty()) return false;
    for (size_t i = 0; i < devs.size(); i++) {
        unsigned long svc = 0, vni = 0;
        if (devs[i] != nic.name) continue;
        if (i >= svcs.size() || !to_number(svcs[i], 0xffffffffUL, svc) ||
            !to_number(vnis[0], 0xffff, vni)) {
            SN_WARN(FI_LOG_CORE, "%s: malformed SLINGSHOT_* entry ignored\n", nic.name.c_str());
            return false;
        }
        out = AuthKey{uint32_t(svc), uint16_t(vni)};
        return true;
    }
    return false;
}

}  // namespace

int read_auth_key(const void *key, size_t size, AuthKey &out) {
    if (!key && !size) return 0;
    if (!key || size != sizeof(cxi_auth_key)) return -FI_EINVAL;
    cxi_auth_key k;
    std::memcpy(&k, key, sizeof(k));
    out = AuthKey{k.svc_id, k.vni};
    return 1;
}

bool default_auth_key(const SoftNic &nic, AuthKey &out) {
    if (slingshot_key(nic, out)) return true;
    std::vector<cxil::Service> svcs;
    std::string why;
    if (cxil::Registry(nic.name).load(svcs, &why) != 0) {
        SN_WARN(FI_LOG_CORE, "%s: service registry unusable (%s)\n", nic.name.c_str(), why.c_str());
        return false;
    }
    return cxil::pick_default(svcs, cxil::Caller::self(), uint16_t(env().default_vni), out.svc_id,
                              out.vni);
}

int check_auth_key(const SoftNic &nic, const AuthKey &key, cxil::Service *out) {
    cxil::Service svc;
    if (cxil::get_svc(cxil::Registry(nic.name), key.svc_id, svc) != 0)
        SN_REJECT(-FI_EINVAL, FI_LOG_CORE, "%s: no CXI service %u\n", nic.name.c_str(), key.svc_id);
    if (!svc.desc.enable)
        SN_REJECT(-FI_EINVAL, FI_LOG_CORE, "%s: CXI service %u is disabled\n", nic.name.c_str(),
                  key.svc_id);
    if (!cxil::is_member(svc, cxil::Caller::self()))
        SN_REJECT(-FI_EPERM, FI_LOG_CORE, "%s: this user may not use CXI service %u\n",
                  nic.name.c_str(), key.svc_id);
    if (!cxil::vni_allowed(svc, key.vni))
        SN_REJECT(-FI_EINVAL, FI_LOG_CORE, "%s: CXI service %u does not allow VNI %u\n",
                  nic.name.c_str(), key.svc_id, key.vni);
    if (out) *out = svc;
    return 0;
}

bool tclass_permitted(const cxil::Service &svc, uint32_t tclass) {
    cxi_traffic_class tc = CXI_TC_BEST_EFFORT;  // UNSPEC, BEST_EFFORT, SCAVENGER
    if (tclass == FI_TC_LOW_LATENCY) tc = CXI_TC_LOW_LATENCY;
    if (tclass == FI_TC_DEDICATED_ACCESS) tc = CXI_TC_DEDICATED_ACCESS;
    if (tclass == FI_TC_BULK_DATA) tc = CXI_TC_BULK_DATA;
    return cxil::tc_allowed(svc, tc);
}

ServiceHold::ServiceHold(const SoftNic &nic, const cxil::Service &svc)
    : svc_(svc), usage_(nic.name) {}

ServiceHold::~ServiceHold() = default;

int ServiceHold::take(cxi_rsrc_type type, unsigned n) {
    unsigned max = svc_.desc.resource_limits ? svc_.desc.limits.type[type].max : 0;
    if (svc_.desc.resource_limits && max == 0)
        SN_REJECT(-FI_ENOSPC, FI_LOG_DOMAIN, "CXI service %u allows no %s\n", svc_.id(),
                  cxil::rsrc_name(type));
    if (usage_.take(svc_.id(), type, n, max) != 0)
        SN_REJECT(-FI_ENOSPC, FI_LOG_DOMAIN, "CXI service %u: all %u %s are in use\n", svc_.id(),
                  max, cxil::rsrc_name(type));
    return 0;
}

void ServiceHold::give(cxi_rsrc_type type, unsigned n) {
    usage_.give(svc_.id(), type, n);
}

}  // namespace softnic::cxi

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "cxi/prov/nic.hpp"

#include "common/log.hpp"
#include "cxi/prov/env.hpp"

namespace softnic::cxi {

const std::vector<SoftNic> &soft_nics() {
    static const std::vector<SoftNic> nics =
        cxil::discover(env().soft_nics, env().device_name,
                       [](const std::string &why) { SN_WARN(FI_LOG_CORE, "%s\n", why.c_str()); });
    return nics;
}

const SoftNic *find_nic(const std::string &name) {
    for (const auto &n : soft_nics())
        if (n.name == name) return &n;
    return nullptr;
}

const SoftNic *find_nic_by_addr(uint32_t addr) {
    for (const auto &n : soft_nics())
        if (n.addr == addr) return &n;
    return nullptr;
}

}  // namespace softnic::cxi

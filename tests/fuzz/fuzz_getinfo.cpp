// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Strings an application or a launcher hands the providers: fi_getinfo's node and
// service (with and without FI_SOURCE), and for cxi the SLINGSHOT_DEVICES,
// SLINGSHOT_SVC_IDS and SLINGSHOT_VNIS values behind the default authorization key.
// Input: a flags byte, then NUL-separated fields. Anything may come back but a crash.
#include <string>
#include <vector>

#include "fuzz_endpoint.hpp"

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    fuzz::use_build_plugins();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const uint8_t flags = data[0];
    std::vector<std::string> f(5);
    size_t k = 0;
    for (size_t i = 1; i < size && k < f.size(); i++) {
        if (data[i] == 0)
            k++;
        else
            f[k].push_back(char(data[i]));
    }
    const char *vars[] = {"SLINGSHOT_DEVICES", "SLINGSHOT_SVC_IDS", "SLINGSHOT_VNIS"};
    for (int v = 0; v < 3; v++) {
        if (flags & (8 << v))
            setenv(vars[v], f[2 + v].c_str(), 1);
        else
            unsetenv(vars[v]);
    }
    fi_info *hints = fi_allocinfo();
    hints->fabric_attr->prov_name = strdup(flags & 1 ? "usnic" : "cxi");
    fi_info *info = nullptr;
    const char *node = flags & 2 ? nullptr : f[0].c_str();
    const char *service = flags & 4 ? nullptr : f[1].c_str();
    if (node || service) {
        uint64_t source = flags & 0x40 ? FI_SOURCE : 0;
        if (fi_getinfo(FI_VERSION(1, 15), node, service, source, hints, &info) == 0)
            fi_freeinfo(info);
    }
    fi_freeinfo(hints);
    return 0;
}

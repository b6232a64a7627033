// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The YAML service description cxi_service create reads (libyaml event parser).
#pragma once

#include <libcxi/libcxi.h>

#include <string>

namespace softnic::tools {

struct ServiceSpec {
    cxi_svc_desc desc{};
    bool exclusive_cp = false;
    uint16_t vni_min = 0, vni_max = 0;  // a VNI range instead of a list
    bool has_range = false;
    unsigned netns = 0;
    bool has_netns = false;
};

// Parse `path`; false with `err` set to the message cxi_service prints.
bool parse_service_yaml(const std::string &path, ServiceSpec &out, std::string &err);

}  // namespace softnic::tools

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// usnic's own variables (upstream reads none; these are softnic's):
// FI_USNIC_IFACES picks the interfaces, FI_USNIC_FAULTS injects faults on MSG/RDM.
#pragma once

#include <rdma/providers/fi_prov.h>

#include "transport/udp/udp_endpoint.hpp"

namespace softnic::usnic {

struct Device;

void define_params(const fi_provider *prov);
void load_params(const fi_provider *prov);
// The reliable layer's settings for endpoints on `dev`.
transport::udp::UdpConfig udp_config(const Device &dev);

}  // namespace softnic::usnic

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Network distance of a destination from a device, asked of the kernel's routing
// table (what the VIC's get_distance extension reports).
#pragma once

#include <cstdint>

namespace softnic::usnic {

struct Device;

// -1: unreachable, or reached through another interface; 0: on the device's link
// (or the device itself);
// 1: through a gateway. Answers are cached for 120 s, as upstream does.
int route_distance(const Device &dev, uint32_t dst_be);

}  // namespace softnic::usnic

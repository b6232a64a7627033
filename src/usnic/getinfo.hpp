// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// fi_getinfo for usnic: one DGRAM, one MSG and one RDM info per device, filtered by
// the hints with upstream's rules and codes.
#pragma once

#include <rdma/fabric.h>

namespace softnic::usnic {

int getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
            const fi_info *hints, fi_info **info);

}  // namespace softnic::usnic

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// fi_getinfo for cxi: the infos each soft NIC offers, filtered by the hints.
#pragma once

#include <rdma/fabric.h>

namespace softnic::cxi {

int getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
            const fi_info *hints, fi_info **info);

}  // namespace softnic::cxi

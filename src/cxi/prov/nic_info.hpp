// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// info->nic for a soft NIC: device, link and the cxip_nic_attr provider attributes.
#pragma once

#include <rdma/fabric.h>

#include "cxi/prov/nic.hpp"

namespace softnic::cxi {

// A heap-allocated fid_nic that fi_dupinfo (FI_DUP) and fi_freeinfo (close) handle.
fid_nic *make_nic_info(const SoftNic &nic, uint32_t default_rgroup, uint16_t default_vni);

}  // namespace softnic::cxi

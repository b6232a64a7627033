// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Domain extensions: fi_open_ops(FI_CXI_DOM_OPS_*) and fi_control on the domain.
#pragma once

#include <rdma/fabric.h>

namespace softnic::cxi {

int domain_ops_open(fid *f, const char *name, uint64_t flags, void **ops, void *context);
int domain_control(fid *f, int command, void *arg);

}  // namespace softnic::cxi

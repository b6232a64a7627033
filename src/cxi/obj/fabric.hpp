// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The cxi fabric object and the provider entry points.
#pragma once

#include <rdma/fabric.h>

#include "common/fid.hpp"

namespace softnic::cxi {

class Fabric {
  public:
    explicit Fabric(void *context);
    fid_fabric *fid() { return &handle_.fid; }
    RefCount &refs() { return refs_; }

  private:
    Handle<fid_fabric, Fabric> handle_;
    RefCount refs_;
};

int fabric_open(fi_fabric_attr *attr, fid_fabric **fabric, void *context);
const char *prov_strerror(int prov_errno);

}  // namespace softnic::cxi

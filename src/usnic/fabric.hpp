// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The usnic fabric: one device; its extension ops (getinfo v1/v2), EQs, passive
// endpoints, fi_trywait; the control thread for connection management.
#pragma once

#include <rdma/fabric.h>

#include <memory>
#include <mutex>

#include "common/fid.hpp"
#include "usnic/devices.hpp"
#include "usnic/poller.hpp"

namespace softnic::usnic {

class Fabric {
  public:
    Fabric(const Device &dev, void *context);
    fid_fabric *fid() { return &handle_.fid; }
    static Fabric *of(fid_fabric *f) { return owner_of<Fabric>(f); }
    const Device &device() const { return dev_; }
    RefCount &refs() { return refs_; }
    Poller &poller();  // started on first use

  private:
    Handle<fid_fabric, Fabric> handle_;
    Device dev_;
    RefCount refs_;
    std::mutex lock_;
    std::unique_ptr<Poller> poller_;
};

int fabric_open(fi_fabric_attr *attr, fid_fabric **fabric, void *context);

}  // namespace softnic::usnic

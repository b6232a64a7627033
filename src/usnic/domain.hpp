// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The usnic domain: one device's resources (AVs, CQs, endpoints, registrations).
#pragma once

#include <rdma/fi_domain.h>

#include "common/eq.hpp"
#include "common/fid.hpp"
#include "usnic/fabric.hpp"

namespace softnic::usnic {

class Domain {
  public:
    Domain(Fabric *fabric, const fi_info &info, void *context);
    ~Domain();
    Domain(const Domain &) = delete;
    Domain &operator=(const Domain &) = delete;
    fid_domain *fid() { return &handle_.fid; }
    static Domain *of(fid_domain *f) { return owner_of<Domain>(f); }
    Fabric &fabric() { return *fabric_; }
    const Device &device() const { return fabric_->device(); }
    uint32_t addr_format() const { return addr_format_; }
    uint32_t api_version() const { return api_version_; }
    RefCount &refs() { return refs_; }
    int bind(::fid *f, uint64_t flags);
    Eq *eq() const { return eq_; }

  private:
    Handle<fid_domain, Domain> handle_;
    Fabric *fabric_;
    uint32_t addr_format_;
    uint32_t api_version_;
    Eq *eq_ = nullptr;
    RefCount refs_;
};

int domain_open(Fabric *fabric, fi_info *info, fid_domain **dom, void *context);

}  // namespace softnic::usnic

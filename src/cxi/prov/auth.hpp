// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Authorization keys (spec §3): which CXI service and VNI a domain or endpoint uses,
// checked against the host's service registry, and the service's resource accounting.
#pragma once

#include <rdma/fi_cxi_ext.h>

#include <memory>

#include "cxi/prov/nic.hpp"
#include "cxil/service.hpp"
#include "cxil/usage.hpp"

namespace softnic::cxi {

struct AuthKey {
    uint32_t svc_id = 0;
    uint16_t vni = 0;
};

// An (auth_key, auth_key_size) pair: 0 when none is given, 1 when `out` was read,
// -FI_EINVAL when malformed (a size other than 8, a key without a size or the reverse).
int read_auth_key(const void *key, size_t size, AuthKey &out);
// The key this process gets on `nic` without asking (spec §3.2): the SLINGSHOT_*
// variables, else the best service of the registry; false when there is none.
bool default_auth_key(const SoftNic &nic, AuthKey &out);
// 0 when this process may use `key` on `nic` (and `svc` is filled), else -FI_EINVAL
// (unknown or disabled service, VNI not allowed) or -FI_EPERM (not a member), logged.
int check_auth_key(const SoftNic &nic, const AuthKey &key, cxil::Service *svc = nullptr);
// Whether the service lets endpoints use libfabric traffic class `tclass`.
bool tclass_permitted(const cxil::Service &svc, uint32_t tclass);

// A domain's share of its service: what its objects hold is counted host-wide, and
// refused past the service's limits. Objects keep a reference until they close.
class ServiceHold {
  public:
    ServiceHold(const SoftNic &nic, const cxil::Service &svc);
    ~ServiceHold();
    // -FI_ENOSPC (logged) when n more of `type` would pass the service's limit.
    int take(cxi_rsrc_type type, unsigned n = 1);
    void give(cxi_rsrc_type type, unsigned n = 1);
    const cxil::Service &service() const { return svc_; }

  private:
    cxil::Service svc_;
    cxil::Usage usage_;
};

}  // namespace softnic::cxi

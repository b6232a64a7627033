// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// usnic address vector: FI_AV_MAP only, over the shared AV table (src/common) keyed
// by IPv4 address and UDP port; synchronous and FI_EVENT inserts; the get_distance
// extension.
#pragma once

#include <netinet/in.h>
#include <rdma/fi_domain.h>

#include "common/av.hpp"
#include "common/eq.hpp"

namespace softnic::usnic {

class Domain;

class UAv final : public Av {
  public:
    UAv(Domain *domain, const fi_av_attr &attr, void *context);
    ~UAv() override;
    static UAv *of(fid_av *f) { return static_cast<UAv *>(owner_of<Av>(f)); }
    Domain &domain() { return *domain_; }
    int bind_eq(::fid *f);
    int insert_addrs(const void *addr, size_t count, fi_addr_t *fi_addr, uint64_t flags,
                     void *context);
    int insert_service(const char *node, const char *service, fi_addr_t *fi_addr, uint64_t flags,
                       void *context);
    int remove_addrs(fi_addr_t *fi_addr, size_t count, uint64_t flags);
    int lookup_addr(fi_addr_t fi_addr, void *addr, size_t *addrlen);
    // Data path: the peer's socket address (null when not in the AV).
    const sockaddr_in *peer(fi_addr_t a) const {
        Entry *e = entry(a);
        return e ? reinterpret_cast<const sockaddr_in *>(e->addr.data()) : nullptr;
    }
    fi_addr_t reverse_of(const sockaddr_in &a) const;

  private:
    // 0 or a positive errno for one address.
    int insert_one_addr(const sockaddr_in &a, fi_addr_t &out);
    void post_events(void *context, size_t count, const int *errs, int ok);
    Domain *domain_;
    bool events_;
    Eq *eq_ = nullptr;
};

int av_open(Domain *domain, fi_av_attr *attr, fid_av **av, void *context);

}  // namespace softnic::usnic

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Passive endpoint: a TCP listener on the device's address that turns connection
// requests into FI_CONNREQ events (msg_cm.hpp has the exchange).
#pragma once

#include <netinet/in.h>
#include <rdma/fi_endpoint.h>

#include <vector>

#include "common/eq.hpp"
#include "common/fid.hpp"

namespace softnic::usnic {

class Fabric;
struct ConnReq;

class Pep {
  public:
    Pep(Fabric *fabric, const fi_info &info, void *context);
    ~Pep();
    Pep(const Pep &) = delete;
    Pep &operator=(const Pep &) = delete;
    fid_pep *fid() { return &handle_.fid; }
    static Pep *of(fid_pep *f) { return owner_of<Pep>(f); }
    int bind(::fid *f, uint64_t flags);
    int listen();
    int setname(void *addr, size_t addrlen);
    int getname(void *addr, size_t *addrlen);
    int reject(fid_t handle, const void *param, size_t paramlen);
    int getopt(int level, int name, void *optval, size_t *optlen);
    // The address set by fi_setname or fi_listen (what fi_getname reports).
    const sockaddr_in &name() const { return addr_; }

  private:
    void on_listen_ready();
    void on_request_bytes(ConnReq *req);
    Handle<fid_pep, Pep> handle_;
    Fabric *fabric_;
    fi_info *info_;
    Eq *eq_ = nullptr;
    sockaddr_in addr_{};
    int fd_ = -1;
    bool listening_ = false;
    std::vector<ConnReq *> reading_;  // requests still arriving (ours until FI_CONNREQ)
};

int pep_open(Fabric *fabric, fi_info *info, fid_pep **pep, void *context);

}  // namespace softnic::usnic

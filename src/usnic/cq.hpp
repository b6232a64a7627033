// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// usnic completion queue: the shared CQ (src/common) behind usnic's rules, plus the
// FD wait object: an epoll descriptor over the bound endpoints' sockets and an eventfd
// that completions made off the application's thread ring once fi_trywait armed it.
#pragma once

#include <rdma/fi_domain.h>

#include <atomic>

#include "common/cq.hpp"
#include "common/wait_set.hpp"

namespace softnic::usnic {

class Domain;

class UCq {
  public:
    UCq(Domain *domain, const fi_cq_attr &attr, void *context);
    ~UCq();
    UCq(const UCq &) = delete;
    UCq &operator=(const UCq &) = delete;
    static UCq *of(fid_cq *f) { return static_cast<UCq *>(owner_of<Cq>(f)->ext); }
    fid_cq *fid() { return core_.fid(); }
    Cq &core() { return core_; }
    fi_wait_obj wait_obj() const { return wait_obj_; }
    bool context_format() const { return context_format_; }
    // An enabled endpoint's socket joins the wait set / leaves it.
    void attach(int sock_fd);
    void detach(int sock_fd);
    int trywait();
    int getwait(void *arg);
    ssize_t sread(void *buf, size_t count, fi_addr_t *src, int timeout_ms);

  private:
    static void notify(void *self);
    void set_armed(bool on);  // for a wait set: drain the eventfd and arm, or disarm
    Cq core_;
    Domain *domain_;
    fi_wait_obj wait_obj_;
    bool context_format_;
    int epfd_ = -1, efd_ = -1;
    std::atomic<bool> armed_{false};
    WaitSet *set_ = nullptr;  // FI_WAIT_SET: the common wait set watching epfd_
};

int cq_open(Domain *domain, fi_cq_attr *attr, fid_cq **cq, void *context);
int cq_trywait(fid_cq *cq);

}  // namespace softnic::usnic

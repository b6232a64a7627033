// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// usnic endpoints: what DGRAM, MSG and RDM share (bindings and their rules, enable,
// names, the fi_msg entry points' checks). The data paths are dgram_ep.* and rudp_ep.*.
#pragma once

#include <netinet/in.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_endpoint.h>

#include <atomic>
#include <mutex>

#include "common/cq.hpp"
#include "common/eq.hpp"
#include "common/fid.hpp"
#include "common/progress.hpp"

namespace softnic::usnic {

class Domain;
class UCq;
class UAv;

// One send or receive as the entry points hand it over.
struct Op {
    const iovec *iov;
    size_t count;
    fi_addr_t addr;
    void *context;
    uint64_t flags;
    bool signal;  // report a completion (sends; receives always do)
};

class Endpoint : public ProgressSource {
  public:
    Endpoint(Domain *domain, const fi_info &info, void *context);
    ~Endpoint() override;
    Endpoint(const Endpoint &) = delete;
    Endpoint &operator=(const Endpoint &) = delete;
    fid_ep *fid() { return &handle_.fid; }
    static Endpoint *of(fid_ep *f) { return owner_of<Endpoint>(f); }
    fi_ep_type type() const { return type_; }
    bool enabled() const { return enabled_; }
    int bind(::fid *f, uint64_t flags);
    int control(int command, void *arg);
    int getname(void *addr, size_t *addrlen);
    // fi_enable, once, whichever thread asks (fi_connect / fi_accept enable too).
    int enable_once();
    virtual ssize_t send(const Op &op) = 0;
    virtual ssize_t recv(const Op &op) = 0;
    virtual ssize_t size_left(bool tx) = 0;
    // Before close: stop what runs in the background.
    virtual void shutdown_io() {}
    // Whether a send with these flags reports its completion (fi_inject never does).
    bool wants_completion(uint64_t flags) const {
        return !tx_selective_ || (flags & FI_COMPLETION);
    }
    size_t inject_limit() const { return inject_size_; }
    size_t max_msg() const { return max_msg_; }
    bool prefix() const { return prefix_; }
    uint64_t tx_op_flags() const { return tx_op_flags_; }
    uint64_t rx_op_flags() const { return rx_op_flags_; }
    size_t tx_iov_limit() const { return tx_iov_limit_; }
    size_t rx_iov_limit() const { return rx_iov_limit_; }
    Eq *eq() const { return eq_; }
    Domain &domain() { return *domain_; }

  protected:
    virtual int enable() = 0;
    // The bound CQs and the socket that wakes them.
    void attach_cqs(int sock_fd);
    int check_enable_cqs(int missing_code);
    void push_tx(void *context, size_t len);
    void push_rx(void *context, size_t len, fi_addr_t src);
    void push_rx_error(void *context, int err, size_t len, size_t olen);
    void push_tx_error(void *context, int err);
    virtual sockaddr_in local_name() const = 0;
    // The payload buffers of `op` in `out` (op.count of them): its own, less the
    // FI_MSG_PREFIX space at the front of the first; false when that one is shorter.
    bool payload_iov(const Op &op, iovec *out) const;

    Handle<fid_ep, Endpoint> handle_;
    std::mutex ctrl_lock_;  // bind and enable: FI_THREAD_SAFE lets threads race on them
    Domain *domain_;
    fi_ep_type type_;
    UCq *tx_cq_ = nullptr, *rx_cq_ = nullptr;
    bool tx_selective_ = false;
    // An AV may be bound after fi_enable (ofi_rxd does so): the data path loads it.
    std::atomic<UAv *> av_{nullptr};
    UAv *av() const { return av_.load(std::memory_order_acquire); }
    Eq *eq_ = nullptr;
    std::atomic<bool> enabled_{false};  // read by every data call, on any thread
    int attached_fd_ = -1;
    uint64_t tx_op_flags_, rx_op_flags_;
    size_t tx_size_, rx_size_, tx_iov_limit_, rx_iov_limit_;
    bool prefix_;
    size_t max_msg_, inject_size_;
};

int endpoint_open(Domain *domain, fi_info *info, fid_ep **ep, void *context);

// The entry point tables (ep_ops.cpp).
extern fi_ops_msg ep_msg_ops;
extern fi_ops_rma ep_rma_ops;
extern fi_ops_tagged ep_tagged_ops;
extern fi_ops_atomic ep_atomic_ops;
extern fi_ops_ep ep_base_ops;
extern fi_ops_cm ep_cm_ops_dgram;
extern fi_ops_collective ep_collective_ops;

}  // namespace softnic::usnic

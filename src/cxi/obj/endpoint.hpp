// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Endpoints: the plain RDM endpoint, the scalable endpoint with its TX/RX contexts, and
// aliases. Each fid_ep the application holds is an EpView onto a PidEngine.
#pragma once

#include <rdma/fi_atomic.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <memory>
#include <vector>

#include "common/fid.hpp"
#include "cxi/core/pid_engine.hpp"

namespace softnic::cxi {

class Domain;
class Endpoint;

enum Side : unsigned { kTx = 1, kRx = 2, kBoth = 3 };

// What a fid_ep refers to: an endpoint (or one of its contexts), with its own op flags.
// FI_TC_UNSPEC or a named class up to FI_TC_SCAVENGER (no DSCP values).
inline bool tclass_valid(uint32_t tc) {
    return tc == FI_TC_UNSPEC || (tc >= FI_TC_BEST_EFFORT && tc <= FI_TC_SCAVENGER);
}

struct EpView {
    Handle<fid_ep, EpView> h;
    Endpoint *ep = nullptr;
    PidEngine *engine = nullptr;  // null for the scalable endpoint itself
    unsigned side = kBoth;
    uint64_t tx_flags = 0, rx_flags = 0;
    // FI_OPT_CXI_SET_TCLASS / SET_MSG_ORDER (per view, so per alias). The software NIC
    // has no traffic classes and keeps every order it advertises whatever is asked.
    uint32_t tclass = FI_TC_BEST_EFFORT;
    uint64_t msg_order = kMsgOrder;
    bool is_alias = false;
    EpView *parent = nullptr;
};

class Endpoint {
  public:
    Endpoint(Domain &domain, const fi_info &info, void *context, bool scalable, uint16_t vni);
    // How many contexts (PIDs) such an endpoint has.
    static size_t contexts_for(const fi_info &info, bool scalable);
    ~Endpoint();
    Endpoint(const Endpoint &) = delete;
    Endpoint &operator=(const Endpoint &) = delete;

    fid_ep *fid() { return &view_.h.fid; }
    Domain &domain() { return domain_; }
    uint64_t caps() const { return caps_; }
    bool scalable() const { return scalable_; }
    bool enabled() const { return enabled_; }
    // FI_PROTO_CXI_RNR (rnr.cpp): 40-bit tags, no inject.
    bool rnr() const { return rnr_; }
    uint64_t tag_mask() const { return rnr_ ? kRnrTagMask : kTagMask; }
    // Whether the targets of our one-sided operations generate events (FI_RMA_EVENT or
    // MR match events): such operations never take the restricted path.
    bool remote_events() const;
    // Whether the MR behind `key` generates events at its target: a provider key says
    // so itself; a client key cannot, so FI_RMA_EVENT on this endpoint stands for it.
    bool target_events(uint64_t key) const;

    int bind(EpView &v, struct fid *bfid, uint64_t flags);
    int enable(EpView &v);
    int control(EpView &v, int command, void *arg);
    int getopt(EpView &v, int level, int name, void *val, size_t *len);
    int setopt(EpView &v, int level, int name, const void *val, size_t len);
    // FI_SET_VAL and the FI_OPT_CXI_SET_* names of fi_setopt (spec §8.5).
    int set_var(EpView &v, int name, const void *val);
    int getname(EpView &v, void *addr, size_t *len);
    int open_context(unsigned side, int index, fid_ep **out, void *context);
    int close_view(EpView &v);
    RefCount &refs() { return refs_; }
    Av *av() const { return av_; }
    struct fid *eq() const {
        return eq_;
    }

  private:
    int open_pids();
    int take_av_auth_keys();
    void release_av_auth_keys();
    bool claim_pids(uint32_t pid);
    int bind_cq(EpView &v, Cq *cq, uint64_t flags);
    int bind_cntr(EpView &v, Cntr *cntr, uint64_t flags);
    void attach_progress(PidEngine &c);
    EpView *make_view(PidEngine *engine, unsigned side, void *context, size_t fclass);

    Domain &domain_;
    uint64_t caps_;
    bool scalable_;
    bool rnr_;
    bool enabled_ = false;
    bool holds_av_keys_ = false;
    uint32_t requested_pid_;
    bool pid_preferred_;  // the PID came from a port-like service (addr.hpp)
    size_t tx_size_;
    size_t tx_ctx_cnt_, rx_ctx_cnt_;
    EpView view_;
    Av *av_ = nullptr;
    struct fid *eq_ = nullptr;
    std::vector<std::unique_ptr<PidEngine>> engines_;
    std::vector<std::unique_ptr<EpView>> views_;  // contexts and aliases handed out
    RefCount refs_;
};

int endpoint_open(fid_domain *domain, fi_info *info, fid_ep **ep, void *context);
int scalable_ep_open(fid_domain *domain, fi_info *info, fid_ep **sep, void *context);
// The context behind an endpoint fid (for the domain extensions), or null.
PidEngine *engine_of(fid_ep *ep);

// Data-operation tables (msg_ops.cpp).
extern fi_ops_msg msg_ops, msg_serial_ops;  // a serialised domain's (common/serial.hpp)
extern fi_ops_tagged tagged_ops, tagged_serial_ops;
extern fi_ops_msg msg_disabled_ops;
extern fi_ops_tagged tagged_disabled_ops;
extern fi_ops_rma rma_disabled_ops;
extern fi_ops_rma rma_ops;  // rma_ops.cpp
extern fi_ops_atomic atomic_disabled_ops;
extern fi_ops_atomic atomic_ops;  // atomic_ops.cpp
// Collectives (coll_ops.cpp): the endpoint's table, fi_join_collective, the domain query.
extern fi_ops_collective coll_ops;
int coll_join(fid_ep *ep, const void *addr, uint64_t flags, fid_mc **mc, void *context);
int coll_query(fid_domain *domain, fi_collective_op coll, fi_collective_attr *attr, uint64_t flags);

}  // namespace softnic::cxi

#include "cxi/context.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <rdma/fi_cxi_ext.h>

#include "common/log.hpp"
#include "common/wait.hpp"
#include "cxi/domain.hpp"
#include "cxi/env.hpp"
#include "transport/shm/shm_transport.hpp"

namespace softnic::cxi {

bool RxMsg::tagged() const {
    return wflags & kWTagged;
}

Context::Context(Domain &domain, uint64_t caps, size_t tx_size, uint16_t vni)
    : domain_(domain), caps_(caps), vni_(vni), tx_pool_(tx_size ? tx_size : 1) {
    for (auto &op : tx_pool_) {
        op.next = tx_free_;
        tx_free_ = &op;
    }
    awaiting_ack_.reserve(tx_pool_.size());
}

Context::~Context() {
    close();
    for (CompletionBind *b : {&tx_, &rx_}) {
        if (b->cq) {
            b->cq->progress().remove(this);
            b->cq->refs().put();
        }
        for (Cntr *c : b->cntrs()) {
            if (!c) continue;
            c->progress().remove(this);
            c->refs().put();
        }
    }
    for (int t = 0; t < 2; t++)
        for (RxMsg *m = unexpected_[t].head; m; m = m->next)
            free_ux(m->ux_buf, m->ux_cap);
    for (uint8_t *p : small_ux_)
        std::free(p);
}

int Context::open(uint32_t pid, bool quiet) {
    const Env &e = env();
    transport::shm::RingGeometry g{uint32_t(e.shm_cell_size), uint32_t(e.shm_ring_cells)};
    uint32_t first = pid == kPidAny ? 0 : pid, last = pid == kPidAny ? kMaxPid : pid;
    for (uint32_t p = first; p <= last; p++) {
        int err = 0;
        auto q =
            transport::shm::ShmRxQueue::create(ring_name(domain_.nic().addr, vni_, p), g, err,
                                               domain_.window_attachment(caps_ & FI_RMA_EVENT));
        if (q) udp_ = open_udp(vni_, p, err);
        if (q && err == 0 && open_extra_vnis(p) == 0) {
            rxq_ = std::move(q);
            pid_ = p;
            if (env().offload) transport::offload_register(this);
            return 0;
        }
        if (q) err = -EADDRINUSE;  // the ring was free but a UDP port or VNI is not
        if (err != -EADDRINUSE)
            SN_REJECT(-FI_ENOSPC, FI_LOG_EP_CTRL, "cannot create receive ring: %s\n",
                      strerror(-err));
    }
    if (pid == kPidAny)
        SN_REJECT(-FI_ENOSPC, FI_LOG_EP_CTRL, "no free PID on %s\n", domain_.nic().name.c_str());
    if (quiet) return -FI_ENOSPC;  // the caller is searching for a free range
    SN_REJECT(-FI_ENOSPC, FI_LOG_EP_CTRL, "PID %u is already in use on %s VNI %u\n", pid,
              domain_.nic().name.c_str(), vni_);
}

void Context::close() {
    if (!rxq_) return;
    if (env().offload) transport::offload_unregister(this);
    SpinGuard g(lock_);
    if (udp_) udp_->linger();
    udp_.reset();
    rxq_.reset();
    for (VniPort &v : extra_) {
        if (v.udp) v.udp->linger();
        v.udp.reset();
        v.rxq.reset();
    }
    link_vni_.clear();
    pid_ = kPidAny;
}

void Context::progress() {
    app_calls_.store(app_calls_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (domain_.deferred().ready()) domain_.deferred().run();  // before taking our lock
    if (!rxq_ || !lock_.try_lock()) return;  // someone else is progressing this context
    progress_locked();
    lock_.unlock();
}

// Work of our own, MRs that remote operations may target while the application is
// away (the hardware serves those without it), or an application asleep on a wait
// object (the NIC would interrupt it; here progress must run to ring it).
bool Context::offload_wanted() {
    return work_hint_.load(std::memory_order_relaxed) || domain_.mrs().any_remote() ||
           domain_.deferred().ready() || WaitFd::armed_anywhere();
}

bool Context::offload_progress(bool readable) {
    if (domain_.deferred().ready()) domain_.deferred().run();
    if (readable && udp_) udp_->mark_active();  // the application polls the socket from now on
    if (!lock_.try_lock()) return false;
    if (rxq_) progress_locked();
    lock_.unlock();
    return true;
}

void Context::progress_locked() {
    rxq_->poll(*this, 64);
    // Without the offload helper nobody watches a quiet socket: look now and then.
    if (udp_ && (udp_->wants_poll() || (!env().offload && (progress_calls_ & 63) == 0))) poll_udp();
    for (VniPort &v : extra_) {  // FI_AV_AUTH_KEY's other VNIs: not watched by the helper
        if (v.rxq) v.rxq->poll(*this, 64);
        if (v.udp && (v.udp->wants_poll() || (progress_calls_ & 63) == 0))
            poll_udp(*v.udp, v.foreign_seen);
    }
    while (!ctrl_backlog_.empty()) {
        CtrlPkt &c = ctrl_backlog_.front();
        iovec iov{c.data, c.h.payload};
        if (!c.link->send(&c.h, sizeof(c.h), &iov, c.h.payload ? 1 : 0)) break;
        ctrl_backlog_.pop_front();
    }
    if (!rnr_waiting_.empty()) rnr_resend_due();
    if (!pending_.empty() && !holding_more_) pump_pending();
    if (!awaiting_ack_.empty()) check_acks();
    if ((++progress_calls_ & 4095) == 0 && tx_outstanding_ > pending_count_) reap_dead_peers();
    bool work = tx_outstanding_ || !ctrl_backlog_.empty() || (udp_ && udp_->busy());
    if (work != work_hint_.load(std::memory_order_relaxed))
        work_hint_.store(work, std::memory_order_relaxed);
}

// Sends waiting for a kDone from a peer that went away complete with an error.
void Context::reap_dead_peers() {
    for (auto &op : tx_pool_) {
        if (tx_by_cookie(op.cookie) != &op || op.pending || !op.link) continue;
        if (!op.link->alive() || op.link->peer_dead())
            fail_link(op.link, FI_EHOSTUNREACH, C_RC_UNDELIVERABLE);
    }
}

bool Context::deliver(const uint8_t *pkt, size_t len) {
    WireHdr h;
    if (len < sizeof(h)) {
        SN_WARN(FI_LOG_EP_DATA, "dropping runt packet (%zu bytes)\n", len);
        domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
        return true;
    }
    std::memcpy(&h, pkt, sizeof(h));
    if (h.version != kWireVersion || h.payload > len - sizeof(h)) {
        SN_WARN(FI_LOG_EP_DATA, "dropping malformed packet\n");
        domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
        return true;
    }
    if (h.vni != vni_ && !std::any_of(extra_.begin(), extra_.end(), [&](const VniPort &v) {
            return v.vni == h.vni;
        })) {  // isolation: a packet of another VNI never reaches the protocol
        SN_WARN(FI_LOG_EP_DATA, "dropping a packet of VNI %u (ours is %u)\n", h.vni, vni_);
        domain_.count(SOFTNIC_CNTR_VNI_DROPPED);
        return true;
    }
    const uint8_t *payload = pkt + sizeof(h);
    switch (static_cast<Pkt>(h.type)) {
        case Pkt::kMsg:
            return on_msg(h, payload);
        case Pkt::kData:
            on_data(h, payload);
            return true;
        case Pkt::kGetReq:
            on_get_req(h);
            return true;
        case Pkt::kDone:
            on_done(h);
            return true;
        case Pkt::kRmaWrite:
            on_rma_write(h, payload);
            return true;
        case Pkt::kRmaReadReq:
            return on_rma_read_req(h);  // false: no room to answer yet, hold it
        case Pkt::kRmaReadResp:
            on_rma_read_resp(h, payload);
            return true;
        case Pkt::kAtomic:
            on_atomic(h, payload);
            return true;
        case Pkt::kAtomicResp:
            on_atomic_resp(h, payload);
            return true;
    }
    SN_WARN(FI_LOG_EP_DATA, "dropping packet of unknown type %u\n", h.type);
    domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
    return true;
}

void Context::free_msg(RxMsg *m) {
    free_ux(m->ux_buf, m->ux_cap);
    m->ux_buf = nullptr;
    msgs_.give(m);
}

// Small payloads (the common unexpected case) reuse fixed blocks: no allocation.
uint8_t *Context::alloc_ux(size_t n) {
    if (!n) return nullptr;
    if (ux_bytes_ + n > env().unexpected_budget()) return nullptr;
    uint8_t *p;
    if (n <= kSmallUx && !small_ux_.empty()) {
        p = small_ux_.back();
        small_ux_.pop_back();
    } else {
        p = static_cast<uint8_t *>(std::malloc(std::max(n, kSmallUx)));
    }
    if (p) ux_bytes_ += n;
    return p;
}

void Context::free_ux(uint8_t *p, size_t n) {
    if (!p) return;
    ux_bytes_ -= n;
    if (n <= kSmallUx && small_ux_.size() < 1024)
        small_ux_.push_back(p);
    else
        std::free(p);
}

}  // namespace softnic::cxi

// Paths to peers. An endpoint on our own NIC is reached through its shared-memory
// ring (a link the domain keeps); any other NIC through this context's UDP socket and
// a reliable channel. The protocols above see only transport::Link.
#include <rdma/fi_cxi_ext.h>

#include <algorithm>
#include <cstring>

#include "common/log.hpp"
#include "cxi/context.hpp"
#include "cxi/domain.hpp"
#include "cxi/env.hpp"

namespace softnic::cxi {

transport::Link *Context::link_for(uint32_t nic, uint32_t pid, uint16_t vni, int &err) {
    transport::udp::UdpEndpoint *udp = udp_.get();
    if (vni != vni_) {  // FI_AV_AUTH_KEY: one of the other VNIs we listen on
        auto it = std::find_if(extra_.begin(), extra_.end(),
                               [&](const VniPort &v) { return v.vni == vni; });
        if (it == extra_.end()) {
            SN_WARN(FI_LOG_EP_DATA, "VNI %u is not one this endpoint was enabled with\n", vni);
            err = -FI_EINVAL;
            return nullptr;
        }
        udp = it->udp.get();
    }
    transport::Link *link = nullptr;
    if (nic == domain_.nic().addr)
        link = domain_.link_to(nic, vni, pid, err);
    else if (udp)
        link = udp->link_to(peer_ipv4(domain_.nic(), nic), udp_port(vni, pid));
    else
        err = -FI_EHOSTUNREACH;
    if (link && !extra_.empty()) link_vni_[link] = vni;
    return link;
}

uint16_t Context::vni_of(const transport::Link *link) const {
    if (extra_.empty()) return vni_;
    auto it = link_vni_.find(link);
    return it == link_vni_.end() ? vni_ : it->second;
}

transport::Link *Context::route(fi_addr_t dest, int &err) {
    Av::Entry *e = av_ ? av_->entry(dest) : nullptr;
    if (!e) {
        err = -FI_EINVAL;
        return nullptr;
    }
    bool cacheable = av_->rx_ctx_bits() == 0;
    auto *link = static_cast<transport::Link *>(e->peer_cache.load(std::memory_order_acquire));
    if (link && cacheable && link->alive()) return link;
    CxiAddr a;
    std::memcpy(&a, e->addr.data(), sizeof(a));
    uint32_t pid = a.pid + av_->rx_index(dest);
    link = link_for(a.nic, pid, peer_vni(a.vni), err);
    // Shared-memory links belong to the domain and may be cached in the (shared) AV;
    // UDP channels belong to this context.
    if (link && cacheable && !link->completes_on_ack())
        e->peer_cache.store(link, std::memory_order_release);
    return link;
}

void Context::listen_on(const std::vector<uint16_t> &vnis) {
    if (vnis.empty()) return;
    vni_ = vnis[0];
    extra_.clear();
    for (size_t i = 1; i < vnis.size(); i++)
        extra_.push_back(VniPort{vnis[i], nullptr, nullptr, 0});
}

// The UDP port of (vni, pid); err = -FI_ENOSPC when another endpoint has it. Without a
// socket the endpoint still works within the NIC.
std::unique_ptr<transport::udp::UdpEndpoint> Context::open_udp(uint16_t vni, uint32_t pid,
                                                               int &err) {
    err = 0;
    const SoftNic &nic = domain_.nic();
    transport::udp::UdpConfig cfg = domain_.udp_config();
    cfg.realm = vni;  // peers on other VNIs are refused by the transport
    auto udp = transport::udp::UdpEndpoint::open(nic.ipv4, udp_port(vni, pid), cfg, err);
    if (udp) return udp;
    if (err == -EADDRINUSE) {
        err = -FI_ENOSPC;
        return nullptr;
    }
    SN_WARN(FI_LOG_EP_CTRL, "%s: no UDP socket for PID %u (%s): other hosts cannot reach it\n",
            nic.name.c_str(), pid, strerror(-err));
    err = 0;
    return nullptr;
}

// FI_AV_AUTH_KEY: the same PID on each other VNI (a ring and a UDP port on each).
int Context::open_extra_vnis(uint32_t pid) {
    const Env &e = env();
    transport::shm::RingGeometry g{uint32_t(e.shm_cell_size), uint32_t(e.shm_ring_cells)};
    for (VniPort &v : extra_) {
        int err = 0;
        v.rxq =
            transport::shm::ShmRxQueue::create(ring_name(domain_.nic().addr, v.vni, pid), g, err,
                                               domain_.window_attachment(caps_ & FI_RMA_EVENT));
        if (v.rxq) v.udp = open_udp(v.vni, pid, err);
        if (!v.rxq || err) {
            for (VniPort &u : extra_) {
                u.udp.reset();
                u.rxq.reset();
            }
            udp_.reset();
            return -FI_ENOSPC;
        }
    }
    return 0;
}

void Context::poll_udp() {
    poll_udp(*udp_, foreign_seen_);
}

void Context::poll_udp(transport::udp::UdpEndpoint &udp, uint64_t &foreign_seen) {
    udp.poll(*this, 64);
    uint64_t foreign = udp.stats().foreign;  // datagrams of other VNIs the transport refused
    if (foreign != foreign_seen) {
        domain_.count(SOFTNIC_CNTR_VNI_DROPPED, foreign - foreign_seen);
        foreign_seen = foreign;
    }
    udp.take_failed(failed_links_);
    for (transport::udp::Channel *c : failed_links_) {
        // Refused before the peer ever answered: nobody listens at that PID.
        bool never_there =
            c->state() == transport::udp::Channel::State::kRefused && !c->heard_from_peer();
        uint32_t ip = ntohl(c->peer().sin_addr.s_addr);
        uint32_t pid = (ntohs(c->peer().sin_port) - uint32_t(env().udp_port_base)) % 512;
        bool foreign = c->state() == transport::udp::Channel::State::kForeign;
        SN_WARN(FI_LOG_EP_DATA, "peer 0x%05x:%u %s\n", ip & kNicAddrMask, pid,
                foreign       ? "is on another VNI: operations fail"
                : never_there ? "has no endpoint"
                              : "stopped answering: operations fail");
        SN_WARN(FI_LOG_EP_DATA, "channel state: %s\n", c->describe().c_str());
        if (foreign)
            fail_link(c, FI_ENOTCONN, C_RC_VNI_NOT_FOUND);  // that PID is on another VNI
        else if (never_there)
            fail_link(c, FI_EIO, C_RC_PTLTE_NOT_FOUND);
        else
            fail_link(c, FI_EHOSTUNREACH, C_RC_UNDELIVERABLE);
        fail_inbound(ip & kNicAddrMask, pid, FI_EIO);
    }
    failed_links_.clear();
}

// Sends over a network link complete once the peer acknowledged their last packet.
void Context::check_acks() {
    for (size_t i = 0; i < awaiting_ack_.size();) {
        TxOp *op = awaiting_ack_[i];
        if (!op->link->acked(op->ack_token)) {
            i++;
            continue;
        }
        awaiting_ack_.erase(awaiting_ack_.begin() + long(i));
        op->awaiting_ack = false;
        complete_tx(op, op->ack_err, op->ack_prov_errno);
    }
}

void Context::await_ack(TxOp *op, uint64_t token, int err, int prov_errno) {
    op->awaiting_ack = true;
    op->ack_token = token;
    op->ack_err = err;
    op->ack_prov_errno = prov_errno;
    awaiting_ack_.push_back(op);
}

// The peer is gone: everything addressed to it fails instead of waiting forever.
void Context::fail_link(transport::Link *link, int err, int prov_errno) {
    std::erase_if(awaiting_ack_, [link](TxOp *op) { return op->link == link; });
    std::erase_if(rnr_waiting_, [link](TxOp *op) { return op->link == link; });
    std::erase_if(ctrl_backlog_, [link](const CtrlPkt &c) { return c.link == link; });
    for (auto &op : tx_pool_) {
        if (op.link != link || tx_by_cookie(op.cookie) != &op) continue;
        if (op.pending) {
            pending_.remove(&op);
            pending_count_--;
            op.pending = false;
        }
        op.awaiting_ack = false;
        complete_tx(&op, err, prov_errno);
    }
    domain_.drop_link(link);
    if (av_) av_->forget_peer(link);  // cached routes must be re-resolved
}

// Receives that were still being filled by a peer that died complete with an error.
void Context::fail_inbound(uint32_t nic, uint32_t pid, int err) {
    for (auto it = inbound_.begin(); it != inbound_.end();) {
        RxMsg *m = it->second;
        if (m->src_nic != nic || m->src_pid != pid || !m->op) {
            ++it;
            continue;
        }
        it = inbound_.erase(it);
        complete_rx(m, err);
    }
    drop_orphans(nic, pid);
}

// Unexpected messages from a dead peer that can no longer complete (bytes still to
// arrive, or rendezvous data to pull) are dropped and counted: a receive posted later
// must not match them and wait forever. Whole ones stay deliverable; claimed ones
// belong to the application until its FI_CLAIM receive.
void Context::drop_orphans(uint32_t nic, uint32_t pid) {
    for (auto &list : unexpected_) {
        for (RxMsg *m = list.head, *next; m; m = next) {
            next = m->next;
            bool needs_peer = !m->eager_done() || ((m->wflags & kWRdzv) && !(m->wflags & kWWhole));
            if (m->src_nic != nic || m->src_pid != pid || m->claimed || !needs_peer) continue;
            list.remove(m);
            inbound_.erase(InKey{m->src_key, m->cookie});
            free_msg(m);
            domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
            SN_WARN(FI_LOG_EP_DATA, "dropping an unfinished unexpected message of a dead peer\n");
        }
    }
}

}  // namespace softnic::cxi

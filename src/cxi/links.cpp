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

transport::Link *Context::link_for(uint32_t nic, uint32_t pid, int &err) {
    if (nic == domain_.nic().addr) return domain_.link_to(nic, vni_, pid, err);
    if (!udp_) {
        err = -FI_EHOSTUNREACH;
        return nullptr;
    }
    return udp_->link_to(peer_ipv4(domain_.nic(), nic), udp_port(vni_, pid));
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
    link = link_for(a.nic, pid, err);
    // Shared-memory links belong to the domain and may be cached in the (shared) AV;
    // UDP channels belong to this context.
    if (link && cacheable && !link->completes_on_ack())
        e->peer_cache.store(link, std::memory_order_release);
    return link;
}

// Claim the UDP port of `pid`; -FI_ENOSPC when another endpoint has it.
int Context::open_udp(uint32_t pid) {
    int err = 0;
    const SoftNic &nic = domain_.nic();
    transport::udp::UdpConfig cfg = domain_.udp_config();
    cfg.realm = vni_;  // peers on other VNIs are refused by the transport
    udp_ = transport::udp::UdpEndpoint::open(nic.ipv4, udp_port(vni_, pid), cfg, err);
    if (udp_) return 0;
    if (err == -EADDRINUSE) return -FI_ENOSPC;
    SN_WARN(FI_LOG_EP_CTRL, "%s: no UDP socket for PID %u (%s): other hosts cannot reach it\n",
            nic.name.c_str(), pid, strerror(-err));
    return 0;  // still usable within the NIC
}

void Context::poll_udp() {
    udp_->poll(*this, 64);
    uint64_t foreign = udp_->stats().foreign;  // datagrams of other VNIs the transport refused
    if (foreign != foreign_seen_) {
        domain_.count(SOFTNIC_CNTR_VNI_DROPPED, foreign - foreign_seen_);
        foreign_seen_ = foreign;
    }
    udp_->take_failed(failed_links_);
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
        SN_DBG(FI_LOG_EP_DATA, "channel state: %s\n", c->describe().c_str());
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

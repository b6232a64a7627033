// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "usnic/rudp_ep.hpp"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/log.hpp"
#include "transport/udp/channel.hpp"
#include "usnic/addr.hpp"
#include "usnic/av.hpp"
#include "usnic/caps.hpp"
#include "usnic/cq.hpp"
#include "usnic/domain.hpp"
#include "usnic/msg_cm.hpp"
#include "usnic/params.hpp"
#include "usnic/pep.hpp"
#include "usnic/ports.hpp"

namespace softnic::usnic {

using transport::Link;

int RudpEp::create(Domain *domain, const fi_info &info, void *context, Endpoint *&out) {
    std::unique_ptr<ConnReq> req;
    const sockaddr_in *pep_name = nullptr;
    if (info.handle) {
        bool msg = info.ep_attr->type == FI_EP_MSG;
        if (msg && info.handle->fclass == FI_CLASS_PEP) {
            // The endpoint takes the passive endpoint's address as its own (upstream
            // takes over its socket); fi_connect binds there.
            pep_name = &Pep::of(reinterpret_cast<fid_pep *>(info.handle))->name();
        } else if (msg && info.handle->fclass == FI_CLASS_CONNREQ) {
            req = adopt_connreq(info.handle);
            if (!req) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "connection request already used\n");
        } else {
            SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL,
                      "the info's handle must be a passive endpoint or a connection request\n");
        }
    }
    auto *ep = new RudpEp(domain, info, context);
    if (req) ep->set_cm_name(req->local);
    ep->connreq_ = std::move(req);
    if (pep_name) {
        ep->adopted_name_ = *pep_name;
        ep->adopted_ = true;
    }
    if (info.src_addr && info.ep_attr->type == FI_EP_RDM) {
        sockaddr_in a{};
        if (from_user(info.addr_format, info.src_addr, a)) ep->bind_port_be_ = a.sin_port;
    }
    out = ep;
    return 0;
}

RudpEp::RudpEp(Domain *domain, const fi_info &info, void *context)
    : Endpoint(domain, info, context) {
    if (type_ == FI_EP_MSG) handle_.fid.cm = &ep_cm_ops_msg;
    tx_free_.reserve(tx_size_);  // releasing a slot never allocates
}

RudpEp::~RudpEp() = default;

bool RudpEp::has_connreq() const {
    SpinGuard g(lock_);
    return connreq_ != nullptr;
}

std::unique_ptr<ConnReq> RudpEp::take_connreq() {
    SpinGuard g(lock_);
    return std::move(connreq_);
}

int RudpEp::enable() {
    int ret = check_enable_cqs(-FI_ENOCQ);
    if (ret) return ret;
    transport::udp::UdpConfig cfg = udp_config(domain_->device());
    int err = 0;
    const uint32_t ip = ntohl(domain_->device().ip_be);
    udp_ = transport::udp::UdpEndpoint::open(ip, ntohs(bind_port_be_), cfg, err);
    if (!udp_ && err == -EADDRINUSE && is_service_port(bind_port_be_)) {
        SN_WARN(FI_LOG_EP_CTRL, "port %u is taken: binding any free port\n", ntohs(bind_port_be_));
        udp_ = transport::udp::UdpEndpoint::open(ip, 0, cfg, err);
    }
    if (!udp_)
        SN_REJECT(err ? err : -FI_EOTHER, FI_LOG_EP_CTRL, "cannot open the UDP socket: %s\n",
                  strerror(-err));
    attach_cqs(udp_->fd());
    enabled_ = true;
    transport::offload_register(this);
    offloaded_ = true;
    return 0;
}

void RudpEp::shutdown_io() {
    msg_cm_close(*this);
    if (offloaded_) transport::offload_unregister(this);
    offloaded_ = false;
    SpinGuard g(lock_);
    if (udp_) udp_->linger();
}

uint16_t RudpEp::udp_port_be() const {
    return udp_name().sin_port;
}

void RudpEp::set_cm_name(const sockaddr_in &a) {
    SpinGuard g(lock_);
    cm_name_ = a;
    has_cm_name_ = true;
}

// MSG: the connection's (TCP) address, as upstream; before there is one, the adopted
// passive endpoint's, else the device's with port 0. RDM: the UDP socket's.
sockaddr_in RudpEp::local_name() const {
    if (type_ == FI_EP_MSG) {
        SpinGuard g(lock_);
        if (has_cm_name_) return cm_name_;
        if (adopted_) return adopted_name_;
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = domain_->device().ip_be;
        return a;
    }
    return udp_name();
}

sockaddr_in RudpEp::udp_name() const {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = domain_->device().ip_be;
    if (udp_) {
        socklen_t len = sizeof(a);
        getsockname(udp_->fd(), reinterpret_cast<sockaddr *>(&a), &len);
    }
    return a;
}

void RudpEp::set_connected(const sockaddr_in &peer) {
    SpinGuard g(lock_);
    peer_ch_ = udp_->link_to(ntohl(peer.sin_addr.s_addr), ntohs(peer.sin_port));
    conn_.store(Conn::kConnected);
}

Link *RudpEp::channel_for(fi_addr_t addr) {
    if (type_ == FI_EP_MSG) return conn_.load() == Conn::kConnected ? peer_ch_ : nullptr;
    UAv *v = av();
    const sockaddr_in *a = v ? v->peer(addr) : nullptr;
    return a ? udp_->link_to(ntohl(a->sin_addr.s_addr), ntohs(a->sin_port)) : nullptr;
}

ssize_t RudpEp::send(const Op &op) {
    SpinGuard g(lock_);
    Link *ch = channel_for(op.addr);
    if (!ch) {
        if (type_ == FI_EP_MSG) SN_REJECT(-FI_ENOTCONN, FI_LOG_EP_DATA, "endpoint not connected\n");
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "destination %lu is not in the AV\n", op.addr);
    }
    if (!ch->alive()) return -FI_EHOSTUNREACH;
    TxOp *t = take_tx();
    if (!t) return -FI_EAGAIN;
    if (!payload_iov(op, t->iov)) {
        release_tx(t);
        return -FI_EINVAL;
    }
    t->count = op.count;
    t->context = op.context;
    t->signal = op.signal;
    t->ch = ch;
    for (size_t i = 0; i < t->count; i++)
        t->len += t->iov[i].iov_len;
    if ((op.flags & FI_INJECT) && t->len <= sizeof(t->inject)) {
        // The buffer is the caller's again on return: keep a copy.
        size_t off = 0;
        for (size_t i = 0; i < t->count; i++) {
            std::memcpy(t->inject + off, t->iov[i].iov_base, t->iov[i].iov_len);
            off += t->iov[i].iov_len;
        }
        t->iov[0] = iovec{t->inject, t->len};
        t->count = 1;
    }
    // A channel's messages leave whole and in order: behind an earlier one still
    // waiting for window, this one waits too.
    if (!queued_behind(ch) && pump(*t))
        unacked_.wait(t, ch, t->token);
    else
        sending_.push_back(t);
    work_.store(true, std::memory_order_relaxed);
    return 0;
}

RudpEp::TxOp *RudpEp::take_tx() {
    if (tx_free_.empty()) {
        if (tx_slots_.size() >= tx_size_) return nullptr;
        return &tx_slots_.emplace_back();
    }
    TxOp *t = tx_free_.back();
    tx_free_.pop_back();
    *t = TxOp{};
    return t;
}

void RudpEp::release_tx(TxOp *op) {
    tx_free_.push_back(op);
}

bool RudpEp::queued_behind(const Link *ch) const {
    return std::any_of(sending_.begin(), sending_.end(),
                       [ch](const TxOp *op) { return op->ch == ch; });
}

// Queue as many packets of `op` as the channel takes; true once all are queued.
bool RudpEp::pump(TxOp &op) {
    Link *ch = op.ch;
    if (!ch->alive()) return false;
    auto packet = [&](size_t off, size_t n, bool) {
        RudpHdr h{uint8_t(RudpType::kData), kRudpVersion, 0, uint32_t(op.len), uint32_t(off), 0};
        iovec parts[kMaxIov];
        size_t np = transport::msg::gather(op.iov, op.count, off, n, parts);
        // One payload piece stays the application's until the send completes (after
        // the acknowledgement), so the channel may reference it instead of copying.
        return np == 1 ? ch->send_stable(&h, sizeof(h), parts[0].iov_base, parts[0].iov_len, true)
                       : ch->send(&h, sizeof(h), parts, np, true);
    };
    const size_t room = ch->max_packet() - sizeof(RudpHdr);
    // An empty message is one packet with no payload.
    bool done =
        op.len == 0 ? packet(0, 0, false) : transport::msg::cut(op.sent, op.len, room, packet);
    if (done) op.token = ch->last_token();
    ch->flush();  // the batch leaves in one sendmmsg / segmentation-offload send
    return done;
}

ssize_t RudpEp::recv(const Op &op) {
    SpinGuard g(lock_);
    if (rx_.size() >= rx_size_) return -FI_EAGAIN;
    RxOp &r = rx_.emplace_back();
    if (!payload_iov(op, r.iov)) {
        rx_.pop_back();
        return -FI_EINVAL;
    }
    r.count = op.count;
    r.context = op.context;
    for (size_t i = 0; i < op.count; i++)
        r.cap += r.iov[i].iov_len;
    work_.store(true, std::memory_order_relaxed);
    return 0;
}

ssize_t RudpEp::size_left(bool tx) {
    SpinGuard g(lock_);
    size_t tx_used = tx_slots_.size() - tx_free_.size();
    return static_cast<ssize_t>(tx ? tx_size_ - tx_used : rx_size_ - rx_.size());
}

bool RudpEp::deliver_from(const uint8_t *pkt, size_t len, transport::Link &from) {
    Link &ch = from;
    RudpHdr h;
    if (len < sizeof(h)) {
        malformed_++;
        return true;  // consumed: dropped
    }
    std::memcpy(&h, pkt, sizeof(h));
    size_t plen = len - sizeof(h);
    // An MSG client learns its peer when the reply to its request arrives; the accepting
    // side may send first: hold such data in the channel until then.
    if (type_ == FI_EP_MSG && !peer_ch_) return false;
    if (h.type != uint8_t(RudpType::kData) || h.version != kRudpVersion ||
        !transport::msg::within(h.offset, plen, h.msg_len) ||
        (type_ == FI_EP_MSG && &ch != peer_ch_)) {
        malformed_++;
        SN_DBG(FI_LOG_EP_DATA, "dropped a malformed or stray packet\n");
        return true;
    }
    Reasm &r = reasm_[&ch];
    if (!r.msg.active()) {
        if (h.offset != 0) {
            malformed_++;
            return true;
        }
        if (rx_.empty()) return false;  // hold it in the channel until a receive is posted
        r.rx = rx_.front();
        rx_.pop_front();
        r.msg.begin(h.msg_len);
    }
    if (!r.msg.accept(h.offset, plen, h.msg_len)) {
        malformed_++;
        return true;
    }
    // Into the receive's buffers; what does not fit is truncated.
    transport::msg::scatter(r.rx.iov, r.rx.count, h.offset, pkt + sizeof(h), plen);
    if (r.msg.finish()) complete_rx(r, ch);
    return true;
}

void RudpEp::complete_rx(Reasm &r, Link &from) {
    const size_t len = r.msg.length();
    if (len > r.rx.cap) {
        push_rx_error(r.rx.context, FI_ETRUNC, r.rx.cap, len - r.rx.cap);
        return;
    }
    UAv *v = av();
    const sockaddr_in *peer = from.inet_peer();
    fi_addr_t src = v && peer ? v->reverse_of(*peer) : FI_ADDR_NOTAVAIL;
    // Lengths passed in and out include the prefix space, as on DGRAM endpoints.
    push_rx(r.rx.context, len + (prefix_ ? kPrefixSize : 0), src);
}

void RudpEp::progress() {
    app_progress(lock_, [this] { progress_locked(); });
}

bool RudpEp::offload_progress(bool readable) {
    (void)readable;
    return helper_progress(lock_, [this] { progress_locked(); });
}

void RudpEp::progress_locked() {
    if (!udp_) return;
    udp_->poll(*this, 64);
    udp_->take_failed(failed_);
    for (Link *ch : failed_)
        fail_channel(ch);
    failed_.clear();
    reap();
    bool work = !sending_.empty() || !unacked_.empty() || udp_->busy();
    work_.store(work, std::memory_order_relaxed);
}

// Push what waits for window, complete what the peer acknowledged.
void RudpEp::reap() {
    std::vector<Link *> &blocked = blocked_;  // a member: no allocation per progress
    blocked.clear();
    for (auto it = sending_.begin(); it != sending_.end();) {
        TxOp *op = *it;
        bool earlier_blocked = std::find(blocked.begin(), blocked.end(), op->ch) != blocked.end();
        if (earlier_blocked || !pump(*op)) {  // keep each channel's packets in order
            blocked.push_back(op->ch);
            ++it;
            continue;
        }
        it = sending_.erase(it);
        unacked_.wait(op, op->ch, op->token);
    }
    unacked_.reap([this](TxOp *op) {
        if (op->signal) push_tx(op->context, op->len);
        release_tx(op);
    });
}

void RudpEp::fail_channel(Link *ch) {
    int err = ch->failure().peer_answered ? FI_EHOSTUNREACH : FI_ECONNREFUSED;
    const sockaddr_in *peer = ch->inet_peer();
    SN_WARN(FI_LOG_EP_DATA, "peer %s failed: %s\n", peer ? to_string(*peer).c_str() : "?",
            fi_strerror(err));
    auto failed = [this, err](TxOp *op) {
        push_tx_error(op->context, err);
        release_tx(op);
    };
    unacked_.fail(ch, failed);  // posted before those still sending
    for (auto it = sending_.begin(); it != sending_.end();) {
        if ((*it)->ch != ch) {
            ++it;
            continue;
        }
        failed(*it);
        it = sending_.erase(it);
    }
    auto r = reasm_.find(ch);
    if (r != reasm_.end() && r->second.msg.active())
        push_rx_error(r->second.rx.context, FI_EIO, 0, 0);
    reasm_.erase(ch);
}

}  // namespace softnic::usnic

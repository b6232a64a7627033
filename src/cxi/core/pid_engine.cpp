// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "cxi/core/pid_engine.hpp"

#include <algorithm>
#include <cstring>

#include <rdma/fi_cxi_ext.h>

#include "common/log.hpp"
#include "common/wait.hpp"
#include "cxi/obj/deferred.hpp"
#include "cxi/obj/domain.hpp"
#include "cxi/prov/env.hpp"

namespace softnic::cxi {

PidEngine::PidEngine(Domain &domain, uint64_t caps, size_t tx_size, uint16_t vni)
    : domain_(domain),
      caps_(caps),
      links_(*this, vni),
      tx_(*this, tx_size),
      rx_(*this),
      one_sided_(*this),
      coll_(*this) {
    if (domain.completion_serial()) own_serial_ = std::make_unique<DomainSerial>();
    lock_.serialise_by(own_serial_ ? own_serial_.get() : domain.serial());
}

PidEngine::~PidEngine() {
    close();
    for (CompletionBind *b : {&tx_bind_, &rx_bind_}) {
        if (b->cq) {
            b->cq->unbind_engine(own_serial_.get());  // the helper is gone (close)
            b->cq->progress().remove(progress_source());
            b->cq->refs().put();
        }
        for (Cntr *c : b->cntrs()) {
            if (!c) continue;
            c->progress().remove(progress_source());
            c->refs().put();
        }
    }
}

int PidEngine::open(uint32_t pid, bool quiet) {
    uint32_t first = pid == kPidAny ? 0 : pid, last = pid == kPidAny ? kMaxPid : pid;
    for (uint32_t p = first; p <= last; p++) {
        int err;
        {
            DataGuard g(lock_);  // a progress call through a bound CQ waits for whole ports
            err = links_.open(p);
        }
        if (err == 0) {
            pid_ = p;
            if (env().offload) transport::offload_register(this);
            return 0;
        }
        if (err != -EADDRINUSE)
            SN_REJECT(-FI_ENOSPC, FI_LOG_EP_CTRL, "cannot create receive ring: %s\n",
                      strerror(-err));
    }
    if (pid == kPidAny)
        SN_REJECT(-FI_ENOSPC, FI_LOG_EP_CTRL, "no free PID on %s\n", domain_.nic().name.c_str());
    if (quiet) return -FI_ENOSPC;  // the caller is searching for a free range
    SN_REJECT(-FI_ENOSPC, FI_LOG_EP_CTRL, "PID %u is already in use on %s VNI %u\n", pid,
              domain_.nic().name.c_str(), links_.vni());
}

void PidEngine::close() {
    if (!links_.is_open()) return;
    if (env().offload) transport::offload_unregister(this);
    DataGuard g(lock_);
    links_.close();
    pid_ = kPidAny;
}

// Issued by the deferred queue, on the application's thread or on the offload helper's
// while it holds this serialised domain (then the lock is held already).
ssize_t PidEngine::send_triggered(const SendArgs &a, Cntr *cntr) {
    SendArgs b = a;
    b.trig = TriggerArgs{true, cntr};
    if (held_by_helper()) return tx_.send(b);
    DataGuard g(lock_);
    return tx_.send(b);
}

ssize_t PidEngine::recv_triggered(const RecvArgs &a, Cntr *cntr) {
    if (held_by_helper()) return rx_.recv(a, cntr, true);
    DataGuard g(lock_);
    return rx_.recv(a, cntr, true);
}

ssize_t PidEngine::peek(const RecvArgs &a) {
    DataGuard g(lock_);
    return rx_.peek(a);
}

int PidEngine::cancel(void *context) {
    DataGuard g(lock_);
    return rx_.cancel(context);
}

size_t PidEngine::unexpected(fi_cq_tagged_entry *e, size_t count, fi_addr_t *src, size_t *total) {
    DataGuard g(lock_);
    return rx_.unexpected(e, count, src, total);
}

// The rings (and the sockets when due), then what is queued, then the hint that tells the
// offload helper whether work waits. An idle engine asks each question once.
[[gnu::always_inline]] inline void PidEngine::progress_locked() {
    const unsigned tick = progress_calls_++;
    links_.poll(*this, tick);
    bool work = false;
    if (tx_.busy() || one_sided_.owes() || coll_.active()) [[unlikely]] {
        tx_.progress(tick);
        if (one_sided_.owes()) one_sided_.serve_owed();
        if (coll_.active()) coll_.progress();
        work = tx_.busy() || one_sided_.owes() || coll_.active();
    }
    work = work || links_.ports_busy();
    if (work != work_hint_.load(std::memory_order_relaxed))
        work_hint_.store(work, std::memory_order_relaxed);
}

void PidEngine::progress() {
    if (domain_.deferred().ready()) domain_.deferred().run(nullptr);  // before taking our lock
    if (!links_.is_open()) return;
    app_progress(lock_.spin(), [this] { progress_locked(); });  // a domain with locks
}

// The same in a serialised domain: the application's thread enters it, waiting out the
// helper if the helper is in (it leaves as soon as its pass is done).
void PidEngine::progress_serial() {
    if (domain_.deferred().ready()) domain_.deferred().run(lock_.serial());
    if (!links_.is_open()) return;
    note_app_call();
    DataGuardAs<true> g(lock_);
    progress_locked();
}

int PidEngine::offload_fd() {
    return links_.ports().wake_fd();
}

bool PidEngine::offload_watch() {
    return links_.ports().watch();
}

// Work of our own, MRs that remote operations may target while the application is
// away (the hardware serves those without it), or an application asleep on a wait
// object (the NIC would interrupt it; here progress must run to ring it).
bool PidEngine::offload_wanted() {
    return work_hint_.load(std::memory_order_relaxed) || domain_.mrs().any_remote() ||
           domain_.deferred().ready() || WaitFd::armed_anywhere();
}

bool PidEngine::offload_progress(bool readable) {
    if (readable) links_.ports().mark_active();  // the application polls the socket from now on
    if (DomainSerial *s = lock_.serial()) {
        // The whole domain (FI_THREAD_DOMAIN: its deferred work reaches its other
        // engines), or this engine alone (FI_THREAD_COMPLETION: only its own fires).
        if (!s->helper_try_enter()) return false;
        if (domain_.deferred().ready()) domain_.deferred().run(s);
        if (links_.is_open()) progress_locked();
        s->helper_leave();
        return true;
    }
    if (domain_.deferred().ready()) domain_.deferred().run(nullptr);
    return helper_progress(lock_.spin(), [this] {
        if (links_.is_open()) progress_locked();
    });
}

void PidEngine::peer_failed(transport::Link *link, uint32_t nic, uint32_t pid, int err,
                            int prov_errno) {
    tx_.fail_link(link, err, prov_errno);
    rx_.fail_inbound(nic, pid, FI_EIO);
    coll_.peer_failed(nic, pid);
}

// A network link learns who its peer is from the first packet (the peer may fail before
// we ever send to it, and what it was sending must fail then).
bool PidEngine::deliver_from(const uint8_t *pkt, size_t len, transport::Link &from) {
    WirePrefix h;  // every header format starts with it (kSmall's included)
    if (!from.peer_key() && len >= sizeof(h)) {
        std::memcpy(&h, pkt, sizeof(h));
        from.set_peer_key(PeerLinks::peer_key(h.src_nic, h.src_pid, h.vni));
    }
    return deliver(pkt, len);
}

namespace {

// A full header with a compact one's prefix (flags and payload included), as `type`.
WireHdr from_prefix(const WirePrefix &p, Pkt type) {
    WireHdr h{};
    static_cast<WirePrefix &>(h) = p;
    h.type = static_cast<uint8_t>(type);
    return h;
}

// A packet's header, in any of its formats (wire.hpp), and where its payload starts;
// false when the bytes cannot be a packet.
bool unpack(const uint8_t *pkt, size_t len, WireHdr &h, size_t &hdr_len) {
    if (len >= kSmallHdrNoData && pkt[0] == static_cast<uint8_t>(Pkt::kSmall)) {
        SmallHdr s;
        std::memcpy(&s, pkt, kSmallHdrNoData);
        hdr_len = small_hdr_len(s.flags);
        if (len < hdr_len || (s.flags & ~(kWTagged | kWCqData))) return false;
        if (s.flags & kWCqData) std::memcpy(&s.cq_data, pkt + kSmallHdrNoData, 8);
        h = from_prefix(s, Pkt::kMsg);
        h.msg_len = h.eager_len = s.payload;
        h.tag = s.tag;
        h.cq_data = s.flags & kWCqData ? s.cq_data : 0;
    } else if (len >= sizeof(CollHdr) && pkt[0] == static_cast<uint8_t>(Pkt::kCollSmall)) {
        CollHdr c;
        std::memcpy(&c, pkt, sizeof(c));
        hdr_len = sizeof(c);
        h = from_prefix(c, Pkt::kColl);
        h.msg_len = c.payload;
        h.tag = c.key;
        h.cq_data = c.shape;
        h.cookie = c.seq;
        h.offset = c.rank;
    } else {
        if (len < sizeof(h)) return false;
        std::memcpy(&h, pkt, sizeof(h));
        hdr_len = sizeof(h);
    }
    return h.version == kWireVersion && h.payload <= len - hdr_len;
}

}  // namespace

// A one-packet eager message for a posted receive, on our own VNI: the common case, taken
// before the general path builds a full header. False leaves the packet to that path,
// which checks it again and says what is wrong with it.
bool PidEngine::deliver_small(const uint8_t *pkt, size_t len, RxEngine::Match &m) {
    SmallHdr s;
    std::memcpy(&s, pkt, kSmallHdrNoData);
    const size_t hdr_len = small_hdr_len(s.flags);
    if (s.version != kWireVersion || (s.flags & ~(kWTagged | kWCqData)) || len < hdr_len ||
        s.payload != len - hdr_len || s.vni != links_.vni())
        return false;
    if (s.flags & kWCqData) std::memcpy(&s.cq_data, pkt + kSmallHdrNoData, 8);
    return rx_.on_small(s, pkt + hdr_len, m);
}

// Every packet from a ring or a socket: checked, then handed to the engine it is for.
bool PidEngine::deliver(const uint8_t *pkt, size_t len) {
    tx_.saw_packet();
    RxEngine::Match m;  // what deliver_small looked up, for on_msg
    if (len >= kSmallHdrNoData && pkt[0] == static_cast<uint8_t>(Pkt::kSmall) &&
        deliver_small(pkt, len, m))
        return true;
    return deliver_general(pkt, len, m);
}

// Every other packet, out of line: the 8-byte path above saves no registers for it.
[[gnu::noinline]] bool PidEngine::deliver_general(const uint8_t *pkt, size_t len,
                                                  const RxEngine::Match &m) {
    WireHdr h;
    size_t hdr_len = 0;
    if (!unpack(pkt, len, h, hdr_len)) {
        SN_WARN(FI_LOG_EP_DATA, "dropping malformed packet (%zu bytes)\n", len);
        domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
        return true;
    }
    if (!links_.listens_on(h.vni)) {  // isolation: a packet of another VNI never gets further
        SN_WARN(FI_LOG_EP_DATA, "dropping a packet of VNI %u (ours is %u)\n", h.vni, links_.vni());
        domain_.count(SOFTNIC_CNTR_VNI_DROPPED);
        return true;
    }
    const uint8_t *payload = pkt + hdr_len;
    switch (static_cast<Pkt>(h.type)) {
        case Pkt::kMsg:
        case Pkt::kSmall:  // unpack made it a kMsg
            return rx_.on_msg(h, payload, m.looked_up ? &m : nullptr);
        case Pkt::kData:
            rx_.on_data(h, payload);
            return true;
        case Pkt::kGetReq:
            tx_.on_get_req(h);
            return true;
        case Pkt::kDone:
            tx_.on_done(h);
            return true;
        case Pkt::kRmaWrite:
            one_sided_.on_write(h, payload);
            return true;
        case Pkt::kRmaReadReq:
            one_sided_.on_read_req(h);
            return true;
        case Pkt::kRmaReadResp:
            one_sided_.on_read_resp(h, payload);
            return true;
        case Pkt::kAtomic:
            one_sided_.on_atomic(h, payload);
            return true;
        case Pkt::kAtomicResp:
            one_sided_.on_atomic_resp(h, payload);
            return true;
        case Pkt::kColl:
        case Pkt::kCollSmall:  // unpack made it a kColl
            coll_.on_packet(h, payload);
            return true;
    }
    SN_WARN(FI_LOG_EP_DATA, "dropping packet of unknown type %u\n", h.type);
    domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
    return true;
}

}  // namespace softnic::cxi

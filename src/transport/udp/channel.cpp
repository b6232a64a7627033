// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "transport/udp/channel.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "transport/udp/udp_endpoint.hpp"

namespace softnic::transport::udp {
namespace {

constexpr size_t kKeepSlotBytes = 4096;      // larger buffers are freed once acknowledged
constexpr unsigned kRtoBurst = 8;            // packets resent when the timer fires
constexpr uint64_t kInitialRtoNs = 2000000;  // before a round trip was measured (first contact)
constexpr uint32_t kInitialSlots = 16;       // per direction; grown on demand up to the window

// Expand a 32-bit wire sequence to the 64-bit one nearest to `near`.
int64_t seq_delta(uint32_t wire, uint64_t near) {
    return int32_t(wire - uint32_t(near));
}

}  // namespace

Channel::Channel(UdpEndpoint &ep, const sockaddr_in &peer, uint32_t epoch)
    : ep_(ep),
      peer_(peer),
      epoch_(epoch),
      // Until the peer grants its window, no more than the first congestion window.
      peer_limit_(std::min(ep.config().window, CongestionWindow::kInitial)),
      tx_(kInitialSlots, ep.config().window),
      cwnd_(ep.config().window),
      rto_ns_(std::min<uint64_t>(kInitialRtoNs, uint64_t(ep.config().rto_max_us) * 1000)),
      last_heard_ns_(now_ns()),
      rx_(kInitialSlots, ep.config().window),
      rx_window_(ep.config().window) {
    set_acked_complete_max(max_packet());
}

Channel::~Channel() = default;

size_t Channel::max_packet() const {
    return ep_.config().max_datagram - sizeof(RelHdr);
}

void Channel::flush() {
    ep_.socket().flush();
}

void Channel::fill_ack(RelHdr &h) {
    rx_unacked_ = 0;
    ack_urgent_ = false;
    h.realm = ep_.config().realm;  // every outgoing header passes here
    h.rto = uint16_t(std::min<uint64_t>(rto_ns_ / kRelRtoUnitNs + 1, UINT16_MAX));
    h.sack = 0;
    if (!have_peer_epoch_) return;
    h.flags |= kRelAckValid;
    if (mark_) h.flags |= kRelCongested;
    if (dup_seen_) h.flags |= kRelDuplicate;
    mark_ = dup_seen_ = false;
    h.ack_epoch = peer_epoch_;
    h.ack = uint32_t(rcv_next_);
    // What the peer may send is our share of the receive buffer (UdpEndpoint::grant()),
    // not the reorder room: many senders together cannot overflow the socket.
    h.window = uint32_t(deliv_next_ + ep_.grant());
    if (rx_high_ <= rcv_next_ + 1) return;  // nothing out of order
    uint64_t end = std::min({deliv_next_ + rx_.size(), rcv_next_ + 65, rx_high_});
    for (uint64_t s = rcv_next_ + 1; s < end; s++)
        if (rx(s).present) h.sack |= 1ULL << (s - rcv_next_ - 1);
}

bool Channel::send(const void *hdr, size_t hdr_len, const iovec *iov, size_t iovcnt, bool more) {
    return enqueue(hdr, hdr_len, iov, iovcnt, iovec{nullptr, 0}, more);
}

bool Channel::send_stable(const void *hdr, size_t hdr_len, const void *payload, size_t len,
                          bool more) {
    return enqueue(hdr, hdr_len, nullptr, 0, iovec{const_cast<void *>(payload), len}, more);
}

// Copies the header and `iov` into the packet's slot; `ref` is sent from where it is.
bool Channel::enqueue(const void *hdr, size_t hdr_len, const iovec *iov, size_t iovcnt,
                      const iovec &ref, bool more) {
    if (state_ != State::kOpen) return false;
    size_t copied = sizeof(RelHdr) + hdr_len;
    for (size_t i = 0; i < iovcnt; i++)
        copied += iov[i].iov_len;
    size_t total = copied + ref.iov_len;
    const UdpConfig &cfg = ep_.config();
    const uint64_t in_flight = next_seq_ - una_;
    bool window_full = in_flight >= cwnd_.packets() || next_seq_ >= peer_limit_;
    if (window_full || (una_ != next_seq_ && inflight_bytes_ + total > cfg.window_bytes) ||
        total > cfg.max_datagram) {
        blocked_ = true;
        if (!deadline_) ep_.arm_timer(deadline_ = now_ns() + rto_ns_);  // probe the window
        ep_.socket().flush();
        return false;
    }
    if (in_flight == tx_.size()) tx_.grow(una_, in_flight + 1);  // a burst: more slots
    TxSlot &s = tx(next_seq_);
    if (s.cap < copied) {
        s.cap = uint32_t(std::max<size_t>(copied, 256));
        s.buf.reset(new uint8_t[s.cap]);
    }
    RelHdr h{};
    h.magic = kRelMagic;
    h.version = kRelVersion;
    h.type = uint8_t(RelType::kData);
    h.epoch = epoch_;
    h.seq = uint32_t(next_seq_);
    fill_ack(h);
    // The last packet the windows allow asks for its acknowledgement at once: a receiver
    // that acknowledges every few packets would otherwise leave a small window waiting
    // for its timer.
    if (in_flight + 1 >= cwnd_.packets() || next_seq_ + 1 >= peer_limit_) h.flags |= kRelAckNow;
    uint8_t *p = s.buf.get();
    std::memcpy(p, &h, sizeof(h));
    std::memcpy(p + sizeof(h), hdr, hdr_len);
    size_t off = sizeof(h) + hdr_len;
    for (size_t i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len) std::memcpy(p + off, iov[i].iov_base, iov[i].iov_len);
        off += iov[i].iov_len;
    }
    uint64_t now = now_ns();
    s.len = uint32_t(copied);
    s.ref = ref.iov_base;
    s.ref_len = uint32_t(ref.iov_len);
    s.sent_ns = now;
    s.tries = 1;
    s.sacked = false;
    inflight_bytes_ += total;
    if (una_ == next_seq_) ep_.arm_timer(deadline_ = now + rto_ns_);
    next_seq_++;
    blocked_ = false;
    ep_.socket().queue(peer_, p, copied, s.ref, s.ref_len);
    if (!more) ep_.socket().flush();
    return true;
}

void Channel::send_ack(RelType type) {
    RelHdr &h = ack_buf_;
    h = RelHdr{};
    h.magic = kRelMagic;
    h.version = kRelVersion;
    h.type = uint8_t(type);
    h.epoch = epoch_;
    h.seq = uint32_t(next_seq_);
    fill_ack(h);
    ep_.socket().queue(peer_, &h, sizeof(h));
}

void Channel::mark_congested() {
    mark_ = ack_urgent_ = true;
    ep_.need_ack(this);
}

void Channel::on_datagram(const RelHdr &h, const uint8_t *body, size_t len, PacketSink &sink) {
    uint64_t now = now_ns();
    last_heard_ns_ = now;
    if (h.rto) peer_rto_ns_ = h.rto * kRelRtoUnitNs;  // a peer's word: linger caps its use
    if ((h.flags & kRelAckValid) && h.ack_epoch == epoch_) {
        on_ack(h, now);
        if (h.flags & kRelCongested) {
            marked_ns_ = now;
            if (cwnd_.on_congestion(una_, next_seq_)) ep_.count_congestion();
        }
        if (h.flags & kRelDuplicate) needless_ = true;  // a resend of ours, most likely
    }
    switch (RelType(h.type)) {
        case RelType::kData:
            // A peer that starts sending is counted before the first grant it hears.
            if (now - last_data_ns_ >= UdpEndpoint::kSendingNs) ep_.sender_joined();
            last_data_ns_ = now;
            ep_.saw_data(now);
            on_data(h, body, len, sink);
            break;
        case RelType::kProbe:
            if (!have_peer_epoch_) reset_rx(h.epoch);
            ack_urgent_ = true;
            ep_.need_ack(this);
            break;
        case RelType::kAck:
        case RelType::kReject:  // the endpoint handles these before any channel
            break;
    }
}

void Channel::on_ack(const RelHdr &h, uint64_t now) {
    int64_t d = seq_delta(h.ack, una_);
    if (d < 0 || una_ + uint64_t(d) > next_seq_) return;  // stale or bogus
    uint64_t a = una_ + uint64_t(d);
    heard_ = true;
    retries_ = 0;
    timeout_cut_ = false;
    uint64_t limit = a + uint64_t(int64_t(seq_delta(h.window, a)));
    if (limit > peer_limit_ && limit <= a + ep_.config().window) peer_limit_ = limit;
    if (a > una_) {
        ep_.socket().flush();  // queued datagrams may point into the slots we free
        release_acked(a, now);
    }
    if (!h.sack) return;
    uint64_t top = 0;
    for (unsigned i = 0; i < 64; i++) {
        if (!(h.sack >> i & 1)) continue;
        uint64_t s = a + 1 + i;
        if (s >= next_seq_) break;
        TxSlot &t = tx(s);
        if (!t.sacked) note_delivered(t, now);
        t.sacked = true;
        top = s;
    }
    if (top) fast_retransmit(top, now);
}

void Channel::release_acked(uint64_t upto, uint64_t now) {
    // Karn: only packets sent once give an RTT sample, and only when the acknowledgement
    // did not wait for a hole below them to be filled.
    bool clean = upto - una_ <= 32;
    for (uint64_t s = una_; clean && s < upto; s++)
        clean = tx(s).tries == 1 && !tx(s).sacked;
    // A fresh sample sets the timer from the estimate. Without one, a timeout's backing
    // off holds while the peer says it received duplicates (our resends were needless:
    // it is slow, not lossy: a receiver serving many senders, a sender serving many
    // receivers in turn); congested, up to four times the estimate (a tail loss, which
    // only the timer repairs, must not wait for a long backed-off timer); otherwise any
    // progress undoes it, so that the peer's timer toward us stays near ours (a closing
    // endpoint lingers by ours).
    if (clean)
        take_rtt_sample(now - tx(upto - 1).sent_ns);
    else if (needless_)
        ;
    else if (!congested(now))
        rto_ns_ = rto_from_estimate();
    else
        rto_ns_ = std::min(rto_ns_, 4 * rto_from_estimate());
    for (uint64_t s = una_; s < upto; s++) {
        TxSlot &t = tx(s);
        if (!t.sacked) note_delivered(t, now);
        inflight_bytes_ -= t.len + t.ref_len;
        t.len = t.ref_len = 0;
        t.ref = nullptr;
        if (t.cap > kKeepSlotBytes) {
            t.buf.reset();
            t.cap = 0;
        }
    }
    cwnd_.on_acked(upto - una_, upto);
    una_ = upto;
    if (una_ != next_seq_)
        ep_.arm_timer(deadline_ = now + rto_ns_);
    else
        deadline_ = 0;
}

void Channel::take_rtt_sample(uint64_t sample) {
    if (!min_rtt_ns_ || sample < min_rtt_ns_) min_rtt_ns_ = sample;
    if (!srtt_ns_) {
        srtt_ns_ = sample;
        rttvar_ns_ = sample / 2;
    } else {
        uint64_t dev = sample > srtt_ns_ ? sample - srtt_ns_ : srtt_ns_ - sample;
        rttvar_ns_ = (3 * rttvar_ns_ + dev) / 4;
        srtt_ns_ = (7 * srtt_ns_ + sample) / 8;
    }
    needless_ = false;
    rto_ns_ = rto_from_estimate();
}

// The timer follows the measured round trip, with a floor near the link's own (three
// times the fastest round trip seen), not a fixed millisecond: a lost lone packet costs
// about one round trip more, as on the hardware.
uint64_t Channel::rto_from_estimate() const {
    const UdpConfig &cfg = ep_.config();
    // No sample yet (every packet so far was resent, or acknowledged with others in a
    // long run): the first-contact timer, not the floor. From the floor, timeouts resent
    // everything again and again, and a resent packet never gives a sample.
    if (!srtt_ns_) return std::min<uint64_t>(kInitialRtoNs, uint64_t(cfg.rto_max_us) * 1000);
    uint64_t floor = std::max<uint64_t>(uint64_t(cfg.rto_min_us) * 1000, 3 * min_rtt_ns_);
    return std::clamp<uint64_t>(srtt_ns_ + 4 * rttvar_ns_, floor,
                                std::max<uint64_t>(floor, uint64_t(cfg.rto_max_us) * 1000));
}

void Channel::retransmit(uint64_t seq, uint64_t now) {
    TxSlot &t = tx(seq);
    RelHdr h;
    std::memcpy(&h, t.buf.get(), sizeof(h));
    h.flags = kRelAckNow;  // a repair is acknowledged at once
    fill_ack(h);           // the freshest acknowledgement rides along
    std::memcpy(t.buf.get(), &h, sizeof(h));
    t.sent_ns = now;
    if (t.tries < 255) t.tries++;
    ep_.socket().queue(peer_, t.buf.get(), t.len, t.ref, t.ref_len);
    ep_.count_retransmit();
}

// For loss detection: the latest send time known to have arrived. An acknowledgement
// sooner than a round trip after a resend answers the first sending, not the resend.
void Channel::note_delivered(const TxSlot &t, uint64_t now) {
    if (t.tries > 1 && now - t.sent_ns < min_rtt_ns_) return;
    rack_sent_ns_ = std::max(rack_sent_ns_, t.sent_ns);
}

// A packet below a selectively acknowledged one is lost once it has been out for twice the
// fastest round trip: random loss is repaired at once. While the peer marks congestion,
// a packet is lost only when one sent after it has arrived (RACK, RFC 8985), give or
// take a quarter of the fastest round trip for reordering: a resent packet is judged
// again only by what was sent after the resend, so one loss draws one resend however
// far the queue stretches the round trip (by age alone, every hole was resent on every
// acknowledgement, and the resends fed the queue).
void Channel::fast_retransmit(uint64_t upto, uint64_t now) {
    const bool congested = this->congested(now);
    const uint64_t reorder = min_rtt_ns_ / 4, age = std::max<uint64_t>(2 * min_rtt_ns_, 30000);
    for (uint64_t s = una_; s < upto; s++) {
        TxSlot &t = tx(s);
        bool lost = congested ? t.sent_ns + reorder < rack_sent_ns_ : now - t.sent_ns >= age;
        if (!t.sacked && lost) retransmit(s, now);
    }
}

uint64_t Channel::on_timer(uint64_t now) {
    if (state_ != State::kOpen) return 0;
    if (blocked_ && next_seq_ < peer_limit_ && next_seq_ - una_ < cwnd_.packets()) blocked_ = false;
    if (una_ == next_seq_ && !blocked_) return deadline_ = 0;
    if (!deadline_) deadline_ = now + rto_ns_;
    if (now < deadline_) return deadline_;
    const UdpConfig &cfg = ep_.config();
    if (++retries_ > cfg.retry_limit && now - last_heard_ns_ >= cfg.dead_after_ms * 1000000ull) {
        fail(State::kTimedOut);
        return 0;
    }
    if (una_ == next_seq_) {
        send_ack(RelType::kProbe);  // the window is closed: ask for an update
    } else {
        // The first packet not acknowledged is resent even when the peer said it holds
        // it: only the cumulative acknowledgement binds (RFC 6675). Else, once the
        // peer's last acknowledgement is lost, nothing is left to resend, the peer owes
        // nothing, and both wait in silence until the peer is declared dead.
        tx(una_).sacked = false;
        // Congested, a window that timed out shrinks, and only what it allows is resent:
        // the peer may only be slow. A lone packet's first timeout says nothing of
        // congestion (a request the peer answers late): the window stays.
        if (congested(now) && (next_seq_ - una_ > 1 || retries_ >= 2)) {
            cwnd_.on_timeout(next_seq_, !timeout_cut_);
            timeout_cut_ = true;
            ep_.count_congestion();
        }
        unsigned n = 0, burst = std::min(kRtoBurst, cwnd_.packets());
        for (uint64_t s = una_; s < next_seq_ && n < burst; s++)
            if (!tx(s).sacked) {
                retransmit(s, now);
                n++;
            }
    }
    rto_ns_ = std::min<uint64_t>(rto_ns_ * 2, uint64_t(cfg.rto_max_us) * 1000);
    return deadline_ = now + rto_ns_;
}

std::string Channel::describe() const {
    char b[256];
    snprintf(b, sizeof(b),
             "una %lu next %lu limit %lu cwnd %u inflight %zu blocked %d rto %lu us retries %u | "
             "rx deliv %lu rcv %lu high %lu backlog %d | epoch %x peer %x",
             una_, next_seq_, peer_limit_, cwnd_.packets(), inflight_bytes_, blocked_,
             rto_ns_ / 1000, retries_, deliv_next_, rcv_next_, rx_high_, backlogged_, epoch_,
             peer_epoch_);
    return b;
}

LinkFailure Channel::failure() const {
    switch (state_) {
        case State::kOpen:
            return {};
        case State::kTimedOut:
            return {LinkFailure::kTimedOut, heard_};
        case State::kRefused:
            return {LinkFailure::kRefused, heard_};
        case State::kForeign:
            return {LinkFailure::kForeign, heard_};
    }
    return {};
}

void Channel::fail(State why) {
    if (state_ != State::kOpen) return;
    state_ = why;
    ep_.socket().flush();  // nothing queued may point into freed slots
    for (auto &t : tx_) {
        t.buf.reset();
        t.cap = t.len = t.ref_len = 0;
        t.ref = nullptr;  // the sender may free what it lent us once its operations fail
    }
    inflight_bytes_ = 0;
    deadline_ = 0;
    ep_.channel_failed(this);
}

size_t Channel::footprint() const {
    size_t n = sizeof(*this) + tx_.size() * sizeof(TxSlot) + rx_.size() * sizeof(RxSlot);
    for (const TxSlot &t : tx_)
        n += t.cap;
    for (const RxSlot &r : rx_)
        n += r.cap;
    return n;
}

void Channel::trim() {
    if (state_ != State::kOpen || una_ != next_seq_ || blocked_ || backlogged_ ||
        rx_high_ > deliv_next_)
        return;
    tx_.shrink(una_);
    rx_.shrink(deliv_next_);
}

void Channel::reset_rx(uint32_t epoch) {
    have_peer_epoch_ = true;
    peer_epoch_ = epoch;
    deliv_next_ = rcv_next_ = rx_high_ = 0;
    for (auto &r : rx_)
        r.present = false;
    backlogged_ = false;
}

// The next sequence expected moves past the packets already held out of order.
void Channel::skip_held() {
    while (rcv_next_ < deliv_next_ + rx_.size() && rx(rcv_next_).present)
        rcv_next_++;
}

void Channel::store(RxSlot &r, const uint8_t *body, size_t len) {
    if (r.cap < len) {
        r.cap = uint32_t(std::max<size_t>(len, 256));
        r.buf.reset(new uint8_t[r.cap]);
    }
    std::memcpy(r.buf.get(), body, len);
    r.len = uint32_t(len);
    r.present = true;
}

void Channel::on_data(const RelHdr &h, const uint8_t *body, size_t len, PacketSink &sink) {
    if (!have_peer_epoch_ || int32_t(h.epoch - peer_epoch_) > 0) {
        reset_rx(h.epoch);  // a new incarnation of the peer's stream
    } else if (h.epoch != peer_epoch_) {
        ep_.count_duplicate();  // from an older incarnation
        return;
    }
    int64_t d = seq_delta(h.seq, deliv_next_);
    ep_.need_ack(this);
    if (d < 0 || uint64_t(d) >= rx_window_ ||
        (uint64_t(d) < rx_.size() && rx(deliv_next_ + uint64_t(d)).present)) {
        ack_urgent_ = dup_seen_ = true;  // a duplicate: our acknowledgement was probably lost
        ep_.count_duplicate();
        return;
    }
    if (ep_.closing()) return;  // not acknowledged: the sender learns it was not taken
    uint64_t s = deliv_next_ + uint64_t(d);
    heard_ = true;
    if (h.flags & kRelAckNow) ack_urgent_ = true;
    if (s == deliv_next_ && !backlogged_ && sink.deliver_from(body, len, *this)) {
        deliv_next_++;
        rcv_next_ = std::max(rcv_next_, deliv_next_);
        // Past the packets already held, before they are handed on: an answer sent from
        // inside their delivery must not acknowledge less than an earlier selective
        // acknowledgement said had arrived.
        skip_held();
        // Counted after the delivery: a reply the protocol sent from inside it carried
        // the acknowledgement of what came before this packet only, and must not settle
        // what is owed for this one.
        rx_unacked_++;
        if (rx(deliv_next_).present) drain(sink);
        return;
    }
    rx_unacked_++;
    if (uint64_t(d) >= rx_.size()) rx_.grow(deliv_next_, uint64_t(d) + 1);  // room to hold it
    store(rx(s), body, len);
    rx_high_ = std::max(rx_high_, s + 1);
    if (s == deliv_next_ && !backlogged_) {
        backlogged_ = true;  // the protocol pushed back: hold it and retry later
        ep_.need_drain(this);
    }
    if (s == rcv_next_) {
        skip_held();
    } else {
        ack_urgent_ = true;  // a gap: tell the sender at once
    }
}

bool Channel::drain(PacketSink &sink) {
    while (deliv_next_ < rcv_next_ || rx(deliv_next_).present) {
        RxSlot &r = rx(deliv_next_);
        if (!r.present) break;
        if (!sink.deliver_from(r.buf.get(), r.len, *this)) {
            if (!backlogged_) ep_.need_drain(this);
            backlogged_ = true;
            return false;
        }
        r.present = false;
        if (r.cap > kKeepSlotBytes) {
            r.buf.reset();
            r.cap = 0;
        }
        deliv_next_++;
        rcv_next_ = std::max(rcv_next_, deliv_next_);
        skip_held();
        rx_unacked_++;  // the window moved: the sender hears of it with the next ack
        ep_.need_ack(this);
    }
    backlogged_ = false;
    return true;
}

}  // namespace softnic::transport::udp

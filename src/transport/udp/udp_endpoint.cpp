// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "transport/udp/udp_endpoint.hpp"

#include <algorithm>
#include <cstring>
#include <ctime>

namespace softnic::transport::udp {
namespace {

constexpr unsigned kAckEvery = 16;       // data packets before an acknowledgement is due
constexpr unsigned kIdleToQuiet = 4096;  // empty polls before the socket counts as quiet
constexpr size_t kMaxChannels = 1 << 16;

}  // namespace

uint32_t next_epoch() {
    static std::atomic<uint32_t> last{0};
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint32_t t = uint32_t((uint64_t(ts.tv_sec) * 1000000 + uint64_t(ts.tv_nsec) / 1000) >> 4);
    uint32_t prev = last.load();
    uint32_t e;
    do {
        // The first stream of a process starts from the clock (so that a restarted
        // process's streams are newer than its previous incarnation's), later ones
        // count on from there. A plain comparison with 0 would be wrong half of the
        // time: the clock's value compares as "older" when its top bit is set, and every
        // process would then number its streams 1, 2, 3...
        e = prev == 0 || int32_t(t - prev) > 0 ? t : prev + 1;
    } while (!last.compare_exchange_weak(prev, e));
    return e;
}

UdpEndpoint::UdpEndpoint(const UdpConfig &cfg) : cfg_(cfg), grant_(cfg.window) {}

UdpEndpoint::~UdpEndpoint() = default;

std::unique_ptr<UdpEndpoint> UdpEndpoint::open(uint32_t ip, uint16_t port, const UdpConfig &cfg,
                                               int &err) {
    std::unique_ptr<UdpEndpoint> ep(new UdpEndpoint(cfg));
    err = ep->sock_.open(ip, port, cfg.socket_buffer, cfg.offload);
    if (err) return nullptr;
    // Coalesced receives need 64 KiB buffers; fewer of them hold as many datagrams.
    bool big = ep->sock_.coalescing() || cfg.max_datagram > 16384;
    ep->batch_ =
        std::make_unique<RecvBatch>(big ? 16 : 64, cfg.max_datagram, ep->sock_.coalescing());
    ep->sock_.set_faults(cfg.faults);
    // A full datagram costs the socket about an eighth more than its bytes and 1 KiB of
    // bookkeeping (9.1-9.8 KB at MTU 9000 as segmented sends arrive, 16.6 KB sent one by
    // one); half the buffer is shared, the rest absorbs what was granted before.
    size_t cost = cfg.max_datagram + cfg.max_datagram / 8 + 1024;
    size_t buffer = ep->sock_.receive_buffer();
    if (!buffer) buffer = size_t(std::max(cfg.socket_buffer, 0));
    ep->buffer_packets_ = uint32_t(std::min<size_t>(buffer / 2 / cost, 1u << 20));
    return ep;
}

Channel *UdpEndpoint::lookup(const sockaddr_in &from, bool create) {
    if (last_ && last_->peer().sin_port == from.sin_port &&
        last_->peer().sin_addr.s_addr == from.sin_addr.s_addr && last_->alive())
        return last_;
    uint64_t key = sockaddr_key(from);
    auto it = channels_.find(key);
    if (it != channels_.end()) return last_ = it->second;
    if (!create || channels_.size() >= kMaxChannels) return nullptr;
    all_.push_back(std::make_unique<Channel>(*this, from, next_epoch()));
    Channel *c = all_.back().get();
    channels_[key] = c;
    return last_ = c;
}

Channel *UdpEndpoint::link_to(uint32_t ip, uint16_t port) {
    return lookup(make_sockaddr(ip, port), true);
}

void UdpEndpoint::dispatch(const uint8_t *pkt, size_t len, const sockaddr_in &from,
                           PacketSink &sink) {
    RelHdr h;
    if (len < sizeof(h)) {
        stats_.malformed++;
        return;
    }
    std::memcpy(&h, pkt, sizeof(h));
    bool known_type = h.type >= uint8_t(RelType::kData) && h.type <= uint8_t(RelType::kReject);
    bool is_data = h.type == uint8_t(RelType::kData);
    if (h.magic != kRelMagic || h.version != kRelVersion || !known_type ||
        (is_data && len == sizeof(h))) {
        stats_.malformed++;  // not ours, or damaged: dropped and counted, never trusted
        return;
    }
    if (h.type == uint8_t(RelType::kReject) || h.realm != cfg_.realm) {
        reject(h, from);
        return;
    }
    // Only a peer that sends data or asks for an answer gets a channel of its own.
    Channel *c = lookup(from, h.type != uint8_t(RelType::kAck));
    if (!c) {
        stats_.malformed++;
        return;
    }
    c->on_datagram(h, pkt + sizeof(h), len - sizeof(h), sink);
}

// A datagram of another realm is dropped, counted and answered, so that its sender fails
// its operations at once instead of retrying into silence. A REJECT fails our channel
// to that peer, when it carries the realm of the peer we talk to and not ours.
void UdpEndpoint::reject(const RelHdr &h, const sockaddr_in &from) {
    if (h.type == uint8_t(RelType::kReject)) {
        if (h.realm == cfg_.realm) return;  // nonsense: we are of the same realm
        if (Channel *c = lookup(from, false)) c->fail(Channel::State::kForeign);
        return;
    }
    stats_.foreign++;
    if (h.type == uint8_t(RelType::kAck)) return;  // nothing to fail on the other side
    RelHdr &r = reject_buf_;  // the same bytes for every peer: one buffer serves all
    r = RelHdr{};
    r.magic = kRelMagic;
    r.version = kRelVersion;
    r.type = uint8_t(RelType::kReject);
    r.realm = cfg_.realm;
    sock_.queue(from, &r, sizeof(r));
}

size_t UdpEndpoint::poll(PacketSink &sink, size_t) {
    for (size_t i = 0; i < drain_list_.size();) {  // packets the protocol pushed back
        Channel *c = drain_list_[i];
        if (!c->alive() || c->drain(sink)) {
            c->in_drain_list = false;
            drain_list_[i] = drain_list_.back();
            drain_list_.pop_back();
        } else {
            i++;
        }
    }
    RecvBatch &b = *batch_;
    size_t n = sock_.receive(b, refused_);
    for (size_t i = 0; i < n; i++)
        dispatch(b.data(i), b.len(i), b.from(i), sink);
    if (n && sock_.take_pressure()) signal_congestion();
    if (n && last_data_ns_ >= share_due_ns_) share_buffer(last_data_ns_);
    for (const sockaddr_in &a : refused_)  // nobody listens there (any more)
        if (Channel *c = lookup(a, false)) c->fail(Channel::State::kRefused);
    refused_.clear();
    if (next_deadline_ || sock_.holding_faults()) {
        uint64_t now = now_ns();
        if (next_deadline_ && now >= next_deadline_) run_timers(now);
        sock_.release_faults(now);
    }
    flush_acks(n == 0);
    sock_.flush();
    if (n) {
        idle_polls_ = 0;
        active_.store(true, std::memory_order_relaxed);
    } else if (++idle_polls_ >= kIdleToQuiet && !busy() &&
               active_.load(std::memory_order_relaxed)) {
        active_.store(false, std::memory_order_relaxed);
        sock_.flush();                    // nothing queued may point into slots given back
        for (auto &[key, c] : channels_)  // the burst is over: its slots go back
            c->trim();
    }
    if (busy_hint_.load(std::memory_order_relaxed) != busy())
        busy_hint_.store(busy(), std::memory_order_relaxed);
    return n;
}

// Acknowledge at once after a gap, a duplicate or a packet that asks for it (the
// sender's window is full), every kAckEvery packets (fewer when grants are small), and whenever
// the socket runs dry (so a lone message is acknowledged without waiting); a reply
// sent in between carries the acknowledgement for free.
void UdpEndpoint::flush_acks(bool idle) {
    // At least twice per grant: a sender whose grant is small keeps sending.
    const unsigned ack_every = std::clamp(grant_ / 2, 1u, kAckEvery);
    for (size_t i = 0; i < ack_list_.size();) {
        Channel *c = ack_list_[i];
        bool owed = c->alive() && (c->rx_unacked() || c->ack_urgent());
        if (owed && (idle || c->ack_urgent() || c->rx_unacked() >= ack_every)) {
            c->send_ack();
            owed = false;
        }
        if (owed) {
            i++;
            continue;
        }
        c->in_ack_list = false;
        ack_list_[i] = ack_list_.back();
        ack_list_.pop_back();
    }
}

// Before closing, answer the duplicates of peers whose last acknowledgement from us may
// have been lost, as TCP's TIME_WAIT does: until the peers have been quiet for eight of
// their retransmission timeouts (a resend and two backed-off ones, 1 + 2 + 4, all lost),
// at least 10 ms, and for at most twice that (50 ms to 500 ms). A peer that retransmits
// into a closed port is told "unreachable" and fails its last operation, which we had.
// A peer's timeout is the one its datagrams said, or ours toward it, whichever is longer:
// they differ (one that just sent a burst measured a longer round trip: 29 ms against
// our 0.5 ms was seen). The acknowledgement is also sent again, four times across the
// quiet time: a peer that has one resends nothing at all.
void UdpEndpoint::linger() {
    constexpr uint64_t kMin = 50000000;  // ns
    uint64_t quiet = linger_quiet_ns();
    if (!quiet) return;
    ack_heard_peers();
    closing_ = true;
    struct Refuse : PacketSink {
        bool deliver(const uint8_t *, size_t) override { return false; }
    } refuse;
    const uint64_t limit = std::max(kMin, 2 * quiet), ack_every = quiet / 5;
    uint64_t start = now_ns(), last_rx = start, next_ack = start + ack_every;
    for (uint64_t now = start; now - start < limit && now - last_rx < quiet; now = now_ns()) {
        if (poll(refuse, 64)) last_rx = now;
        sock_.release_faults(now);
        if (now >= next_ack) {
            quiet = std::max(quiet, linger_quiet_ns());  // a resend may have said a longer timer
            ack_heard_peers();
            next_ack = now + ack_every;
        }
        struct timespec ts = {0, 200000};
        nanosleep(&ts, nullptr);
    }
}

uint64_t UdpEndpoint::linger_quiet_ns() const {
    constexpr uint64_t kQuietMin = 10000000, kQuietMax = 250000000;  // ns
    uint64_t quiet = 0;
    for (auto &c : all_)
        if (c->alive() && c->heard_from_peer()) {
            const uint64_t rto = std::max(c->rto_ns(), c->peer_rto_ns());
            quiet = std::max({quiet, kQuietMin, std::min(kQuietMax, 8 * rto)});
        }
    return quiet;
}

// An acknowledgement to every live peer we heard from.
void UdpEndpoint::ack_heard_peers() {
    for (auto &c : all_)
        if (c->alive() && c->heard_from_peer()) c->send_ack();
    sock_.flush();
}

// Our receive queue runs deep: we are the bottleneck, as a switch port is when its queue
// grows. The peers that just sent to us hear of it with their next acknowledgement, sent
// at once, and slow down (an ECN mark, in effect). Losses on the wire draw no mark: they
// are repaired without slowing down.
void UdpEndpoint::signal_congestion() {
    stats_.marks++;
    const uint64_t now = now_ns(), recent = 10000000;  // heard from in the last 10 ms
    for (auto &c : all_)
        if (c->alive() && now - c->last_heard_ns() < recent) c->mark_congested();
}

// Every millisecond of incoming data, and after a peer starts sending (before the
// acknowledgements of its first packets carry a grant): the receive buffer is shared between the
// peers that sent data in the last few milliseconds, as a switch's buffer is shared between its
// input ports, or a receiver's credits between its senders. A lone sender keeps the whole window;
// 32 of them toward one receiver together fit its socket instead of overflowing it and losing
// packets to timeouts. A grant that shrinks takes effect as the peer's earlier grant is used up (a
// limit once advertised is never taken back).
void UdpEndpoint::share_buffer(uint64_t now) {
    constexpr uint64_t kPeriodNs = 1000000;
    constexpr uint32_t kMinGrant = 4;
    share_due_ns_ = now + kPeriodNs;
    uint32_t senders = 0;
    for (auto &c : all_)
        senders += c->alive() && now - c->last_data_ns() < kSendingNs;
    uint32_t share = senders > 1 ? buffer_packets_ / senders : cfg_.window;
    grant_ = std::clamp(share, std::min(kMinGrant, cfg_.window), cfg_.window);
}

void UdpEndpoint::run_timers(uint64_t now) {
    uint64_t next = 0;
    for (auto &c : all_) {
        if (!c->alive() || !c->busy()) continue;
        uint64_t d = c->on_timer(now);
        if (d && (!next || d < next)) next = d;
    }
    next_deadline_ = next;
}

void UdpEndpoint::need_ack(Channel *c) {
    if (c->in_ack_list) return;
    c->in_ack_list = true;
    ack_list_.push_back(c);
    busy_hint_.store(true, std::memory_order_relaxed);
}

void UdpEndpoint::need_drain(Channel *c) {
    if (c->in_drain_list) return;
    c->in_drain_list = true;
    drain_list_.push_back(c);
    busy_hint_.store(true, std::memory_order_relaxed);
}

void UdpEndpoint::arm_timer(uint64_t deadline) {
    if (!next_deadline_ || deadline < next_deadline_) next_deadline_ = deadline;
    busy_hint_.store(true, std::memory_order_relaxed);
}

void UdpEndpoint::channel_failed(Channel *c) {
    auto it = channels_.find(sockaddr_key(c->peer()));
    if (it != channels_.end() && it->second == c) channels_.erase(it);
    if (last_ == c) last_ = nullptr;
    failed_.push_back(c);
}

void UdpEndpoint::take_failed(std::vector<Link *> &out) {
    out.insert(out.end(), failed_.begin(), failed_.end());
    failed_.clear();
}

}  // namespace softnic::transport::udp

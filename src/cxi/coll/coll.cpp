// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "cxi/coll/coll.hpp"

#include <rdma/fi_collective.h>
#include <rdma/fi_cxi_ext.h>

#include <cmath>
#include <cstring>
#include <optional>

#include "common/clock.hpp"
#include "common/log.hpp"
#include "cxi/coll/coll_group.hpp"
#include "cxi/core/pid_engine.hpp"
#include "cxi/obj/domain.hpp"
#include "cxi/prov/env.hpp"

namespace softnic::cxi {
using namespace coll_shape;
namespace {

// A kColl packet: tag = the group's key, cookie = the call's sequence number, offset =
// the sender's rank, cq_data = kind | op << 8 | dt << 16 | flags << 24 | count << 32,
// rdzv_addr = a result's reduction error (FI_CXI_ERRNO_RED_*), payload = the bytes.
enum CollFlags : uint8_t { kResult = 1, kProbe = 2 };
constexpr size_t kMaxUnjoined = 8192;  // packets held for groups not joined here yet

bool double_sum(const CollArgs &a) {
    return a.dt == FI_DOUBLE && a.op == FI_SUM;
}

// Same members in the same order on every member: the same key. The n-th join of one
// membership gets the n-th key, so members that join in the same order agree.
uint64_t members_hash(const std::vector<CxiAddr> &m) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const CxiAddr &a : m) {
        h ^= addr_key(a.nic, a.pid, a.vni);
        h *= 0x100000001b3ULL;
    }
    return h;
}

}  // namespace

CollEngine::CollEngine(PidEngine &engine) : engine_(engine), domain_(engine.domain()) {}
CollEngine::~CollEngine() {
    for (auto &g : groups_)
        if (g) board_leave(*g);
}

CollEngine::Group *CollEngine::group(fi_addr_t a) const {
    if (!(a & kGroupAddrBit)) return nullptr;
    size_t i = a & ~kGroupAddrBit;
    return i < groups_.size() ? groups_[i].get() : nullptr;
}

CollEngine::Group *CollEngine::group_by_key(uint64_t key) const {
    for (const auto &g : groups_)
        if (g && g->key == key) return g.get();
    return nullptr;
}

fi_addr_t CollEngine::join(std::vector<CxiAddr> members, uint32_t rank) {
    auto g = std::make_unique<Group>();
    uint64_t hash = members_hash(members), ordinal = join_counts_[hash]++;
    g->key = hash ^ (ordinal * 0x9e3779b97f4a7c15ULL);
    g->members = std::move(members);
    g->links.assign(g->members.size(), nullptr);
    g->rank = rank;
    g->boards.assign(g->members.size(), nullptr);
    board_join(*g);
    size_t index = groups_.size();
    groups_.push_back(std::move(g));
    // Packets of members that joined first.
    auto held = std::move(unjoined_);
    unjoined_.clear();
    for (auto &[h, data] : held)
        on_packet(h, data.data());
    return kGroupAddrBit | index;
}

void CollEngine::leave(fi_addr_t a) {
    Group *g = group(a);
    if (!g) return;
    for (Op &op : g->slots)  // calls still in flight end, canceled
        if (op.used && op.posted) complete(*g, op, FI_CXI_ERRNO_RED_MC_FAILURE, FI_ECANCELED);
    board_leave(*g);
    groups_[a & ~kGroupAddrBit].reset();
}

int CollEngine::members(fi_addr_t a, uint32_t &count) const {
    Group *g = group(a);
    if (!g) return -FI_EINVAL;
    count = uint32_t(g->members.size());
    return 0;
}

int CollEngine::rank_of(fi_addr_t a, const CxiAddr &peer) const {
    Group *g = group(a);
    if (!g) return -1;
    for (size_t r = 0; r < g->members.size(); r++) {
        const CxiAddr &m = g->members[r];
        if (m.nic == peer.nic && m.pid == peer.pid) return int(r);
    }
    return -1;
}

ssize_t CollEngine::post(fi_addr_t a, const CollArgs &args) {
    Group *g = group(a);
    if (!g) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "0x%lx is not a joined collective\n", a);
    if (args.root >= g->members.size())
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "the root is not a member of the collective\n");
    if (args.kind == CollKind::kReduce && args.root == g->rank && !args.result)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "NULL result buffer at the reduce's root\n");
    if (g->posted >= kMaxInFlight) return -FI_EAGAIN;
    Op *slot = g->claim(g->next_seq);
    if (!slot) return -FI_EAGAIN;  // an older call still holds the slot
    Op &op = *slot;
    uint32_t seq = g->next_seq++;
    op.posted = true;
    op.a = args;
    if (double_sum(args)) op.a.fp_mode = fp_mode_now();  // the caller's environment
    op.len = coll_bytes(args.kind, args.op, args.dt, args.count);
    op.posted_ns = 0;  // the first look at the members stamps it (no clock on the call path)
    g->posted++;
    in_flight_++;
    if (g->failed) {
        complete(*g, op, g->failed);
        g->release(op);
        return 0;
    }
    contribute(*g, op);
    if (g->mine) board_poll(*g);  // the others may have posted theirs already
    if (Op *still = g->find(seq); still && collects(*g, args)) try_finish(*g, *still);
    return 0;
}

// Whether this member gathers the contributions of a call: its root, or everyone in a
// direct exchange.
bool CollEngine::collects(const Group &g, const CollArgs &a) const {
    return g.rank == a.root || direct(g.members.size(), a.kind);
}

// A member's contribution goes to those who gather (the root, or everyone); they keep
// their own.
void CollEngine::contribute(Group &g, Op &op) {
    const CollArgs &a = op.a;
    const bool data = a.kind != CollKind::kBroadcast || g.rank == a.root;
    const uint32_t seq = op.seq;
    if (collects(g, a)) {
        if (data && op.len) std::memcpy(op.contrib[g.rank].data(), a.buf, op.len);
        op.sig[g.rank] = signature(a);
    }
    WireHdr h{};
    h.cookie = seq;
    h.cq_data = signature(a);
    h.msg_len = data ? op.len : 0;
    const bool everyone = direct(g.members.size(), a.kind);
    if (everyone && g.mine && board_post(g, op, data ? a.buf : nullptr)) return;
    for (uint32_t r = 0; r < g.members.size() && !g.failed; r++)
        if (r != g.rank && (everyone || r == a.root)) send(g, r, h, data ? a.buf : nullptr);
}

// The link to a member, resolved on first use (links outlive the group: domain, ports).
transport::Link *CollEngine::link_to(Group &g, uint32_t member) {
    transport::Link *&cached = g.links[member];
    if (cached && cached->alive()) return cached;
    const CxiAddr &m = g.members[member];
    PeerLinks &links = engine_.links();
    int err = 0;
    return cached = links.link_for(m.nic, m.pid, links.peer_vni(m.vni), err);
}

void CollEngine::send(Group &g, uint32_t to, WireHdr h, const void *data) {
    PeerLinks &links = engine_.links();
    transport::Link *link = link_to(g, to);
    if (!link) {
        if (!g.failed) fail_group(g, FI_CXI_ERRNO_RED_MC_FAILURE);
        return;
    }
    WireHdr w = wire_hdr(Pkt::kColl, links.vni_of(link), engine_.pid(), domain_.nic().addr);
    w.tag = g.key;
    w.cookie = h.cookie;
    w.offset = g.rank;
    w.cq_data = h.cq_data;
    w.rdzv_addr = h.rdzv_addr;
    w.msg_len = h.msg_len;
    w.payload = uint32_t(data ? h.msg_len : 0);
    engine_.tx().send_ctrl(link, w, data);
}

void CollEngine::on_packet(const WireHdr &h, const uint8_t *payload) {
    uint8_t flags = uint8_t(h.cq_data >> 24);
    if (h.payload > kCollMaxBytes || h.payload != (h.payload ? h.msg_len : 0)) {
        SN_WARN(FI_LOG_EP_DATA, "dropping a malformed collective packet\n");
        domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
        return;
    }
    if (flags & kProbe) return;  // it only keeps the channel honest
    Group *g = group_by_key(h.tag);
    if (!g) {
        if (unjoined_.size() >= kMaxUnjoined) {
            SN_WARN(FI_LOG_EP_DATA, "dropping a collective packet of an unknown group\n");
            domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
            return;
        }
        auto &held = unjoined_.emplace_back(h, std::array<uint8_t, kCollMaxBytes>{});
        if (h.payload) std::memcpy(held.second.data(), payload, h.payload);
        return;
    }
    if (h.offset >= g->members.size() || h.offset == g->rank ||
        g->members[h.offset].nic != h.src_nic || g->members[h.offset].pid != h.src_pid) {
        SN_WARN(FI_LOG_EP_DATA, "dropping a collective packet of no member\n");
        domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
        return;
    }
    if (flags & kResult)
        on_result(*g, h, payload);
    else
        take(*g, uint32_t(h.cookie), uint32_t(h.offset), h, payload);
}

// Root: one member's contribution (it may come before our own call).
void CollEngine::take(Group &g, uint32_t seq, uint32_t from, const WireHdr &h,
                      const uint8_t *payload) {
    if (g.failed) {  // the sender may be waiting on us: tell it
        WireHdr r{};
        r.cookie = seq;
        r.cq_data = (h.cq_data & ~(0xffULL << 24)) | uint64_t(kResult) << 24;
        r.rdzv_addr = uint64_t(g.failed);
        send(g, from, r, nullptr);
        return;
    }
    // Sequence numbers wrap: compare by distance. Behind us: a call already over (stale);
    // ahead by more than members can be apart: forged.
    const int32_t ahead = int32_t(seq - g.next_seq);
    if (ahead < 0 ? !g.find(seq) : ahead >= int32_t(Group::kSlots - kMaxInFlight)) {
        domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
        return;
    }
    Op *slot = g.claim(seq);
    if (!slot) {
        domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
        return;
    }
    Op &op = *slot;
    if (op.got[from] || (op.posted && !collects(g, op.a))) {
        domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
        return;
    }
    record(g, op, from, h.cq_data & ~(0xffULL << 24), payload, h.payload);
}

// One member's contribution, from a packet or the board (`len` <= kCollMaxBytes).
void CollEngine::record(Group &g, Op &op, uint32_t from, uint64_t sig, const uint8_t *payload,
                        size_t len) {
    op.got[from] = 1;
    op.arrived++;
    op.sig[from] = sig;
    if (len != payload_of(sig, from)) op.sig[from] = ~0ULL;  // a mismatch
    if (len) std::memcpy(op.contrib[from].data(), payload, len);
    if (op.posted) try_finish(g, op);
}

// Root: once every member's contribution is in, fold them in rank order and answer.
void CollEngine::try_finish(Group &g, Op &op) {
    if (!op.posted || op.arrived + 1 < g.members.size()) return;
    const CollArgs &a = op.a;
    int err = 0;
    for (uint64_t s : op.sig)
        if (s != op.sig[g.rank]) err = FI_CXI_ERRNO_RED_OP_MISMATCH;
    std::array<uint8_t, kCollMaxBytes> out{};
    if (!err && a.kind == CollKind::kBroadcast) {
        out = op.contrib[g.rank];
    } else if (!err && a.kind != CollKind::kBarrier) {
        out = op.contrib[0];
        if (a.op == FI_CXI_REPSUM) {
            for (size_t i = 0; i < a.count; i++) {
                RepSum sum;
                bool given_inf = false;
                for (const auto &c : op.contrib) {
                    double x;
                    std::memcpy(&x, c.data() + 8 * i, 8);
                    given_inf |= std::isinf(x);
                    sum.add(x);
                }
                double v = sum.value();
                if (std::isnan(v)) err = FI_CXI_ERRNO_RED_FLT_INVALID;  // a NaN, or inf - inf
                if (std::isinf(v) && !given_inf) err = FI_CXI_ERRNO_RED_FLT_OVERFLOW;
                std::memcpy(out.data() + 8 * i, &v, 8);
            }
        } else {
            std::optional<FpModeScope> fp;
            if (double_sum(a)) fp.emplace(a.fp_mode);
            for (size_t r = 1; r < op.contrib.size() && !err; r++)
                err = coll_reduce(a.op, a.dt, out.data(), op.contrib[r].data(), a.count);
        }
    }
    const bool to_all = a.kind == CollKind::kAllreduce || a.kind == CollKind::kBroadcast;
    const bool everyone = direct(g.members.size(), a.kind);  // each member folds its own
    const uint32_t seq = op.seq;
    for (uint32_t r = 0; r < g.members.size() && !everyone; r++) {
        if (r == g.rank) continue;
        WireHdr h{};
        h.cookie = seq;
        h.cq_data = signature(a) | uint64_t(kResult) << 24;
        h.rdzv_addr = uint64_t(err);
        h.msg_len = to_all && !err ? op.len : 0;
        send(g, r, h, h.msg_len ? out.data() : nullptr);
    }
    if (!op.used || op.seq != seq) return;  // a send found a member gone: already failed
    if (!err && op.len && a.kind != CollKind::kBarrier && a.result &&
        a.kind != CollKind::kBroadcast)
        std::memcpy(a.result, out.data(), op.len);
    complete(g, op, err);
    g.release(op);
}

void CollEngine::on_result(Group &g, const WireHdr &h, const uint8_t *payload) {
    Op *slot = g.find(uint32_t(h.cookie));
    // Results come from the call's root; news of a failure from any member.
    if (!slot || !slot->posted || (slot->a.root != h.offset && !h.rdzv_addr)) {
        domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
        return;
    }
    Op &op = *slot;
    int err = int(h.rdzv_addr);
    if (err == FI_CXI_ERRNO_RED_MC_FAILURE) {  // a member is gone: so is the group
        fail_group(g, err);
        return;
    }
    if (!err && h.payload && h.payload == op.len && op.a.result)
        std::memcpy(op.a.result, payload, h.payload);
    else if (!err && op.len && op.a.kind != CollKind::kBarrier && op.a.kind != CollKind::kReduce)
        err = FI_CXI_ERRNO_RED_OTHER;  // a result of the wrong size
    complete(g, op, err);
    g.release(op);
}

void CollEngine::complete(Group &g, Op &op, int prov_errno, int err) {
    g.posted--;
    in_flight_--;
    const CompletionBind &b = engine_.tx_bind();
    if (!b.cq) return;
    if (!prov_errno) {
        b.cq->push(Completion{op.a.context, FI_COLLECTIVE, 0, nullptr, 0, 0, FI_ADDR_NOTAVAIL});
        return;
    }
    ErrorCompletion e;
    e.entry.op_context = op.a.context;
    e.entry.flags = FI_COLLECTIVE;
    e.entry.err = err;
    e.entry.prov_errno = prov_errno;
    b.cq->push_error(e);
}

// A member died: every call in flight fails, and so does every later one. A root tells
// the members still there.
void CollEngine::fail_group(Group &g, int prov_errno) {
    if (g.failed) return;
    g.failed = prov_errno;
    SN_WARN(FI_LOG_EP_DATA, "a member of a collective group is gone: its calls fail\n");
    for (Op &op : g.slots) {
        if (!op.used) continue;
        if (op.posted && g.rank == op.a.root && !direct(g.members.size(), op.a.kind)) {
            for (uint32_t r = 0; r < g.members.size(); r++) {
                if (r == g.rank) continue;
                WireHdr h{};
                h.cookie = op.seq;
                h.cq_data = signature(op.a) | uint64_t(kResult) << 24;
                h.rdzv_addr = uint64_t(prov_errno);
                send(g, r, h, nullptr);
            }
        }
        if (op.posted) complete(g, op, prov_errno);
        g.release(op);
    }
}

void CollEngine::peer_failed(uint32_t nic, uint32_t pid) {
    for (auto &g : groups_) {
        if (!g) continue;
        for (const CxiAddr &m : g->members)
            if (m.nic == nic && m.pid == pid) {
                fail_group(*g, FI_CXI_ERRNO_RED_MC_FAILURE);
                break;
            }
    }
}

// Members waited for are looked at every FI_CXI_COLL_RETRY_USEC: a closed ring or a dead
// process fails the group now; over the network a probe makes the reliable channel find
// out. A call still waiting after FI_CXI_COLL_TIMEOUT_USEC fails the group too.
void CollEngine::check_members(Group &g, uint64_t now) {
    const uint64_t retry_ns = uint64_t(env().coll_retry_usec) * 1000;
    const uint64_t timeout_ns = uint64_t(env().coll_timeout_usec) * 1000;
    for (Op &op : g.slots) {
        if (!op.used || !op.posted) continue;
        if (!op.posted_ns) {
            op.posted_ns = op.probed_ns = now;
            continue;
        }
        if (now - op.probed_ns < retry_ns) continue;
        if (now - op.posted_ns >= timeout_ns) {
            SN_WARN(FI_LOG_EP_DATA, "a collective call timed out waiting for its members\n");
            fail_group(g, FI_CXI_ERRNO_RED_MC_FAILURE);
            return;
        }
        op.probed_ns = now;
        for (uint32_t r = 0; r < g.members.size(); r++) {
            bool waited_for = collects(g, op.a) ? r != g.rank && !op.got[r] : r == op.a.root;
            if (!waited_for) continue;
            const CxiAddr &m = g.members[r];
            PeerLinks &links = engine_.links();
            int err = 0;
            transport::Link *link = links.link_for(m.nic, m.pid, links.peer_vni(m.vni), err);
            if (!link || !link->alive() || link->peer_dead()) {
                fail_group(g, FI_CXI_ERRNO_RED_MC_FAILURE);
                return;
            }
            WireHdr h{};
            h.cq_data = uint64_t(kProbe) << 24;
            send(g, r, h, nullptr);
        }
    }
}

void CollEngine::progress() {
    if (board_groups_)
        for (auto &g : groups_)
            if (g && g->mine && g->posted && !g->failed) board_poll(*g);
    if ((++calls_ & 255) != 0) return;
    uint64_t now = monotonic_ns();
    for (auto &g : groups_) {
        if (!g || !g->posted || g->failed) continue;
        if (g->mine && !g->board_all) board_look(*g);
        check_members(*g, now);
    }
}

}  // namespace softnic::cxi

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The collective engine of a context (fi_collective(3) as fi_cxi(7) offers it): groups
// joined over AV sets, and barrier, broadcast, reduce and allreduce of up to 32 bytes on
// them. The hardware reduces in the switches; here the members do: every member sends
// its contribution to the root (`kColl` packets over the context's links, shared memory
// or UDP alike), the root folds them in rank order once all have arrived and sends the
// result to every member. Allreduce and barrier in groups of up to 4 skip the second hop:
// every member sends to every other and folds for itself. Rank order makes every result
// the same bits on every member, whatever the arrival order (FI_CXI_REPSUM's promise).
// Within a host those direct contributions skip the rings: each member posts its own on
// a board in its memory window and reads the others' there (coll_board.cpp).
#pragma once

#include <rdma/fi_domain.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "cxi/coll/coll_math.hpp"
#include "cxi/core/wire.hpp"
#include "cxi/obj/addr.hpp"
#include "transport/transport.hpp"

namespace softnic::cxi {

class PidEngine;
class Domain;

// What an application's collective call asks for.
struct CollArgs {
    CollKind kind;
    const void *buf;  // the contribution (broadcast: the root's data, the others' buffer)
    void *result;     // where the result goes (broadcast: buf)
    size_t count;
    int dt, op;
    uint32_t root;  // rank
    void *context;
    uint8_t fp_mode = 0;  // a double sum's rounding (coll_math.hpp), taken at the call
};

class CollEngine {
  public:
    static constexpr size_t kMaxInFlight = 8;  // per group, as upstream
    // The fi_addr of a joined group (what fi_mc_addr returns): this bit and its index.
    static constexpr fi_addr_t kGroupAddrBit = 1ULL << 61;

    explicit CollEngine(PidEngine &engine);
    ~CollEngine();
    CollEngine(const CollEngine &) = delete;
    CollEngine &operator=(const CollEngine &) = delete;

    // A new group of `members` (by rank; ours is `rank`): its fi_addr.
    fi_addr_t join(std::vector<CxiAddr> members, uint32_t rank);
    void leave(fi_addr_t group);
    // The group an fi_addr names, with its size; -FI_EINVAL when there is none.
    int members(fi_addr_t group, uint32_t &count) const;
    // The rank of the member whose address is `a` in `group`, or -1.
    int rank_of(fi_addr_t group, const CxiAddr &a) const;
    ssize_t post(fi_addr_t group, const CollArgs &a);

    void on_packet(const WireHdr &h, const uint8_t *payload);
    void progress();  // failed members: probe the ones waited for
    void peer_failed(uint32_t nic, uint32_t pid);
    bool active() const { return in_flight_ != 0; }

  private:
    struct Op;
    struct Group;
    Group *group(fi_addr_t a) const;
    Group *group_by_key(uint64_t key) const;
    bool collects(const Group &g, const CollArgs &a) const;
    void contribute(Group &g, Op &op);
    void take(Group &g, uint32_t seq, uint32_t from, const WireHdr &h, const uint8_t *payload);
    void record(Group &g, Op &op, uint32_t from, uint64_t sig, const uint8_t *payload, size_t len);
    void try_finish(Group &g, Op &op);
    void on_result(Group &g, const WireHdr &h, const uint8_t *payload);
    transport::Link *link_to(Group &g, uint32_t member);
    void send(Group &g, uint32_t to, WireHdr h, const void *data);
    // The board (coll_board.cpp).
    void board_join(Group &g);
    void board_leave(Group &g);
    void board_look(Group &g);
    bool board_room(Group &g, uint32_t seq);
    bool board_post(Group &g, const Op &op, const void *data);
    void board_poll(Group &g);
    void complete(Group &g, Op &op, int prov_errno, int err = FI_EIO);
    void fail_group(Group &g, int prov_errno);
    void check_members(Group &g, uint64_t now_ns);

    PidEngine &engine_;
    Domain &domain_;
    std::vector<std::unique_ptr<Group>> groups_;  // by index (null: left)
    std::vector<std::pair<WireHdr, std::array<uint8_t, kCollMaxBytes>>> unjoined_;
    std::map<uint64_t, uint64_t> join_counts_;  // joins of each membership so far
    size_t in_flight_ = 0;
    size_t board_groups_ = 0;  // groups with an entry on our board
    unsigned calls_ = 0;
};

}  // namespace softnic::cxi

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The receive engine of a context: posted receives, matching (FIFO, tagged and untagged
// apart), unexpected messages, multi-receive buffers, rendezvous pulls and receive
// completions.
#pragma once

#include <rdma/fi_endpoint.h>

#include <unordered_map>
#include <vector>

#include "common/pool.hpp"
#include "cxi/core/rx_state.hpp"
#include "cxi/core/wire.hpp"

namespace softnic::cxi {

class PidEngine;
class Domain;

struct RecvArgs {
    void *buf;
    size_t len;
    fi_addr_t src;
    uint64_t tag;
    uint64_t ignore;
    void *context;
    uint64_t flags;
    bool tagged;
    hmem::Staging *stage = nullptr;  // a device buffer's host stand-in (buf is its host())
};

// A whole record for receive `a` (every field: the pool hands it out as last left).
// FI_DISCARD: the message is received into nothing and completes with its own length.
inline void fill_recv(RecvOp &r, const RecvArgs &a, Cntr *trig_cntr = nullptr,
                      bool triggered = false) {
    const bool discard = a.flags & FI_DISCARD;
    r = RecvOp{.context = a.context,
               .flags = a.flags,
               .buf = discard ? nullptr : static_cast<uint8_t *>(a.buf),
               .len = discard ? 0 : a.len,
               .src = a.src,
               .tag = a.tag,
               .ignore = a.ignore,
               .tagged = a.tagged,
               .triggered = triggered,
               .trig_cntr = trig_cntr,
               .stage = a.stage};
}

class RxEngine {
  public:
    explicit RxEngine(PidEngine &engine);
    ~RxEngine();
    RxEngine(const RxEngine &) = delete;
    RxEngine &operator=(const RxEngine &) = delete;

    // Posting (rx_post.cpp); the context's lock is held.
    ssize_t recv(const RecvArgs &a, Cntr *trig_cntr, bool triggered);
    // The common post, inline into the entry points so that the arguments go straight into
    // the record: no FI_CLAIM, FI_MORE or FI_MULTI_RECV, nothing held or unexpected (recv's
    // common case, tested again here: a shared helper for the test cost 9-17 instructions,
    // GCC then leaving the pool's take_any out of line).
    [[gnu::always_inline]] ssize_t post(const RecvArgs &a) {
        if ((a.flags & (FI_CLAIM | FI_MORE | FI_MULTI_RECV)) || held_recvs_.head ||
            unexpected_[a.tagged].head) [[unlikely]]
            return recv(a, nullptr, false);
        RecvOp *op = recvs_.take_any();
        fill_recv(*op, a);
        posted_[a.tagged].push_back(op);
        return 0;
    }
    ssize_t peek(const RecvArgs &a);  // FI_PEEK, optionally with FI_CLAIM
    int cancel(void *context);
    size_t unexpected(fi_cq_tagged_entry *e, size_t count, fi_addr_t *src, size_t *total);
    size_t &min_multi_recv() { return min_multi_recv_; }

    // Where an arriving message goes: its sender and the first posted receive it matches,
    // looked up once (on_small's lookup serves on_msg when it hands the message on).
    struct Match {
        bool looked_up = false;  // the rest is valid only when set
        uint64_t key;
        fi_addr_t src;
        bool known;
        RecvOp *op;
    };
    // Arrivals (rx_engine.cpp). on_msg returns false when the message must wait in the ring.
    bool on_msg(const WireHdr &h, const uint8_t *payload, const Match *looked_up = nullptr);
    // A kSmall message (checked by the caller) that fits a posted receive of its own:
    // delivered and completed; false leaves it to on_msg (unexpected, multi-receive...),
    // with `m` saying what was looked up.
    bool on_small(const SmallHdr &s, const uint8_t *payload, Match &m);
    void on_data(const WireHdr &h, const uint8_t *payload);
    // The sender's fi_addr, through a small cache that the AV's generation invalidates.
    fi_addr_t source_of(uint64_t key, bool &known);

    // A peer died (rx_unexpected.cpp): its messages in flight fail, its unfinished
    // unexpected ones are dropped.
    void fail_inbound(uint32_t nic, uint32_t pid, int err);

  private:
    fi_addr_t cached_source(uint64_t key, bool &known);    // source_of, inline in rx_engine.cpp
    fi_addr_t arriving_source(uint64_t key, bool &known);  // only when something asks
    ssize_t recv_claimed(const RecvArgs &a);               // FI_CLAIM
    RecvOp *match_posted(bool tagged, uint64_t tag, fi_addr_t src);
    bool recv_matches(const RecvOp &r, bool tagged, uint64_t tag, fi_addr_t src) const;
    void bind_receive(RxMsg *m, RecvOp *op, bool listed);
    void place(RxMsg *m, size_t offset, const uint8_t *data, size_t n);
    void finish_eager(RxMsg *m);
    void complete_rx(RxMsg *m, int err, bool pooled = true);
    // `p`: the packet's prefix (flags, and payload: the whole message).
    bool receive_whole(RecvOp *op, const WirePrefix &p, uint64_t tag, uint64_t cq_data,
                       const uint8_t *payload, fi_addr_t src, bool known);
    // Inlined into its two callers (the 8-byte path's receive_whole is one).
    [[gnu::always_inline]] inline void report_recv(const RecvOp *op, uint64_t flags, size_t len,
                                                   uint8_t *buf, uint64_t data, uint64_t tag,
                                                   fi_addr_t src);
    void complete_recv(RecvOp *op, size_t len, const RxMsg *m, uint8_t *buf, int err, size_t olen,
                       bool truncated = false);
    bool rnr_refuse(const WireHdr &h);
    void post_held_recvs();
    // Unexpected messages (rx_unexpected.cpp).
    RxMsg *match_unexpected(const RecvArgs &a, bool skip_claimed);
    void take_unexpected(RxMsg *m, RecvOp *op);
    void drop_orphans(uint32_t nic, uint32_t pid);
    void free_msg(RxMsg *m);
    uint8_t *alloc_ux(size_t n);
    void free_ux(uint8_t *p, size_t n);
    // Rendezvous (rdzv.cpp).
    transport::Link *link_back(RxMsg *m);
    WireHdr reply_hdr(const RxMsg *m, Pkt type) const;
    void start_pull(RxMsg *m);
    bool pull_device(RxMsg *m);
    void send_done(RxMsg *m, uint16_t flags);
    void fail_msg(RxMsg *m, int err);

    PidEngine &engine_;
    Domain &domain_;
    size_t min_multi_recv_ = 64;
    Pool<RecvOp> recvs_;
    Pool<RxMsg> msgs_;
    List<RecvOp> posted_[2];   // [untagged, tagged]
    List<RecvOp> held_recvs_;  // FI_MORE receives not yet handed over
    List<RxMsg> unexpected_[2];
    size_t ux_bytes_ = 0;
    static constexpr size_t kSmallUx = 256;
    std::vector<uint8_t *> small_ux_;  // free fixed-size blocks for small unexpected payloads
    // Messages still arriving, by sender and cookie (pulled data: kPulledKey in src).
    struct InKey {
        uint64_t src, cookie;
        bool operator==(const InKey &o) const { return src == o.src && cookie == o.cookie; }
    };
    struct InKeyHash {
        size_t operator()(const InKey &k) const { return k.src * 0x9e3779b97f4a7c15ULL ^ k.cookie; }
    };
    std::unordered_map<InKey, RxMsg *, InKeyHash> inbound_;
    static constexpr uint64_t kPulledKey = 1ULL << 63;
    struct SrcCacheEntry {
        uint64_t key = ~0ULL, gen = 0;
        fi_addr_t addr = FI_ADDR_NOTAVAIL;
    };
    SrcCacheEntry src_cache_[64];
};

}  // namespace softnic::cxi

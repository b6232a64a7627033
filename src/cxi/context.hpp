// A context is what owns one PID on the soft NIC: its receive ring, the matching engine
// (posted and unexpected lists), and the transmit engine. A plain endpoint has one; a
// scalable endpoint has one per TX/RX context pair.
#pragma once

#include <rdma/fi_endpoint.h>

#include <array>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "common/av.hpp"
#include "common/cntr.hpp"
#include "common/cq.hpp"
#include "common/lock.hpp"
#include "common/mr.hpp"
#include "common/pool.hpp"
#include "common/progress.hpp"
#include "cxi/addr.hpp"
#include "cxi/caps.hpp"
#include "cxi/rx_state.hpp"
#include "cxi/wire.hpp"
#include "transport/offload.hpp"
#include "transport/shm/window.hpp"
#include "transport/transport.hpp"
#include "transport/udp/udp_endpoint.hpp"

namespace softnic::cxi {

class Domain;

// What a transmit operation is: its packets and its completion differ.
enum class OpKind : uint8_t {
    kSend,         // fi_send & co, fi_tsend & co
    kWrite,        // fi_write & co
    kRead,         // fi_read & co
    kReadResp,     // target side: data an initiator's read asked for (no completion)
    kAtomic,       // fi_atomic & co
    kFetchAtomic,  // fi_fetch_atomic & co, fi_compare_atomic & co
};

struct SendArgs {
    const void *buf;
    size_t len;
    fi_addr_t dest;
    uint64_t tag;
    uint64_t data;
    void *context;
    uint64_t flags;
    bool tagged;
    bool inject_call = false;  // fi_inject & co: never a completion entry
    OpKind kind = OpKind::kSend;
    uint64_t rkey = 0, raddr = 0;   // one-sided: the target MR's key and offset in it
    const void *compare = nullptr;  // atomics: the comparand (or mask), one element
    void *result = nullptr;         // fetching atomics: where the previous value goes
    uint8_t amo_op = 0, amo_dt = 0;
    bool restricted = false;  // one-sided: the hardware's restricted (light-weight) path
    // A triggered operation counts its completion on trig_cntr (may be null) instead
    // of the endpoint's counter.
    bool triggered = false;
    Cntr *trig_cntr = nullptr;
};

inline bool is_amo(OpKind k) {
    return k == OpKind::kAtomic || k == OpKind::kFetchAtomic;
}

struct RecvArgs {
    void *buf;
    size_t len;
    fi_addr_t src;
    uint64_t tag;
    uint64_t ignore;
    void *context;
    uint64_t flags;
    bool tagged;
};

struct CompletionBind {
    Cq *cq = nullptr;
    bool selective = false;
    Cntr *cntr = nullptr;  // FI_SEND / FI_RECV
    // Transmit side: FI_WRITE / FI_READ; receive side: FI_REMOTE_WRITE / FI_REMOTE_READ.
    Cntr *write_cntr = nullptr, *read_cntr = nullptr;
    std::array<Cntr *, 3> cntrs() const { return {cntr, write_cntr, read_cntr}; }
};

struct TxOp {
    SendArgs a;
    transport::Link *link;
    uint64_t cookie;
    size_t eager_len;
    size_t sent;  // eager bytes queued so far
    bool hdr_sent, rdzv, wait_done, done_seen;
    size_t stream_off, stream_end;  // data owed to a kGetReq
    uint8_t inline_data[kInjectSize];
    TxOp *next, *prev;
    uint32_t gen;
    bool pending, queued_for_stream;
    bool awaiting_ack;            // transmitted over a network link: completes when acknowledged
    uint64_t ack_token;           // the link's token for the last packet of this operation
    int ack_err, ack_prov_errno;  // the completion it gets then
    uint64_t stream_token;        // the link's token after the last streamed (uncopied) packet
    size_t read_got;              // fi_read: bytes arrived
    uint64_t peer_cookie;         // kReadResp: the initiator's operation
    Mr *pinned;                   // kReadResp: the MR being read, held until sent
    bool rnr_ok;                  // FI_PROTO_CXI_RNR send: retried while the peer is not ready
    uint32_t rnr_tries;
    uint64_t rnr_start_us, rnr_due_us;  // first refusal; when to send again
};

class Context : public ProgressSource,
                public transport::OffloadClient,
                private transport::PacketSink {
  public:
    // Operation flags live in the EpViews that refer to the context.
    Context(Domain &domain, uint64_t caps, size_t tx_size, uint16_t vni);
    ~Context() override;
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;

    // Claim the PID (kPidAny: any free one). -FI_ENOSPC when it is taken.
    int open(uint32_t pid, bool quiet = false);
    void close();  // give the PID back
    uint32_t pid() const { return pid_; }
    bool is_open() const { return rxq_ != nullptr; }
    // FI_AV_AUTH_KEY: listen on each of `vnis` (the AV's keys) rather than the
    // endpoint's own VNI, with one PID on all of them. Before open().
    void listen_on(const std::vector<uint16_t> &vnis);
    void set_av(Av *av) { av_ = av; }
    Av *av() const { return av_; }
    CompletionBind &tx_bind() { return tx_; }
    CompletionBind &rx_bind() { return rx_; }
    size_t &min_multi_recv() { return min_multi_recv_; }
    uint64_t caps() const { return caps_; }
    // FI_PROTO_CXI_RNR (rnr.cpp): refuse messages no receive is posted for, and retry
    // refused sends for up to max_retry_us.
    void set_rnr(uint64_t max_retry_us) {
        rnr_ = true;
        rnr_max_us_ = max_retry_us;
    }
    bool rnr() const { return rnr_; }

    ssize_t send(const SendArgs &a);
    ssize_t recv(const RecvArgs &a);
    ssize_t peek(const RecvArgs &a);  // FI_PEEK, optionally with FI_CLAIM
    int cancel(void *context);
    size_t unexpected(fi_cq_tagged_entry *e, size_t count, fi_addr_t *src, size_t *total);
    void progress() override;

    // The offload helper's view (transport/offload.hpp).
    int offload_fd() override { return udp_ ? udp_->fd() : -1; }
    bool offload_watch() override { return udp_ && !udp_->wants_poll(); }
    uint64_t app_calls() override { return app_calls_.load(std::memory_order_relaxed); }
    bool offload_wanted() override;
    bool offload_progress(bool readable) override;

  private:
    void progress_locked();
    // Paths to peers (links.cpp): shared memory on our own NIC, UDP to any other.
    transport::Link *link_for(uint32_t nic, uint32_t pid, uint16_t vni, int &err);
    std::unique_ptr<transport::udp::UdpEndpoint> open_udp(uint16_t vni, uint32_t pid, int &err);
    int open_extra_vnis(uint32_t pid);
    void poll_udp();
    void poll_udp(transport::udp::UdpEndpoint &udp, uint64_t &foreign_seen);
    // The VNI a packet on `link` travels on, that of a peer's address, of a source key.
    uint16_t vni_of(const transport::Link *link) const;
    uint16_t peer_vni(uint16_t addr_vni) const { return extra_.empty() ? vni_ : addr_vni; }
    uint64_t source_key(const WireHdr &h) const {
        return addr_key(h.src_nic, h.src_pid, extra_.empty() ? 0 : h.vni);
    }
    uint16_t key_vni(uint64_t key) const { return extra_.empty() ? vni_ : uint16_t(key >> 32); }
    void check_acks();
    void await_ack(TxOp *op, uint64_t token, int err, int prov_errno);
    void fail_link(transport::Link *link, int err, int prov_errno);
    void fail_inbound(uint32_t nic, uint32_t pid, int err);
    void drop_orphans(uint32_t nic, uint32_t pid);
    // Receive path (rx.cpp).
    bool deliver(const uint8_t *pkt, size_t len) override;
    bool on_msg(const WireHdr &h, const uint8_t *payload);
    void on_data(const WireHdr &h, const uint8_t *payload);
    RecvOp *match_posted(const WireHdr &h, fi_addr_t src);
    bool recv_matches(const RecvOp &r, bool tagged, uint64_t tag, fi_addr_t src) const;
    RxMsg *match_unexpected(const RecvArgs &a, bool skip_claimed);
    bool store_unexpected(RxMsg *m, const uint8_t *payload, size_t n);
    void bind_receive(RxMsg *m, RecvOp *op, bool listed);
    void place(RxMsg *m, size_t offset, const uint8_t *data, size_t n);
    void finish_eager(RxMsg *m);
    void complete_rx(RxMsg *m, int err, bool pooled = true);
    void complete_recv(RecvOp *op, size_t len, const RxMsg *m, uint8_t *buf, int err, size_t olen,
                       bool truncated = false);
    void post_held_recvs();
    fi_addr_t source_of(uint64_t key, bool &known);
    // Receiver-not-ready protocol (rnr.cpp).
    bool rnr_refuse(const WireHdr &h);
    void rnr_backoff(TxOp *op);
    void rnr_resend_due();
    // Rendezvous (rdzv.cpp).
    void start_pull(RxMsg *m);
    void on_get_req(const WireHdr &h);
    void send_done(RxMsg *m, uint16_t flags);
    void send_ctrl(transport::Link *link, const WireHdr &h, const void *data = nullptr);
    void take_unexpected(RxMsg *m, RecvOp *op);
    void fail_msg(RxMsg *m, int err);
    // One-sided operations, target and initiator sides (rma.cpp).
    Mr *rma_target(const WireHdr &h, uint64_t access);
    void on_rma_write(const WireHdr &h, const uint8_t *payload);
    bool on_rma_read_req(const WireHdr &h);
    void on_rma_read_resp(const WireHdr &h, const uint8_t *payload);
    void send_reply(const WireHdr &req, uint16_t flags);
    void count_remote(Mr *mr, bool write);
    void count_write(const WireHdr &h, bool ok);
    // A restricted packet stays one here only if this target needs no events (FI_RMA_EVENT,
    // counting events): an initiator with client keys cannot know, the hardware can.
    bool restricted_here(const WireHdr &h) const {
        return (h.flags & kWRestricted) && !(caps_ & FI_RMA_EVENT);
    }
    void report_write(const WireHdr &h, Mr *mr);
    bool pump_rma(TxOp *op);
    // Atomics (amo.cpp).
    void stage_amo(TxOp *op);
    bool pump_amo(TxOp *op);
    void on_atomic(const WireHdr &h, const uint8_t *payload);
    void on_atomic_resp(const WireHdr &h, const uint8_t *payload);
    // Transmit path (tx.cpp).
    transport::Link *route(fi_addr_t dest, int &err);
    bool try_fast_send(const SendArgs &a, transport::Link *link, int &err);
    // Single-copy one-sided operations within the host (local_rma.cpp).
    bool rma_single_copy(const SendArgs &a, transport::Link *link);
    transport::shm::WindowView *window_for(transport::Link *link);
    TxOp *alloc_tx();
    void free_tx(TxOp *op);
    bool pump(TxOp *op);
    void pump_pending();
    void pump_ops(transport::Link *&batch);
    void on_done(const WireHdr &h);
    TxOp *tx_by_cookie(uint64_t cookie);
    void complete_tx(TxOp *op, int err, int prov_errno);
    void complete_send(const SendArgs &a, int err, int prov_errno);
    void fill_hdr(WireHdr &h, Pkt type, const SendArgs &a, const transport::Link *link) const;
    uint64_t completion_level(uint64_t flags) const;
    void reap_dead_peers();

    Domain &domain_;
    uint64_t caps_;
    size_t min_multi_recv_ = 64;
    uint32_t pid_ = kPidAny;
    uint16_t vni_;
    Av *av_ = nullptr;
    CompletionBind tx_, rx_;
    std::unique_ptr<transport::RxQueue> rxq_;
    std::unique_ptr<transport::udp::UdpEndpoint> udp_;
    std::vector<transport::udp::Channel *> failed_links_;
    uint64_t foreign_seen_ = 0;  // the UDP transport's count of other-VNI datagrams, seen
    // FI_AV_AUTH_KEY: the VNIs beyond vni_ this context listens on, and which VNI each
    // link to a peer on them belongs to.
    struct VniPort {
        uint16_t vni;
        std::unique_ptr<transport::RxQueue> rxq;
        std::unique_ptr<transport::udp::UdpEndpoint> udp;
        uint64_t foreign_seen = 0;
    };
    std::vector<VniPort> extra_;
    std::unordered_map<const transport::Link *, uint16_t> link_vni_;
    SpinLock lock_;
    std::atomic<uint64_t> app_calls_{0};
    std::atomic<bool> work_hint_{false};  // something needs progress without the application

    // Transmit state.
    std::vector<TxOp> tx_pool_;
    TxOp *tx_free_ = nullptr;
    size_t tx_outstanding_ = 0;
    std::unordered_map<transport::Link *, transport::shm::WindowView *> windows_;  // cache
    List<TxOp> pending_;  // FIFO of operations still to (fully) transmit
    size_t pending_count_ = 0;
    std::vector<TxOp *> awaiting_ack_;  // transmitted, waiting for the network to acknowledge
    bool holding_more_ = false;
    bool rnr_ = false;
    uint64_t rnr_max_us_ = 0;
    std::vector<TxOp *> rnr_waiting_;  // refused by a receiver not ready: sent again when due
    unsigned eagain_streak_ = 0;
    unsigned progress_calls_ = 0;  // full-ring refusals in a row: check the peer is alive

    // Receive state.
    Pool<RecvOp> recvs_;
    Pool<RxMsg> msgs_;
    List<RecvOp> posted_[2];   // [untagged, tagged]
    List<RecvOp> held_recvs_;  // FI_MORE receives not yet handed over
    List<RxMsg> unexpected_[2];
    size_t ux_bytes_ = 0;
    static constexpr size_t kSmallUx = 256;
    std::vector<uint8_t *> small_ux_;  // free fixed-size blocks for small unexpected payloads
    struct InKey {
        uint64_t src, cookie;
        bool operator==(const InKey &o) const { return src == o.src && cookie == o.cookie; }
    };
    struct InKeyHash {
        size_t operator()(const InKey &k) const { return k.src * 0x9e3779b97f4a7c15ULL ^ k.cookie; }
    };
    std::unordered_map<InKey, RxMsg *, InKeyHash> inbound_;
    struct SrcCacheEntry {
        uint64_t key = ~0ULL, gen = 0;
        fi_addr_t addr = FI_ADDR_NOTAVAIL;
    };
    SrcCacheEntry src_cache_[64];
    static constexpr uint64_t kPulledKey = 1ULL << 63;  // src bit marking pulled data
    struct CtrlPkt {                                    // kDone/kGetReq/kAtomicResp to retry
        transport::Link *link;
        WireHdr h;
        uint8_t data[16];  // h.payload bytes: an atomic's previous value
    };
    std::deque<CtrlPkt> ctrl_backlog_;

    RecvOp *alloc_recv() { return recvs_.take(); }
    void release_recv(RecvOp *op) { recvs_.give(op); }
    RxMsg *alloc_msg() { return msgs_.take(); }
    void free_msg(RxMsg *m);
    uint8_t *alloc_ux(size_t n);
    void free_ux(uint8_t *p, size_t n);

    friend struct ContextTestAccess;
};

}  // namespace softnic::cxi

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A context is what owns one PID on the soft NIC. A plain endpoint has one; a scalable
// endpoint has one per TX/RX context pair. It is the meeting point of four engines, each
// with its own header: PeerLinks (its ports and the links to peers), TxEngine (sends and
// their completions), RxEngine (matching, unexpected messages, delivery), OneSided
// (RMA and atomics) and CollEngine (collectives). The context holds their shared facts, takes the
// one lock that serialises them, and hands each arriving packet to the engine it is for.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <vector>

#include "common/av.hpp"
#include "common/cntr.hpp"
#include "common/cq.hpp"
#include "common/mr.hpp"
#include "common/progress.hpp"
#include "common/serial.hpp"
#include "cxi/coll/coll.hpp"
#include "cxi/core/peer_links.hpp"
#include "cxi/core/tx_engine.hpp"
#include "cxi/msg/rx_engine.hpp"
#include "cxi/obj/addr.hpp"
#include "cxi/obj/deferred.hpp"
#include "cxi/one_sided/one_sided.hpp"
#include "cxi/prov/caps.hpp"
#include "transport/offload.hpp"
#include "transport/transport.hpp"

namespace softnic::cxi {

class Domain;

struct CompletionBind {
    Cq *cq = nullptr;
    bool selective = false;
    Cntr *cntr = nullptr;  // FI_SEND / FI_RECV
    // Transmit side: FI_WRITE / FI_READ; receive side: FI_REMOTE_WRITE / FI_REMOTE_READ.
    Cntr *write_cntr = nullptr, *read_cntr = nullptr;
    std::array<Cntr *, 3> cntrs() const { return {cntr, write_cntr, read_cntr}; }
};

class PidEngine final : public ProgressSource,
                        public transport::OffloadClient,
                        private transport::PacketSink {
  public:
    // Operation flags live in the EpViews that refer to the context.
    PidEngine(Domain &domain, uint64_t caps, size_t tx_size, uint16_t vni);
    ~PidEngine() override;
    PidEngine(const PidEngine &) = delete;
    PidEngine &operator=(const PidEngine &) = delete;

    // Claim the PID (kPidAny: any free one). -FI_ENOSPC when it is taken.
    int open(uint32_t pid, bool quiet = false);
    void close();  // give the PID back
    uint32_t pid() const { return pid_; }
    bool is_open() const { return links_.is_open(); }
    void set_av(Av *av) { av_ = av; }
    Av *av() const { return av_; }
    CompletionBind &tx_bind() { return tx_bind_; }
    CompletionBind &rx_bind() { return rx_bind_; }
    uint64_t caps() const { return caps_; }
    // FI_PROTO_CXI_RNR (rnr.cpp): refuse messages no receive is posted for, and retry
    // refused sends for up to max_retry_us.
    void set_rnr(uint64_t max_retry_us) {
        rnr_ = true;
        rnr_max_us_ = max_retry_us;
    }
    bool rnr() const { return rnr_; }
    uint64_t rnr_max_us() const { return rnr_max_us_; }

    // The application's calls: under the context's lock, into the engines. `kSerial`: the
    // domain is serialised (common/serial.hpp), known where the ops table was chosen.
    template <bool kSerial>
    ssize_t send_as(const SendArgs &a);  // inline, below
    template <bool kSerial>
    [[gnu::always_inline]] ssize_t recv_as(const RecvArgs &a);
    // The same, the kind decided here. The offload helper, holding this serialised domain
    // while it fires an FI_TRIGGER operation, takes the spinlock (free: the application
    // counts instead): as the application it would write the count the application writes.
    ssize_t send(const SendArgs &a) {
        return serial() && !held_by_helper() ? send_as<true>(a) : send_as<false>(a);
    }
    ssize_t recv(const RecvArgs &a) {
        return serial() && !held_by_helper() ? recv_as<true>(a) : recv_as<false>(a);
    }
    bool serial() const { return lock_.serial() != nullptr; }
    // Non-null when this engine is serialised on its own (FI_THREAD_COMPLETION): triggered
    // operations for it fire only on threads that hold it (DeferredQueue::run).
    DomainSerial *own_serial() const { return own_serial_.get(); }
    // On the offload helper's thread while it holds this serialised domain.
    bool held_by_helper() const { return serial() && t_serial_held == lock_.serial(); }
    ssize_t peek(const RecvArgs &a);
    int cancel(void *context);
    size_t unexpected(fi_cq_tagged_entry *e, size_t count, fi_addr_t *src, size_t *total);
    void progress() override;  // a domain with locks (the progress lists hold `this`)
    // What a CQ or counter of this engine's domain progresses: this, or in a serialised
    // domain the adapter that enters it as such.
    ProgressSource *progress_source() {
        return serial() ? static_cast<ProgressSource *>(&serial_progress_) : this;
    }
    // The offload helper's view (transport/offload.hpp).
    int offload_fd() override;
    bool offload_watch() override;
    bool offload_wanted() override;
    bool offload_progress(bool readable) override;

    // For the engines: one another, and the facts they share.
    Domain &domain() const { return domain_; }
    TxEngine &tx() { return tx_; }
    RxEngine &rx() { return rx_; }
    PeerLinks &links() { return links_; }
    OneSided &one_sided() { return one_sided_; }
    CollEngine &coll() { return coll_; }
    // Runs `fn` under the context's lock (the collective calls and joins).
    template <class Fn>
    auto locked(Fn &&fn) {
        DataGuard g(lock_);
        return fn();
    }
    void poll_ring() { links_.poll_ring(*this); }  // a message may still be in the ring
    void note_work() { work_hint_.store(true, std::memory_order_relaxed); }
    // A peer stopped answering: operations to it and messages from it fail.
    void peer_failed(transport::Link *link, uint32_t nic, uint32_t pid, int err, int prov_errno);

  private:
    struct SerialProgress final : ProgressSource {
        explicit SerialProgress(PidEngine &e) : engine(e) {}
        void progress() override { engine.progress_serial(); }
        PidEngine &engine;
    };
    void progress_serial();
    void progress_locked();
    bool deliver(const uint8_t *pkt, size_t len) override;
    bool deliver_small(const uint8_t *pkt, size_t len, RxEngine::Match &m);
    bool deliver_general(const uint8_t *pkt, size_t len, const RxEngine::Match &m);
    ssize_t send_triggered(const SendArgs &a, Cntr *cntr);  // issued by a trigger
    ssize_t recv_triggered(const RecvArgs &a, Cntr *cntr);
    bool deliver_from(const uint8_t *pkt, size_t len, transport::Link &from) override;

    Domain &domain_;
    uint64_t caps_;
    uint32_t pid_ = kPidAny;
    Av *av_ = nullptr;
    CompletionBind tx_bind_, rx_bind_;
    bool rnr_ = false;
    uint64_t rnr_max_us_ = 0;
    // Under FI_THREAD_COMPLETION, this engine's own (its completion group's threads
    // serialise their calls into it); before lock_, which points at it.
    std::unique_ptr<DomainSerial> own_serial_;
    DataLock lock_;                       // a spinlock, the domain's DomainSerial, or own_serial_
    std::atomic<bool> work_hint_{false};  // something needs progress without the application
    unsigned progress_calls_ = 0;
    PeerLinks links_;
    TxEngine tx_;
    RxEngine rx_;
    OneSided one_sided_;
    CollEngine coll_;
    SerialProgress serial_progress_{*this};
};

// Inline: every send's and receive's entry point calls them. An operation that a trigger
// issues (once: the thread's record is taken) goes out of line with its counter.
template <bool kSerial>
[[gnu::always_inline]] inline ssize_t PidEngine::recv_as(const RecvArgs &a) {
    if (TriggeredIssue t = take_triggered_issue(); t.active) [[unlikely]]
        return recv_triggered(a, t.cntr);
    note_post();  // a reader posting its next receive between reads progresses at each
    DataGuardAs<kSerial> g(lock_);
    return rx_.post(a);
}
template <bool kSerial>
[[gnu::always_inline]] inline ssize_t PidEngine::send_as(const SendArgs &a) {
    if (TriggeredIssue t = take_triggered_issue(); t.active) [[unlikely]]
        return send_triggered(a, t.cntr);
    DataGuardAs<kSerial> g(lock_);
    return tx_.send(a);
}

}  // namespace softnic::cxi

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The offload helper: what the NIC does without the host CPU (acknowledgements,
// retransmissions, serving rendezvous reads) must happen even while the application
// is not calling into libfabric. One thread per process watches every registered
// client and progresses those whose application has gone quiet. While an application
// keeps calling in, the helper only wakes once per tick to notice if it stops: it
// never touches the data path, so it costs the latency path nothing.
#pragma once

#include <atomic>
#include <cstdint>

namespace softnic::transport {

class OffloadClient {
  public:
    virtual ~OffloadClient() = default;
    // A descriptor that becomes readable when packets arrive (-1: none).
    virtual int offload_fd() = 0;
    // Whether the helper must watch that descriptor even while the application calls
    // in (its own progress does not poll it when traffic has been quiet).
    virtual bool offload_watch() = 0;
    // How many application calls progressed this client: the helper leaves alone a
    // client whose count keeps moving.
    uint64_t app_calls() const { return app_calls_.load(std::memory_order_relaxed); }
    // Outstanding work that must not wait for the application (timers, transfers).
    virtual bool offload_wanted() = 0;
    // Progress once if nobody else is; false when the client was busy.
    virtual bool offload_progress(bool readable) = 0;

  protected:
    // Every progress call the application makes counts itself here first. One writer at
    // a time is not guaranteed (several application threads), but a lost increment only
    // delays the helper by a tick: a plain load and store, no locked instruction.
    void note_app_call() {
        app_calls_.store(app_calls_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
    // The application's progress call: counted, then `fn` under `lock` unless another
    // thread (the helper included) is progressing this client already.
    template <class Lock, class Fn>
    void app_progress(Lock &lock, Fn &&fn) {
        note_app_call();
        if (!lock.try_lock()) return;
        fn();
        lock.unlock();
    }
    // The helper's: the same without the count; false when the client was busy.
    template <class Lock, class Fn>
    bool helper_progress(Lock &lock, Fn &&fn) {
        if (!lock.try_lock()) return false;
        fn();
        lock.unlock();
        return true;
    }

  private:
    std::atomic<uint64_t> app_calls_{0};
};

// Register / unregister. unregister() returns only once the helper is no longer
// inside the client, so the client may be destroyed right after.
void offload_register(OffloadClient *c);
void offload_unregister(OffloadClient *c);

}  // namespace softnic::transport

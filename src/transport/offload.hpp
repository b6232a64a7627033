// The offload helper: what the NIC does without the host CPU (acknowledgements,
// retransmissions, serving rendezvous reads) must happen even while the application
// is not calling into libfabric. One thread per process watches every registered
// client and progresses those whose application has gone quiet. While an application
// keeps calling in, the helper only wakes once per tick to notice if it stops: it
// never touches the data path, so it costs the latency path nothing.
#pragma once

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
    // Bumped by every application call that progresses this client.
    virtual uint64_t app_calls() = 0;
    // Outstanding work that must not wait for the application (timers, transfers).
    virtual bool offload_wanted() = 0;
    // Progress once if nobody else is; false when the client was busy.
    virtual bool offload_progress(bool readable) = 0;
};

// Register / unregister. unregister() returns only once the helper is no longer
// inside the client, so the client may be destroyed right after.
void offload_register(OffloadClient *c);
void offload_unregister(OffloadClient *c);

}  // namespace softnic::transport

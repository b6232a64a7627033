// The Transport interface: moving packets between endpoints.
//
// A transport carries packets (a protocol header plus payload, at most max_packet()
// bytes) to a named receive queue, reliably and in order per sender. Protocols above
// never ask which transport they use: shared memory (shm/) within a host, UDP with
// its reliability layer (udp/) between hosts.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

namespace softnic::transport {

// Single-copy access to a peer's memory (process_vm_readv/writev within a host).
class BulkAccess {
  public:
    virtual ~BulkAccess() = default;
    // Copy len bytes at the peer's remote_addr into local; -errno on failure.
    virtual ssize_t read(void *local, uint64_t remote_addr, size_t len) = 0;
    // Copy len bytes from local to the peer's remote_addr; -errno on failure.
    virtual ssize_t write(uint64_t remote_addr, const void *local, size_t len) = 0;
};

// A path to one remote receive queue.
class Link {
  public:
    virtual ~Link() = default;
    virtual size_t max_packet() const = 0;
    // Queue one packet: hdr followed by the payload iov. False when the peer's queue is
    // full (the caller retries after progress). `more` hints that another packet follows.
    virtual bool send(const void *hdr, size_t hdr_len, const iovec *iov, size_t iovcnt,
                      bool more = false) = 0;
    // As send() with one payload piece that the caller keeps valid until acked(last_token())
    // or until the link fails: a transport that retransmits may keep a reference
    // instead of a copy.
    virtual bool send_stable(const void *hdr, size_t hdr_len, const void *payload, size_t len,
                             bool more = false) {
        iovec iov{const_cast<void *>(payload), len};
        return send(hdr, hdr_len, &iov, 1, more);
    }
    // Push out anything held back by `more` (the end of an FI_MORE batch).
    virtual void flush() {}
    // False once the receive queue was closed. Cheap: checked on every send.
    virtual bool alive() = 0;
    // True when the peer process is known to be gone. May cost a system call.
    virtual bool peer_dead() = 0;
    // Single-copy access to the peer's address space, if this transport offers it.
    virtual BulkAccess *bulk() { return nullptr; }
    // Reliable network transports report transmit completion only once the peer has
    // acknowledged: last_token() names the packets queued so far, acked(token) says
    // whether all of them have arrived. Shared memory is complete once queued.
    virtual bool completes_on_ack() const { return false; }
    virtual uint64_t last_token() const { return 0; }
    virtual bool acked(uint64_t) const { return true; }
};

// Where received packets go. Returning false leaves the packet queued and stops the
// poll: back-pressure when the receiver has nowhere to put it yet.
class PacketSink {
  public:
    virtual ~PacketSink() = default;
    virtual bool deliver(const uint8_t *pkt, size_t len) = 0;
    // As deliver(), naming the link the packet came in on (a network transport's
    // channel), for protocols that learn the sender from the transport.
    virtual bool deliver_from(const uint8_t *pkt, size_t len, Link &from) {
        (void)from;
        return deliver(pkt, len);
    }
};

// The local receive queue of one endpoint.
class RxQueue {
  public:
    virtual ~RxQueue() = default;
    // Deliver up to `budget` packets to sink; returns how many were consumed.
    virtual size_t poll(PacketSink &sink, size_t budget) = 0;
};

}  // namespace softnic::transport

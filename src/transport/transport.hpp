// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The Transport interface: moving packets between endpoints.
//
// A transport carries packets (a protocol header plus payload, at most max_packet()
// bytes) to a named receive queue, reliably and in order per sender. Protocols above
// never ask which transport they use: shared memory (shm/) within a host, UDP with
// its reliability layer (udp/) between hosts.
#pragma once

#include <netinet/in.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace softnic::transport {

// Single-copy access to a peer's memory (process_vm_readv/writev within a host), and the
// facts a protocol needs to use it: the peer's process, and the word the peer's receive
// queue publishes for the layer above (untrusted: written by the peer).
class BulkAccess {
  public:
    virtual ~BulkAccess() = default;
    virtual pid_t process() const = 0;
    virtual uint64_t attachment() const = 0;
    // Copy len bytes at the peer's remote_addr into local; -errno on failure.
    virtual ssize_t read(void *local, uint64_t remote_addr, size_t len) = 0;
    // Copy len bytes from local to the peer's remote_addr; -errno on failure.
    virtual ssize_t write(uint64_t remote_addr, const void *local, size_t len) = 0;
};

// Why a link stopped working, as far as its transport knows.
struct LinkFailure {
    enum Reason : uint8_t {
        kNone,      // it works
        kRefused,   // the peer's host said nobody listens there
        kForeign,   // the peer is in another realm (VNI) and refuses us
        kTimedOut,  // the peer stopped answering
        kClosed,    // the peer's receive queue was closed
    };
    Reason reason = kNone;
    bool peer_answered = false;  // the peer was heard from before
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
    // Sends in a row: a guess that more follow, so a transport may get room ready ahead
    // (shared memory: the ring's next cells). Never holds a packet back, as `more` may.
    virtual void expect_more() {}
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
    // Whether packets are stores into the peer's memory (within a host): streaming a
    // large message through them then costs two pipelined copies and no system call.
    virtual bool shared_memory() const { return false; }
    // Reliable network transports report transmit completion only once the peer has
    // acknowledged: last_token() names the packets queued so far, acked(token) says
    // whether all of them have arrived. Shared memory is complete once queued.
    virtual bool completes_on_ack() const { return false; }
    virtual uint64_t last_token() const { return 0; }
    virtual bool acked(uint64_t) const { return true; }
    // What went wrong, once alive() is false.
    virtual LinkFailure failure() const = 0;
    // The peer's IPv4 address and port when the link runs over IP (null otherwise).
    virtual const sockaddr_in *inet_peer() const { return nullptr; }
    // One line of the link's state, for logs.
    virtual std::string describe() const { return {}; }

    // The largest packet whose send is complete once queued (max_packet() where
    // completes_on_ack() is false, else 0): what a protocol's one-packet fast path
    // checks, read without a virtual call.
    size_t queued_complete_max() const { return queued_complete_max_; }
    // The largest packet a protocol may send as one and complete on acknowledgement
    // (max_packet() where completes_on_ack() is true, else 0), read the same way.
    size_t acked_complete_max() const { return acked_complete_max_; }

    // Who the peer is, in the terms of the protocol above, which records it here when it
    // opens the link or first hears from it (0: not yet). Shared links get one value.
    uint64_t peer_key() const { return peer_key_.load(std::memory_order_relaxed); }
    void set_peer_key(uint64_t key) {
        if (peer_key() != key) peer_key_.store(key, std::memory_order_relaxed);
    }

  protected:
    void set_queued_complete_max(size_t n) { queued_complete_max_ = n; }
    void set_acked_complete_max(size_t n) { acked_complete_max_ = n; }

  private:
    std::atomic<uint64_t> peer_key_{0};
    size_t queued_complete_max_ = 0;
    size_t acked_complete_max_ = 0;
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
    // Links of this queue's transport that failed since the last call (a network
    // transport's channels whose peer died); appended to `out`.
    virtual void take_failed(std::vector<Link *> &out) { (void)out; }
};

}  // namespace softnic::transport

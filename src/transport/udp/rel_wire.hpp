// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The reliability header that starts every datagram of the UDP transport.
//
// Each direction between two endpoints is a stream of DATA packets numbered from 0 in
// an epoch (the stream's incarnation: a restarted sender starts a newer epoch). Every
// packet may also carry the acknowledgement of the reverse stream: the next sequence
// expected, a selective-ack bitmap for the 64 after it, and the flow-control limit.
// Every datagram names the sender's realm; a receiver of another realm answers with
// REJECT instead of delivering. A channel's datagrams also say the sender's current
// retransmission timeout, so that a receiver about to close knows how long a resend of
// the sender's may take to come (UdpEndpoint::linger). Integers are little-endian, as on
// every host we run on.
#pragma once

#include <cstdint>

namespace softnic::transport::udp {

constexpr uint16_t kRelMagic = 0x4e53;  // the bytes 'S' 'N'
constexpr uint8_t kRelVersion = 1;
constexpr uint64_t kRelRtoUnitNs = 16000;  // RelHdr::rto's unit: up to ~1 s

enum class RelType : uint8_t {
    kData = 1,    // carries one packet of the protocol above
    kAck = 2,     // header only
    kProbe = 3,   // header only: "answer with an ACK" (window closed, or liveness)
    kReject = 4,  // header only: "your realm is not mine": the peer's channel fails
};

enum RelFlags : uint16_t {
    kRelAckValid = 1 << 0,   // ack_epoch / ack / window / sack are meaningful
    kRelCongested = 1 << 1,  // the sender's receive queue ran deep lately: slow down
    kRelDuplicate = 1 << 2,  // the sender received a duplicate since its last ack
    kRelAckNow = 1 << 3,     // kData: the sender's window is full: acknowledge at once
};

struct RelHdr {
    uint16_t magic;
    uint8_t version;
    uint8_t type;
    uint16_t flags;
    uint16_t rto;        // the sender's retransmission timeout, in kRelRtoUnitNs (0: unsaid)
    uint32_t epoch;      // the sender's stream incarnation
    uint32_t seq;        // kData: this packet's number in the stream
    uint32_t ack_epoch;  // the reverse stream being acknowledged
    uint32_t ack;        // next sequence expected from the reverse stream
    uint32_t window;     // the reverse stream may send sequences below this
    uint32_t realm;      // the sender's isolation domain (cxi: its VNI); receivers drop others
    uint64_t sack;       // bit i: sequence ack + 1 + i has arrived
};
static_assert(sizeof(RelHdr) == 40, "reliability header layout");

}  // namespace softnic::transport::udp

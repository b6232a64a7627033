// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The packet format of the software Cassini, shared by every transport.
//
// A message starts with a kMsg packet carrying the header and the first payload bytes;
// kData packets carry the rest of the eager part (and pulled rendezvous data). The
// receiver answers with kDone (rendezvous finished, or the acknowledgement that
// delivery/match-complete sends wait for) and asks for rendezvous data with kGetReq
// when it cannot read the sender's memory directly.
//
// One-sided operations: kRmaWrite packets carry data for the target MR named by `tag`
// (the key) at `rdzv_addr` (the offset in the MR) + `offset`; the target answers the
// last one with kDone (kWError when the key, bounds or access were wrong). kRmaReadReq
// asks for `msg_len` bytes; the target streams kRmaReadResp packets (at `offset`) or
// answers kDone with kWError.
//
// FI_PROTO_CXI_RNR: a receiver without a matching posted receive refuses a kWRnrOk
// message with kDone|kWRnr instead of keeping it as unexpected; the sender sends it
// again after a growing delay (rnr.cpp).
//
// Atomics: kAtomic carries one element (the operand, then the comparand for the compare
// family) for key `tag` at offset `rdzv_addr`; `msg_len` is the element size and
// `cq_data` holds the op (bits 0-7) and datatype (bits 8-15). Fetching ones (kWFetch)
// are answered with kAtomicResp carrying the previous value, the others with kDone.
//
// kSmall: a one-packet message that asks for nothing back (no rendezvous, no kDone),
// with a compact header (SmallHdr): within a host a small message and its header then
// fill one cache line of the receiver's ring instead of two. kCollSmall is kColl's
// compact form (CollHdr), for the packets that carry no reduction error.
#pragma once

#include <cstddef>
#include <cstdint>

namespace softnic::cxi {

constexpr uint8_t kWireVersion = 1;

enum class Pkt : uint8_t {
    kMsg = 1,
    kData = 2,
    kGetReq = 3,
    kDone = 4,
    kRmaWrite = 5,
    kRmaReadReq = 6,
    kRmaReadResp = 7,
    kAtomic = 8,
    kAtomicResp = 9,
    kColl = 10,       // a collective's contribution or result (coll.hpp)
    kSmall = 11,      // a whole small message, compact header (SmallHdr)
    kCollSmall = 12,  // kColl without a reduction error, compact header (CollHdr)
};

enum WireFlags : uint16_t {
    kWTagged = 1 << 0,
    kWCqData = 1 << 1,
    kWAckReq = 1 << 2,      // sender waits for kDone (delivery / match complete)
    kWRdzv = 1 << 3,        // bytes past eager_len are pulled by the receiver
    kWWhole = 1 << 4,       // eager-rendezvous flavour: everything was sent with the header
    kWPulled = 1 << 5,      // kData answering a kGetReq
    kWTrunc = 1 << 6,       // kDone: the receiver truncated
    kWError = 1 << 7,       // kDone: the receiver could not take the message
    kWFetch = 1 << 8,       // kAtomic: answer with the previous value
    kWRestricted = 1 << 9,  // one-sided operation on the hardware's restricted path
    kWRnrOk = 1 << 10,      // kMsg: the sender retries when no receive is posted (RNR)
    kWRnr = 1 << 11,        // kDone: receiver not ready, the message was not taken
    kWIpc = 1 << 12,        // kMsg rendezvous: rdzv_addr names an hmem::IpcRef (device memory)
};

// The first 16 bytes of every packet, in both header formats.
struct WirePrefix {
    uint8_t type;
    uint8_t version;
    uint16_t flags;
    uint16_t vni;
    uint16_t src_pid;
    uint32_t src_nic;
    uint32_t payload;  // bytes following the header in the packet
};
static_assert(sizeof(WirePrefix) == 16, "wire prefix layout");

struct WireHdr : WirePrefix {
    uint64_t msg_len;    // whole message
    uint64_t eager_len;  // bytes that travel in kMsg/kData packets
    uint64_t tag;
    uint64_t cq_data;
    uint64_t cookie;     // the sender's operation id, echoed back
    uint64_t offset;     // kData: where the payload goes; kGetReq: first byte wanted
    uint64_t rdzv_addr;  // sender's buffer, for single-copy pulls
};
static_assert(sizeof(WireHdr) == 72, "wire header layout");

// kSmall's header: the prefix (payload = the message's length), the tag, and cq_data
// only when kWCqData is set. Flags: kWTagged, kWCqData.
struct SmallHdr : WirePrefix {
    uint64_t tag;
    uint64_t cq_data;  // present only with kWCqData
};
static_assert(sizeof(SmallHdr) == 32, "kSmall header layout");
constexpr size_t kSmallHdrNoData = sizeof(WirePrefix) + sizeof(uint64_t);
inline size_t small_hdr_len(uint16_t flags) {
    return flags & kWCqData ? sizeof(SmallHdr) : kSmallHdrNoData;
}

// kCollSmall's header: the prefix, then kColl's tag (the group's key), cq_data (the
// call's shape and flags), cookie (the call's sequence number) and offset (the sender's
// rank); msg_len is the payload, rdzv_addr 0. 40 bytes: with the cell header and an
// 8-byte contribution, one cache line.
struct CollHdr : WirePrefix {
    uint64_t key;
    uint64_t shape;
    uint32_t seq;
    uint32_t rank;
};
static_assert(sizeof(CollHdr) == 40, "kCollSmall header layout");

// The prefix of a packet of `type` from endpoint (nic, pid) on `vni`, flags and payload 0.
inline WirePrefix wire_prefix(Pkt type, uint16_t vni, uint32_t pid, uint32_t nic) {
    WirePrefix p{};
    p.type = static_cast<uint8_t>(type);
    p.version = kWireVersion;
    p.vni = vni;
    p.src_pid = static_cast<uint16_t>(pid);
    p.src_nic = nic;
    return p;
}

// A header of `type` from endpoint (nic, pid) on `vni`, every other field zero.
inline WireHdr wire_hdr(Pkt type, uint16_t vni, uint32_t pid, uint32_t nic) {
    WireHdr h{};
    static_cast<WirePrefix &>(h) = wire_prefix(type, vni, pid, nic);
    return h;
}

}  // namespace softnic::cxi

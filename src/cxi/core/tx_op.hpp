// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// One transmit operation: what the application asked for (SendArgs and its one-sided
// and triggered parts) and where the transmit engine is with it (eager, streamed,
// acknowledged, retried after a refusal). The engine that moves them: tx_engine.hpp.
#pragma once

#include <rdma/fi_endpoint.h>

#include <cstddef>
#include <cstdint>

#include "common/hmem.hpp"
#include "cxi/core/rx_state.hpp"
#include "cxi/prov/caps.hpp"
#include "transport/transport.hpp"

namespace softnic {
class Cntr;
class Mr;
}  // namespace softnic

namespace softnic::cxi {

// What a transmit operation is: its packets and its completion differ.
enum class OpKind : uint8_t {
    kSend,         // fi_send & co, fi_tsend & co
    kWrite,        // fi_write & co
    kRead,         // fi_read & co
    kReadResp,     // target side: data an initiator's read asked for (no completion)
    kAtomic,       // fi_atomic & co
    kFetchAtomic,  // fi_fetch_atomic & co, fi_compare_atomic & co
};

inline bool is_amo(OpKind k) {
    return k == OpKind::kAtomic || k == OpKind::kFetchAtomic;
}

// One-sided operations: the target MR's key and offset in it.
struct RemoteArgs {
    uint64_t key = 0, addr = 0;
    bool restricted = false;  // the hardware's restricted (light-weight) path
};

// Atomics: one element's comparand (or mask), where a fetched value goes, op and type.
struct AmoArgs {
    const void *compare = nullptr;
    void *result = nullptr;
    uint8_t op = 0, dt = 0;
};

// A triggered operation counts its completion on `cntr` (may be null) instead of the
// endpoint's counter.
struct TriggerArgs {
    bool active = false;
    Cntr *cntr = nullptr;
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
    RemoteArgs rma{};
    AmoArgs amo{};
    TriggerArgs trig{};
    // A device buffer's host stand-in (buf points into it), owned by the operation:
    // deleted at completion, after a read's bytes landed on the device.
    hmem::Staging *stage = nullptr;
    // A device buffer handed over unstaged (buf is device memory): the transmit engine
    // exports it to a receiver on this host, or stages it (TxEngine::send_device).
    hmem::Where mem{};
};

// Progress of the eager part: the header and the bytes that travel unasked.
struct EagerState {
    size_t len;   // bytes sent eagerly (all of them unless rendezvous)
    size_t sent;  // queued so far
    bool hdr_sent, rdzv, wait_done, done_seen;
    bool ipc;  // rendezvous of device memory: inline_data holds its hmem::IpcRef
};

// Data streamed on request (a receiver's kGetReq, a read's response, a write's payload).
struct StreamState {
    size_t off, end;
    uint64_t token;  // the link's token after the last packet sent without a copy
};

// Over a network link an operation completes once the peer acknowledged it.
struct AckState {
    bool awaiting;
    uint64_t token;  // the link's token for the last packet of this operation
    int err, prov_errno;
};

// FI_PROTO_CXI_RNR: a send retried while the receiver is not ready.
struct RnrState {
    bool ok;
    uint32_t tries;
    uint64_t start_us, due_us;  // first refusal; when to send again
};

// Every field but inline_data starts zeroed when a slot is taken (`new (op) TxOp`):
// the payload copy is always written before it is read, and zeroing its 192 bytes was a
// quarter of a one-packet send's slot.
struct TxOp {
    SendArgs a{};
    transport::Link *link = nullptr;
    uint64_t cookie = 0;
    uint32_t gen = 0;
    bool pending = false;  // in the FIFO of operations still to transmit
    EagerState eager{};
    StreamState stream{};
    AckState ack{};
    RnrState rnr{};
    size_t read_got = 0;       // fi_read: bytes arrived
    uint64_t peer_cookie = 0;  // kReadResp: the initiator's operation
    Mr *pinned = nullptr;      // kReadResp: the MR being read, held until sent
    TxOp *next = nullptr, *prev = nullptr;
    uint8_t inline_data[kInjectSize];  // no initializer: see above
};

}  // namespace softnic::cxi

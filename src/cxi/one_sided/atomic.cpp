// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Atomics over the packet protocol, both sides: the initiator's one-element request,
// and the target applying it to its MR (common/atomic_math) and answering. As with RMA,
// the target's progress serves them, the offload helper while its application is away;
// every atomic on a host goes through the target process, so they serialise there.
#include <cstring>

#include "common/atomic_math.hpp"
#include "common/dma.hpp"
#include "common/log.hpp"
#include "cxi/core/pid_engine.hpp"
#include "cxi/obj/domain.hpp"
#include "cxi/one_sided/atomic.hpp"

namespace softnic::cxi {

// The element travels from the operation itself, so the caller may reuse its buffers
// as soon as the call returns (the result buffer excepted).
void OneSided::stage_amo(TxOp *op) {
    size_t n = op->a.len;
    if (op->a.buf)
        std::memcpy(op->inline_data, op->a.buf, n);
    else
        std::memset(op->inline_data, 0, n);  // FI_ATOMIC_READ needs no operand
    if (op->a.amo.compare) std::memcpy(op->inline_data + n, op->a.amo.compare, n);
    op->a.buf = op->inline_data;
    op->a.amo.compare = op->a.amo.compare ? op->inline_data + n : nullptr;
}

bool OneSided::pump_amo(TxOp *op) {
    if (op->eager.hdr_sent) return true;
    WireHdr h =
        wire_hdr(Pkt::kAtomic, engine_.links().vni_of(op->link), engine_.pid(), domain_.nic().addr);
    h.cookie = op->cookie;
    h.tag = op->a.rma.key;
    h.rdzv_addr = op->a.rma.addr;
    h.msg_len = op->a.len;
    h.cq_data = op->a.amo.op | uint64_t(op->a.amo.dt) << 8;
    h.flags = (op->a.kind == OpKind::kFetchAtomic ? kWFetch : 0) |
              (op->a.rma.restricted ? kWRestricted : 0);
    size_t n = op->a.len * (op->a.amo.compare ? 2 : 1);
    h.payload = static_cast<uint32_t>(n);
    iovec iov{op->inline_data, n};
    if (!op->link->send(&h, sizeof(h), &iov, 1)) return false;
    op->eager.hdr_sent = true;
    return true;
}

namespace {

// The call a request claims to be, from its op and kWFetch; false when inconsistent.
bool request_kind(const WireHdr &h, AmoKind &kind) {
    int op = h.cq_data & 0xff, dt = (h.cq_data >> 8) & 0xff;
    bool fetch = h.flags & kWFetch;
    kind = op >= FI_CSWAP ? AmoKind::kCompare : fetch ? AmoKind::kFetch : AmoKind::kWrite;
    size_t n = amo::datatype_size(dt);
    return (h.cq_data >> 16) == 0 && amo_check(kind, op, dt) == 0 && h.msg_len == n &&
           h.payload == n * (kind == AmoKind::kCompare ? 2 : 1) &&
           fetch == (kind != AmoKind::kWrite);
}

uint64_t access_for(AmoKind kind, int op) {
    if (kind == AmoKind::kWrite) return FI_REMOTE_WRITE;
    return op == FI_ATOMIC_READ ? FI_REMOTE_READ : FI_REMOTE_READ | FI_REMOTE_WRITE;
}

}  // namespace

void OneSided::on_atomic(const WireHdr &h, const uint8_t *payload) {
    AmoKind kind;
    if (!request_kind(h, kind)) {
        SN_WARN(FI_LOG_EP_DATA, "refusing malformed atomic request\n");
        domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
        send_reply(h, kWError);  // the initiator learns of it instead of waiting
        return;
    }
    int op = h.cq_data & 0xff, dt = (h.cq_data >> 8) & 0xff;
    domain_.count(restricted_here(h) ? C_CNTR_IXE_RX_PTL_RESTRICTED_PKT
                                     : C_CNTR_IXE_RX_PTL_UNRESTRICTED_PKT);
    Mr *mr = target_mr(h, access_for(kind, op));
    if (mr && !mr->where().host()) {  // the CPU's atomics cannot reach device memory
        SN_WARN(FI_LOG_EP_DATA, "atomic on device memory (key 0x%lx) refused\n", h.tag);
        mr->refs().put();
        mr = nullptr;
    }
    if (!mr) {
        send_reply(h, kWError);
        return;
    }
    uint8_t old[16];
    auto *dst = static_cast<uint8_t *>(const_cast<void *>(mr->base())) + h.rdzv_addr;
    const uint8_t *cmp = kind == AmoKind::kCompare ? payload + h.msg_len : nullptr;
    bool ok;
    {
        DmaScope dma;  // the NIC's atomic unit on the application's memory
        ok = amo::apply(op, dt, dst, payload, cmp, old);
    }
    if (ok) {
        count_remote(mr, kind == AmoKind::kWrite);
        domain_.count(C_CNTR_LPE_SUCCESS_CNTR);
    }
    mr->refs().put();
    if (!ok || kind == AmoKind::kWrite) {
        send_reply(h, ok ? 0 : kWError);
        return;
    }
    int err = 0;
    WireHdr r = wire_hdr(Pkt::kAtomicResp, h.vni, engine_.pid(), domain_.nic().addr);
    r.cookie = h.cookie;
    r.msg_len = h.msg_len;
    r.payload = static_cast<uint32_t>(h.msg_len);
    engine_.tx().send_ctrl(engine_.links().link_for(h.src_nic, h.src_pid, h.vni, err), r, old);
}

void OneSided::on_atomic_resp(const WireHdr &h, const uint8_t *payload) {
    TxOp *op = engine_.tx().by_cookie(h.cookie);
    if (!op || op->a.kind != OpKind::kFetchAtomic || op->eager.done_seen ||
        h.payload != op->a.len || (h.flags & kWError)) {
        SN_DBG(FI_LOG_EP_DATA, "dropping an atomic's value for no atomic in progress\n");
        domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
        return;
    }
    std::memcpy(op->a.amo.result, payload, h.payload);
    engine_.tx().on_done(h);
}

}  // namespace softnic::cxi

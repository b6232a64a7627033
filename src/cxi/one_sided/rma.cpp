// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// RMA over the packet protocol, both sides: the initiator's packets (pump_rma), and the
// target's handling of writes and reads against its domain's MR table.
#include <rdma/fi_cxi_ext.h>

#include <cstring>

#include "common/dma.hpp"
#include "common/hmem.hpp"
#include "common/log.hpp"
#include "cxi/core/pid_engine.hpp"
#include "cxi/obj/domain.hpp"

namespace softnic::cxi {

OneSided::OneSided(PidEngine &engine) : engine_(engine), domain_(engine.domain()) {}

// A restricted packet stays one here only if this target needs no events (FI_RMA_EVENT,
// counting events): an initiator with client keys cannot know, the hardware can.
bool OneSided::restricted_here(const WireHdr &h) const {
    return (h.flags & kWRestricted) && !(engine_.caps() & FI_RMA_EVENT);
}

// Queue as many packets of a one-sided operation as the peer accepts; true when done.
bool OneSided::pump_rma(TxOp *op) {
    transport::Link *link = op->link;
    const size_t room = link->max_packet() - sizeof(WireHdr);
    const auto *base = static_cast<const uint8_t *>(op->a.buf);
    WireHdr h =
        wire_hdr(Pkt::kRmaWrite, engine_.links().vni_of(link), engine_.pid(), domain_.nic().addr);
    h.cookie = op->cookie;
    h.tag = op->a.rma.key;
    h.rdzv_addr = op->a.rma.addr;
    h.msg_len = op->a.len;
    h.flags = op->a.rma.restricted ? kWRestricted : 0;
    if (op->a.flags & FI_REMOTE_CQ_DATA) {
        h.flags |= kWCqData;
        h.cq_data = op->a.data;
    }
    size_t *done = &op->eager.sent, end = op->a.len;
    switch (op->a.kind) {
        case OpKind::kRead:
            if (op->eager.hdr_sent) return true;
            h.type = static_cast<uint8_t>(Pkt::kRmaReadReq);
            if (!link->send(&h, sizeof(h), nullptr, 0)) return false;
            op->eager.hdr_sent = true;
            return true;
        case OpKind::kReadResp:  // the data of the initiator's read, from our MR
            h.type = static_cast<uint8_t>(Pkt::kRmaReadResp);
            h.cookie = op->peer_cookie;
            done = &op->stream.off;
            end = op->stream.end;
            break;
        default:
            break;
    }
    // A write's buffer is the application's until the target answers, and the answer
    // comes after every packet was acknowledged (on_done checks stream_token): the
    // transport may send from it without a copy. Inject data lives in the operation.
    const bool stable = op->a.kind == OpKind::kWrite && base != op->inline_data;
    while (!op->eager.hdr_sent || *done < end) {  // a zero-length operation still sends one packet
        size_t n = std::min(room, end - *done);
        h.offset = *done;
        h.payload = static_cast<uint32_t>(n);
        bool more = *done + n < end;
        iovec iov{const_cast<uint8_t *>(base + *done), n};
        bool ok = stable && n ? link->send_stable(&h, sizeof(h), base + *done, n, more)
                              : link->send(&h, sizeof(h), &iov, n ? 1 : 0, more);
        if (!ok) return false;
        if (stable) op->stream.token = link->last_token();
        op->eager.hdr_sent = true;
        *done += n;
    }
    return true;
}

// The MR a remote operation names, with a reference held, when the key exists and
// access and bounds allow [rdzv_addr, rdzv_addr + msg_len); null otherwise.
Mr *OneSided::target_mr(const WireHdr &h, uint64_t access) {
    Mr *mr = domain_.mrs().acquire(h.tag);
    if (!mr) {
        SN_DBG(FI_LOG_EP_DATA, "remote access with unknown key 0x%lx\n", h.tag);
        return nullptr;
    }
    bool ok = (mr->access() & access) == access && h.rdzv_addr <= mr->len() &&
              h.msg_len <= mr->len() - h.rdzv_addr && (mr->base() || !mr->len());
    if (!ok) {
        SN_DBG(FI_LOG_EP_DATA, "remote access outside MR 0x%lx or not allowed\n", h.tag);
        mr->refs().put();
        return nullptr;
    }
    return mr;
}

// kDone to the initiator of `req`: its operation is over (kWError: it failed here).
void OneSided::send_reply(const WireHdr &req, uint16_t flags) {
    int err = 0;
    transport::Link *link = engine_.links().link_for(req.src_nic, req.src_pid, req.vni, err);
    WireHdr h = wire_hdr(Pkt::kDone, req.vni, engine_.pid(), domain_.nic().addr);
    h.flags = flags;
    h.cookie = req.cookie;
    h.msg_len = req.msg_len;
    engine_.tx().send_ctrl(link, h);
}

// FI_RMA_EVENT: a remote operation that succeeded here counts on the endpoint's
// FI_REMOTE_WRITE / FI_REMOTE_READ counter and, for writes, on the MR's counter.
void OneSided::count_remote(Mr *mr, bool write) {
    if (!(engine_.caps() & FI_RMA_EVENT)) return;
    if (Cntr *c = write ? engine_.rx_bind().write_cntr : engine_.rx_bind().read_cntr) c->inc();
    if (!write) return;
    if (Cntr *c = mr->event_cntr()) c->inc();
}

// The emulated NIC's telemetry for a remote write (spec §6.5): restricted writes hit
// the optimized-MR cache; the others are ordinary list-entry operations.
void OneSided::count_write(const WireHdr &h, bool ok) {
    if (restricted_here(h)) {
        domain_.count(C_CNTR_IXE_RX_PTL_RESTRICTED_PKT);
        domain_.count(C_CNTR_LPE_PLEC_HITS);
    } else {
        domain_.count(C_CNTR_IXE_RX_PTL_UNRESTRICTED_PKT);
    }
    if (ok) domain_.count(C_CNTR_LPE_SUCCESS_CNTR);
}

// fi_writedata: the target's receive CQ reports the write, with the MR's context.
void OneSided::report_write(const WireHdr &h, Mr *mr) {
    if (!engine_.rx_bind().cq) return;
    bool known = false;
    fi_addr_t src = engine_.rx().source_of(engine_.links().source_key(h), known);
    auto *buf = static_cast<uint8_t *>(const_cast<void *>(mr->base())) + h.rdzv_addr;
    engine_.rx_bind().cq->push(Completion{mr->fid()->fid.context,
                                          FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA, h.msg_len,
                                          buf, h.cq_data, 0, src});
}

void OneSided::on_write(const WireHdr &h, const uint8_t *payload) {
    if (h.offset > h.msg_len || h.payload > h.msg_len - h.offset) {
        SN_WARN(FI_LOG_EP_DATA, "dropping malformed remote write\n");
        domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
        return;
    }
    Mr *mr = target_mr(h, FI_REMOTE_WRITE);
    bool last = h.offset + h.payload == h.msg_len;
    if (last) count_write(h, mr != nullptr);
    if (mr) {
        auto *dst = static_cast<uint8_t *>(const_cast<void *>(mr->base()));
        bool landed = true;
        if (h.payload && !mr->where().host()) {  // device memory: through the driver
            landed = hmem::copy(dst + h.rdzv_addr + h.offset, payload, h.payload,
                                mr->where().device) == 0;
        } else if (h.payload) {
            DmaScope dma;  // the NIC writing the application's memory
            std::memcpy(dst + h.rdzv_addr + h.offset, payload, h.payload);
        }
        if (landed && last) count_remote(mr, true);
        if (landed && last && (h.flags & kWCqData)) report_write(h, mr);
        mr->refs().put();
        if (!landed) mr = nullptr;  // the initiator's write fails
    }
    if (last) send_reply(h, mr ? 0 : kWError);
}

void OneSided::on_read_req(const WireHdr &h) {
    if (owed_.empty() && answer_read(h)) return;
    // Honest peers owe us no more than their transmit queues hold; a flood beyond that
    // is dropped and counted rather than kept without bound.
    if (owed_.size() >= kMaxOwedReads) {
        SN_WARN(FI_LOG_EP_DATA, "dropping a read request: %zu already wait\n", owed_.size());
        domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
        return;
    }
    owed_.push_back(h);  // answered in order
}

void OneSided::serve_owed() {
    while (!owed_.empty() && answer_read(owed_.front()))
        owed_.pop_front();
}

bool OneSided::answer_read(const WireHdr &h) {
    int err = 0;
    transport::Link *link = h.msg_len <= kMaxMsgSize
                                ? engine_.links().link_for(h.src_nic, h.src_pid, h.vni, err)
                                : nullptr;
    if (!link) {
        SN_WARN(FI_LOG_EP_DATA, "dropping invalid remote read request\n");
        domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
        return true;
    }
    TxOp *op = engine_.tx().alloc_reply();
    if (!op) return false;
    Mr *mr = target_mr(h, FI_REMOTE_READ);
    if (!mr) {
        engine_.tx().complete(op, 0, 0);  // the slot back; nobody waits for a reply's completion
        send_reply(h, kWError);
        return true;
    }
    const auto *src = static_cast<const uint8_t *>(mr->base()) + h.rdzv_addr;
    if (!mr->where().host()) {  // device memory: read once through the driver, sent from host
        int err = 0;
        op->a.stage = hmem::Staging::outbound(src, h.msg_len, mr->where().device, err);
        if (!op->a.stage) {
            mr->refs().put();
            engine_.tx().complete(op, 0, 0);
            send_reply(h, kWError);
            return true;
        }
        src = static_cast<const uint8_t *>(op->a.stage->host());
    }
    count_remote(mr, false);
    op->a.kind = OpKind::kReadResp;
    op->a.buf = src;
    op->a.len = h.msg_len;
    op->link = link;
    op->peer_cookie = h.cookie;
    op->pinned = mr;
    op->stream.end = h.msg_len;
    engine_.tx().submit(op);
    engine_.note_work();
    return true;
}

void OneSided::on_read_resp(const WireHdr &h, const uint8_t *payload) {
    TxOp *op = engine_.tx().by_cookie(h.cookie);
    if (!op || op->a.kind != OpKind::kRead || op->eager.done_seen || h.offset > op->a.len ||
        h.payload > op->a.len - h.offset) {
        SN_DBG(FI_LOG_EP_DATA, "dropping read data for no read in progress\n");
        domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
        return;
    }
    auto *dst = static_cast<uint8_t *>(const_cast<void *>(op->a.buf));
    if (h.payload) std::memcpy(dst + h.offset, payload, h.payload);
    op->read_got += h.payload;
    if (op->read_got < op->a.len) return;
    op->eager.done_seen = true;
    if (!op->pending && !op->ack.awaiting) engine_.tx().complete(op, 0, 0);
}

}  // namespace softnic::cxi

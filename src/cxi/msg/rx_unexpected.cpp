// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Receive engine, unexpected messages: kept (small payloads in reused blocks, within the
// endpoint's budget) until a receive matches them, and dropped when their sender died
// before they could complete.
#include <cstdlib>
#include <cstring>

#include "common/log.hpp"
#include "cxi/core/pid_engine.hpp"
#include "cxi/obj/domain.hpp"
#include "cxi/prov/env.hpp"

namespace softnic::cxi {

RxEngine::~RxEngine() {
    for (int t = 0; t < 2; t++)
        for (RxMsg *m = unexpected_[t].head; m; m = m->next)
            free_ux(m->ux_buf, m->ux_cap);
    for (uint8_t *p : small_ux_)
        std::free(p);
}

RxMsg *RxEngine::match_unexpected(const RecvArgs &a, bool skip_claimed) {
    if (!unexpected_[a.tagged].head) return nullptr;
    RecvOp probe{};
    probe.tagged = a.tagged;
    probe.tag = a.tag;
    probe.ignore = a.ignore;
    probe.src = a.src;
    for (RxMsg *m = unexpected_[a.tagged].head; m; m = m->next) {
        if (skip_claimed && m->claimed) continue;
        // A message that came before its sender was in the AV (an MPI peer that finished
        // its wire-up first) has a source once the address is inserted.
        if (!m->src_known) m->src_addr = source_of(m->src_key, m->src_known);
        if (recv_matches(probe, m->tagged(), m->tag, m->src_addr)) return m;
    }
    return nullptr;
}

// A receive found its message among the unexpected ones.
void RxEngine::take_unexpected(RxMsg *m, RecvOp *op) {
    unexpected_[m->tagged()].remove(m);
    uint8_t *ux = m->ux_buf;
    size_t kept = std::min(m->got, m->ux_cap);
    bool arriving = !m->eager_done();
    bind_receive(m, op, false);  // multi-receive buffers stay listed until full
    if (m->want && kept) std::memcpy(m->dst, ux, std::min(kept, m->want));
    m->pull_from = (m->wflags & kWWhole) ? 0 : m->eager_len;
    if (arriving) {  // the rest of the eager bytes now go straight to the receive buffer
        m->dst_cap = std::min(m->want, m->eager_len);
        return;
    }
    finish_eager(m);
}

void RxEngine::free_msg(RxMsg *m) {
    free_ux(m->ux_buf, m->ux_cap);
    m->ux_buf = nullptr;
    msgs_.give(m);
}

// Small payloads (the common unexpected case) reuse fixed blocks: no allocation.
uint8_t *RxEngine::alloc_ux(size_t n) {
    if (!n) return nullptr;
    if (ux_bytes_ + n > env().unexpected_budget()) return nullptr;
    uint8_t *p;
    if (n <= kSmallUx && !small_ux_.empty()) {
        p = small_ux_.back();
        small_ux_.pop_back();
    } else {
        p = static_cast<uint8_t *>(std::malloc(std::max(n, kSmallUx)));
    }
    if (p) ux_bytes_ += n;
    return p;
}

void RxEngine::free_ux(uint8_t *p, size_t n) {
    if (!p) return;
    ux_bytes_ -= n;
    if (n <= kSmallUx && small_ux_.size() < 1024)
        small_ux_.push_back(p);
    else
        std::free(p);
}

// Receives that were still being filled by a peer that died complete with an error.
void RxEngine::fail_inbound(uint32_t nic, uint32_t pid, int err) {
    for (auto it = inbound_.begin(); it != inbound_.end();) {
        RxMsg *m = it->second;
        if (m->src_nic != nic || m->src_pid != pid || !m->op) {
            ++it;
            continue;
        }
        it = inbound_.erase(it);
        complete_rx(m, err);
    }
    drop_orphans(nic, pid);
}

// Unexpected messages from a dead peer that can no longer complete (bytes still to
// arrive, or rendezvous data to pull) are dropped and counted: a receive posted later
// must not match them and wait forever. Whole ones stay deliverable; claimed ones
// belong to the application until its FI_CLAIM receive.
void RxEngine::drop_orphans(uint32_t nic, uint32_t pid) {
    for (auto &list : unexpected_) {
        for (RxMsg *m = list.head, *next; m; m = next) {
            next = m->next;
            bool needs_peer = !m->eager_done() || ((m->wflags & kWRdzv) && !(m->wflags & kWWhole));
            if (m->src_nic != nic || m->src_pid != pid || m->claimed || !needs_peer) continue;
            list.remove(m);
            inbound_.erase(InKey{m->src_key, m->cookie});
            free_msg(m);
            domain_.count(SOFTNIC_CNTR_DROPPED_PKTS);
            SN_WARN(FI_LOG_EP_DATA, "dropping an unfinished unexpected message of a dead peer\n");
        }
    }
}

}  // namespace softnic::cxi

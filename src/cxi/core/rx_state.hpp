// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Receive-side records: posted receives and messages in flight or unexpected.
#pragma once

#include <rdma/fabric.h>

#include <cstddef>
#include <cstdint>

#include "transport/transport.hpp"

namespace softnic {
class Cntr;
namespace hmem {
class Staging;
}
}  // namespace softnic

namespace softnic::cxi {

// Intrusive FIFO list: posted and unexpected lists keep arrival order.
template <class T>
struct List {
    T *head = nullptr, *tail = nullptr;
    bool empty() const { return !head; }
    void push_back(T *e) {
        e->next = nullptr;
        e->prev = tail;
        (tail ? tail->next : head) = e;
        tail = e;
    }
    void remove(T *e) {
        (e->prev ? e->prev->next : head) = e->next;
        (e->next ? e->next->prev : tail) = e->prev;
        e->next = e->prev = nullptr;
    }
};

struct RecvOp {
    void *context{};
    uint64_t flags{};  // op flags (FI_COMPLETION, FI_MULTI_RECV, ...)
    uint8_t *buf{};
    size_t len{};
    fi_addr_t src{};  // FI_DIRECTED_RECV source, or FI_ADDR_UNSPEC
    uint64_t tag{}, ignore{};
    bool tagged{};
    bool triggered{};  // counts on trig_cntr instead of the endpoint's counter
    Cntr *trig_cntr{};
    // Multi-receive: bytes consumed, messages still landing, unlinked from the list.
    size_t used{};
    unsigned inflight{};
    bool unlinked{};
    // A device buffer's host stand-in (buf is its host()), owned here: its bytes land on
    // the device before the completion is written (RxEngine::complete_recv).
    hmem::Staging *stage{};
    bool landed{};  // the bytes went to the device directly (CUDA IPC), not to the stand-in
    RecvOp *next{}, *prev{};
};

// One incoming message: being received, unexpected, or being pulled.
struct RxMsg {
    uint64_t src_key{};
    uint32_t src_nic{}, src_pid{};
    fi_addr_t src_addr{};
    bool src_known{};
    uint64_t tag{}, data{}, cookie{}, rdzv_addr{};
    uint16_t wflags{};
    size_t msg_len{}, eager_len{};
    transport::Link *src_link{};
    // Where the eager bytes land: the receive buffer, or unexpected storage.
    RecvOp *op{};
    uint8_t *dst{};
    size_t dst_cap{};
    uint8_t *ux_buf{};
    size_t ux_cap{};
    size_t got{};        // eager bytes arrived
    size_t want{};       // bytes to deliver to the receive buffer
    size_t pull_from{};  // first byte the receiver still has to pull
    size_t pull_got{};   // rendezvous bytes pulled so far
    bool pulling{};
    bool claimed{};
    void *claim_ctx{};
    RxMsg *next{}, *prev{};

    bool tagged() const;
    bool eager_done() const { return got >= eager_len; }
};

}  // namespace softnic::cxi

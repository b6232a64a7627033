// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// FI_HMEM at the endpoint's edge: an operation whose local buffer is device memory runs
// on a host stand-in (hmem::Staging). Sends and writes copy the device bytes out when
// posted; receives and reads land them on the device before their completion is
// written. Everything below the entry points sees host memory only.
#pragma once

#include <sys/types.h>

#include "common/hmem.hpp"
#include "cxi/core/pid_engine.hpp"
#include "cxi/core/tx_op.hpp"
#include "cxi/msg/rx_engine.hpp"
#include "cxi/obj/endpoint.hpp"

namespace softnic::cxi {

// The memory of a local buffer: the MR's (desc) or, without one, the driver's answer
// (asked only when the endpoint was opened with FI_HMEM).
hmem::Where buffer_memory(const EpView *v, const void *buf, size_t len, void *desc);

// Posts `a` (a send, write or read) through the view's engine, staged when its buffer
// (described by `desc`) is device memory.
ssize_t post_send_hmem(EpView *v, SendArgs a, void *desc);
// Posts receive `a`, staged when its buffer is device memory (not multi-receive buffers).
ssize_t post_recv_hmem(EpView *v, RecvArgs a, void *desc);

// Without a descriptor, on an endpoint opened without FI_HMEM, a buffer is host memory:
// straight to the engine (the 8-byte path pays one test for FI_HMEM).
inline ssize_t post_send(EpView *v, const SendArgs &a, void *desc) {
    if (!desc && !(v->ep->caps() & FI_HMEM)) [[likely]]
        return v->engine->send(a);
    return post_send_hmem(v, a, desc);
}
inline ssize_t post_recv(EpView *v, const RecvArgs &a, void *desc) {
    if (!desc && !(v->ep->caps() & FI_HMEM)) [[likely]]
        return v->engine->recv(a);
    return post_recv_hmem(v, a, desc);
}

}  // namespace softnic::cxi

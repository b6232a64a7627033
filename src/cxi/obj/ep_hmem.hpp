// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// FI_HMEM at the endpoint's edge: an operation whose local buffer is device memory runs
// on a host stand-in (hmem::Staging). Sends and writes copy the device bytes out when
// posted; receives and reads land them on the device before their completion is
// written. Everything below the entry points sees host memory only.
#pragma once

#include <sys/types.h>

#include "common/hmem.hpp"
#include "cxi/core/tx_op.hpp"
#include "cxi/msg/rx_engine.hpp"

namespace softnic::cxi {

struct EpView;

// The memory of a local buffer: the MR's (desc) or, without one, the driver's answer
// (asked only when the endpoint was opened with FI_HMEM).
hmem::Where buffer_memory(const EpView *v, const void *buf, size_t len, void *desc);

// Posts `a` (a send, write or read) through the view's engine, staged when `w` is device
// memory.
ssize_t post_send(EpView *v, SendArgs a, hmem::Where w);
// Posts receive `a`, staged when `w` is device memory (not for multi-receive buffers).
ssize_t post_recv(EpView *v, RecvArgs a, hmem::Where w);

}  // namespace softnic::cxi

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "cxi/obj/ep_hmem.hpp"

#include <rdma/fi_errno.h>

#include "common/log.hpp"
#include "common/mr.hpp"
#include "cxi/core/pid_engine.hpp"
#include "cxi/obj/endpoint.hpp"

namespace softnic::cxi {

hmem::Where buffer_memory(const EpView *v, const void *buf, size_t len, void *desc) {
    if (!buf || !len) return {};
    if (desc) return static_cast<const Mr *>(desc)->where();
    if (!(v->ep->caps() & FI_HMEM)) return {};
    return hmem::locate(buf);
}

namespace {

// Device memory named by a descriptor on an endpoint opened without FI_HMEM: refused,
// rather than touched by the CPU.
int check_hmem(const EpView *v) {
    if (!(v->ep->caps() & FI_HMEM))
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "device memory on an endpoint without FI_HMEM\n");
    return 0;
}

}  // namespace

// Messages this large go device to device within a host (CUDA IPC): mapping the sender's
// allocation costs more than staging a small message through host memory.
constexpr size_t kIpcMin = 64 * 1024;

ssize_t post_send_hmem(EpView *v, SendArgs a, void *desc) {
    const hmem::Where w = buffer_memory(v, a.buf, a.len, desc);
    if (w.host()) return v->engine->send(a);
    if (int ret = check_hmem(v)) return ret;
    if (a.kind == OpKind::kSend && a.len >= kIpcMin && !(a.flags & FI_INJECT)) {
        a.mem = w;  // the transmit engine exports or stages it, once it knows the path
        return v->engine->send(a);
    }
    int err = 0;
    // A read's buffer is filled later; a send's or write's bytes are taken now (so the
    // application may reuse its buffer as soon as the send completes, as always).
    a.stage = a.kind == OpKind::kRead
                  ? hmem::Staging::inbound(const_cast<void *>(a.buf), a.len, w.device, err)
                  : hmem::Staging::outbound(a.buf, a.len, w.device, err);
    if (!a.stage) return err;
    a.buf = a.stage->host();
    ssize_t ret = v->engine->send(a);
    if (ret) delete a.stage;  // refused (-FI_EAGAIN...): the caller posts it again
    return ret;
}

ssize_t post_recv_hmem(EpView *v, RecvArgs a, void *desc) {
    const hmem::Where w = buffer_memory(v, a.buf, a.len, desc);
    if (w.host()) return v->engine->recv(a);
    if (int ret = check_hmem(v)) return ret;
    if (a.flags & FI_MULTI_RECV)
        SN_REJECT(-FI_EOPNOTSUPP, FI_LOG_EP_DATA, "multi-receive buffers in device memory\n");
    int err = 0;
    a.stage = hmem::Staging::inbound(a.buf, a.len, w.device, err);
    if (!a.stage) return err;
    a.buf = a.stage->host();
    ssize_t ret = v->engine->recv(a);
    if (ret) delete a.stage;
    return ret;
}

}  // namespace softnic::cxi

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// fi_atomic entry points: the op x datatype table, argument and flag checks (spec §6.4),
// then the context's transmit engine.
#include <rdma/fi_cxi_ext.h>

#include "common/atomic_math.hpp"
#include "common/log.hpp"
#include "cxi/obj/domain.hpp"
#include "cxi/obj/endpoint.hpp"
#include "cxi/obj/ep_hmem.hpp"
#include "cxi/one_sided/atomic.hpp"

namespace softnic::cxi {
namespace {

// Bit d set: datatype d is offered. Datatypes 0-7 integers, 8-9 real, 10-11 complex,
// 12-13 long double (never), 14-15 128-bit integers (compare-and-swap only).
constexpr uint16_t kInts = 0x00ff, kReal = 0x03ff, kAll = 0x0fff;

uint16_t offered(AmoKind kind, int op) {
    if (kind == AmoKind::kCompare) {
        switch (op) {
            case FI_CSWAP:
                return 0xcfff;
            case FI_CSWAP_NE:
                return kAll;
            case FI_CSWAP_LE:
            case FI_CSWAP_LT:
            case FI_CSWAP_GE:
            case FI_CSWAP_GT:
                return kReal;
            case FI_MSWAP:
                return kInts;
            default:
                return 0;
        }
    }
    switch (op) {
        case FI_MIN:
        case FI_MAX:
            return kReal;
        case FI_SUM:
        case FI_ATOMIC_WRITE:
            return kAll;
        case FI_LOR:
        case FI_LAND:
        case FI_LXOR:
        case FI_BOR:
        case FI_BAND:
        case FI_BXOR:
            return kInts;
        case FI_ATOMIC_READ:
            return kind == AmoKind::kFetch ? kAll : 0;
        default:
            return 0;  // FI_PROD and the compare family
    }
}

EpView *view(fid_ep *ep) {
    return owner_of<EpView>(ep);
}

constexpr uint64_t kAmoBase =
    FI_COMPLETION | FI_MORE | FI_FENCE | kCompletionLevels | FI_CXI_UNRELIABLE | FI_CXI_WEAK_FENCE;

struct Amo {
    AmoKind kind;
    const void *buf;
    size_t count;
    const void *compare;
    void *result;
    fi_addr_t peer;
    uint64_t addr, key;
    int dt, op;
    void *context;
    uint64_t flags;
};

// The restricted path and the ERRATA as upstream's code applies them (fi_cxi(7) ERRATA):
// FI_CXI_HRP needs FI_CXI_UNRELIABLE; a target that generates events (FI_RMA_EVENT)
// takes neither unreliable atomics nor fetching ones that are delivery or match
// complete (two commands would count twice there). Anything else is carried reliably:
// unreliable fetching atomics and unreliable atomics to a standard key included.
int check_restricted(EpView *v, const Amo &m) {
    const bool unreliable = m.flags & FI_CXI_UNRELIABLE;
    if ((m.flags & FI_CXI_HRP) && !unreliable)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "FI_CXI_HRP needs FI_CXI_UNRELIABLE\n");
    const bool events = v->ep->target_events(m.key);
    if (unreliable && events)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA,
                  "unreliable atomics cannot target an MR with events (FI_RMA_EVENT)\n");
    if (m.kind != AmoKind::kWrite && (m.flags & (FI_DELIVERY_COMPLETE | FI_MATCH_COMPLETE)) &&
        events)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA,
                  "fetching atomics to an MR with events cannot be delivery or match "
                  "complete (errata)\n");
    return 0;
}

// An operand, comparand or result buffer in device memory (asked only of FI_HMEM
// endpoints): the CPU computes atomics, and a device buffer is not its memory.
bool device_operand(const EpView *v, const Amo &m) {
    if (!(v->ep->caps() & FI_HMEM)) return false;
    const size_t n = amo::datatype_size(m.dt);
    return !buffer_memory(v, m.buf, n, nullptr).host() ||
           !buffer_memory(v, m.compare, n, nullptr).host() ||
           !buffer_memory(v, m.result, n, nullptr).host();
}

ssize_t do_amo(fid_ep *ep, const Amo &m, bool inject_call = false) {
    EpView *v = view(ep);
    if (!(v->side & kTx)) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "not a transmit context\n");
    if (!(v->ep->caps() & FI_ATOMIC))
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "endpoint opened without FI_ATOMIC\n");
    if (m.count != 1) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "count %zu, not 1\n", m.count);
    if (int ret = amo_check(m.kind, m.op, m.dt))
        SN_REJECT(ret, FI_LOG_EP_DATA, "op %d on datatype %d is not offered\n", m.op, m.dt);
    if (!m.buf && m.op != FI_ATOMIC_READ) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "NULL operand\n");
    if (m.kind != AmoKind::kWrite && !m.result)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "NULL result buffer\n");
    if (m.kind == AmoKind::kCompare && !m.compare)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "NULL compare buffer\n");
    if (!v->ep->domain().mrs().prov_keys() && m.key > 0xFFFFFFFFULL)
        SN_REJECT(-FI_EKEYREJECTED, FI_LOG_EP_DATA, "client key 0x%lx exceeds 32 bits\n", m.key);
    if ((m.flags & FI_FENCE) && !(v->ep->caps() & FI_FENCE))
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "FI_FENCE without the FI_FENCE capability\n");
    if (int ret = check_restricted(v, m)) return ret;
    if (device_operand(v, m))
        SN_REJECT(-FI_EOPNOTSUPP, FI_LOG_EP_DATA, "atomic operands in device memory\n");
    SendArgs a{m.buf,      amo::datatype_size(m.dt), m.peer, 0, 0, m.context, m.flags, false,
               inject_call};
    a.kind = m.kind == AmoKind::kWrite ? OpKind::kAtomic : OpKind::kFetchAtomic;
    a.rma.key = m.key;
    a.rma.addr = m.addr;
    a.amo.compare = m.compare;
    a.amo.result = m.result;
    a.amo.op = static_cast<uint8_t>(m.op);
    a.amo.dt = static_cast<uint8_t>(m.dt);
    // Only an optimized key has the restricted path; elsewhere the flag asks for nothing.
    a.rma.restricted = (m.flags & FI_CXI_UNRELIABLE) && v->ep->domain().optimized_key(m.key);
    return v->engine->send(a);
}

// One fi_ioc of one element, as AMO_MAX_IOV = 1 demands.
bool one_ioc(const fi_ioc *iov, size_t n) {
    return n == 1 && iov && iov->count == 1;
}

ssize_t amo_msg(fid_ep *ep, AmoKind kind, const fi_msg_atomic *msg, const fi_ioc *cmp, size_t ncmp,
                fi_ioc *res, size_t nres, uint64_t flags) {
    if (!msg) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "NULL msg\n");
    // FI_INJECT for every kind: the operand always travels from the operation itself
    // (OneSided::stage_amo), as upstream copies it into an internal buffer.
    uint64_t allowed = kAmoBase | FI_INJECT;
    if (kind == AmoKind::kWrite) allowed |= FI_CXI_HRP;
    if (kind == AmoKind::kFetch) allowed |= FI_CXI_PCIE_AMO;
    if (flags & ~allowed) SN_REJECT(-FI_EBADFLAGS, FI_LOG_EP_DATA, "bad flags 0x%lx\n", flags);
    if (flags & FI_CXI_PCIE_AMO)
        SN_REJECT(-FI_EOPNOTSUPP, FI_LOG_EP_DATA, "no PCIe fetch-add remap on a soft NIC\n");
    // FI_ATOMIC_READ has no operand: upstream reads no msg_iov for it.
    const bool no_operand = msg->op == FI_ATOMIC_READ && (!msg->msg_iov || !msg->iov_count);
    bool ok = (no_operand || one_ioc(msg->msg_iov, msg->iov_count)) && msg->rma_iov_count == 1 &&
              msg->rma_iov && msg->rma_iov->count == 1 &&
              (kind == AmoKind::kWrite || one_ioc(res, nres)) &&
              (kind != AmoKind::kCompare || one_ioc(cmp, ncmp));
    if (!ok) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "atomics take exactly one element\n");
    return do_amo(ep,
                  Amo{kind, no_operand ? nullptr : msg->msg_iov->addr, 1, cmp ? cmp->addr : nullptr,
                      res ? res->addr : nullptr, msg->addr, msg->rma_iov->addr, msg->rma_iov->key,
                      msg->datatype, msg->op, msg->context, flags});
}

uint64_t tx_flags(fid_ep *ep) {
    return view(ep)->tx_flags;
}

ssize_t a_write(fid_ep *ep, const void *buf, size_t count, void *, fi_addr_t dest, uint64_t addr,
                uint64_t key, fi_datatype dt, fi_op op, void *ctx) {
    return do_amo(ep, Amo{AmoKind::kWrite, buf, count, nullptr, nullptr, dest, addr, key, dt, op,
                          ctx, tx_flags(ep)});
}
ssize_t a_writev(fid_ep *ep, const fi_ioc *iov, void **, size_t count, fi_addr_t dest,
                 uint64_t addr, uint64_t key, fi_datatype dt, fi_op op, void *ctx) {
    if (!one_ioc(iov, count)) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "one element only\n");
    return a_write(ep, iov->addr, 1, nullptr, dest, addr, key, dt, op, ctx);
}
ssize_t a_writemsg(fid_ep *ep, const fi_msg_atomic *msg, uint64_t flags) {
    return amo_msg(ep, AmoKind::kWrite, msg, nullptr, 0, nullptr, 0, flags);
}
ssize_t a_inject(fid_ep *ep, const void *buf, size_t count, fi_addr_t dest, uint64_t addr,
                 uint64_t key, fi_datatype dt, fi_op op) {
    return do_amo(ep,
                  Amo{AmoKind::kWrite, buf, count, nullptr, nullptr, dest, addr, key, dt, op,
                      nullptr, FI_INJECT},
                  true);
}
ssize_t a_readwrite(fid_ep *ep, const void *buf, size_t count, void *, void *result, void *,
                    fi_addr_t dest, uint64_t addr, uint64_t key, fi_datatype dt, fi_op op,
                    void *ctx) {
    return do_amo(ep, Amo{AmoKind::kFetch, buf, count, nullptr, result, dest, addr, key, dt, op,
                          ctx, tx_flags(ep)});
}
ssize_t a_readwritev(fid_ep *ep, const fi_ioc *iov, void **, size_t count, fi_ioc *res, void **,
                     size_t nres, fi_addr_t dest, uint64_t addr, uint64_t key, fi_datatype dt,
                     fi_op op, void *ctx) {
    if (!one_ioc(res, nres) || (count && !one_ioc(iov, count)))
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "one element only\n");
    return a_readwrite(ep, count ? iov->addr : nullptr, 1, nullptr, res->addr, nullptr, dest, addr,
                       key, dt, op, ctx);
}
ssize_t a_readwritemsg(fid_ep *ep, const fi_msg_atomic *msg, fi_ioc *res, void **, size_t nres,
                       uint64_t flags) {
    return amo_msg(ep, AmoKind::kFetch, msg, nullptr, 0, res, nres, flags);
}
ssize_t a_compwrite(fid_ep *ep, const void *buf, size_t count, void *, const void *compare, void *,
                    void *result, void *, fi_addr_t dest, uint64_t addr, uint64_t key,
                    fi_datatype dt, fi_op op, void *ctx) {
    return do_amo(ep, Amo{AmoKind::kCompare, buf, count, compare, result, dest, addr, key, dt, op,
                          ctx, tx_flags(ep)});
}
ssize_t a_compwritev(fid_ep *ep, const fi_ioc *iov, void **, size_t count, const fi_ioc *cmp,
                     void **, size_t ncmp, fi_ioc *res, void **, size_t nres, fi_addr_t dest,
                     uint64_t addr, uint64_t key, fi_datatype dt, fi_op op, void *ctx) {
    if (!one_ioc(iov, count) || !one_ioc(cmp, ncmp) || !one_ioc(res, nres))
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "one element only\n");
    return a_compwrite(ep, iov->addr, 1, nullptr, cmp->addr, nullptr, res->addr, nullptr, dest,
                       addr, key, dt, op, ctx);
}
ssize_t a_compwritemsg(fid_ep *ep, const fi_msg_atomic *msg, const fi_ioc *cmp, void **,
                       size_t ncmp, fi_ioc *res, void **, size_t nres, uint64_t flags) {
    return amo_msg(ep, AmoKind::kCompare, msg, cmp, ncmp, res, nres, flags);
}

int valid(AmoKind kind, fi_datatype dt, fi_op op, size_t *count) {
    int ret = amo_check(kind, op, dt);
    if (count) *count = ret ? 0 : 1;  // upstream takes a NULL count: validity alone
    return ret;
}
int a_writevalid(fid_ep *, fi_datatype dt, fi_op op, size_t *count) {
    return valid(AmoKind::kWrite, dt, op, count);
}
int a_readwritevalid(fid_ep *, fi_datatype dt, fi_op op, size_t *count) {
    return valid(AmoKind::kFetch, dt, op, count);
}
int a_compwritevalid(fid_ep *, fi_datatype dt, fi_op op, size_t *count) {
    return valid(AmoKind::kCompare, dt, op, count);
}

}  // namespace

int amo_check(AmoKind kind, int op, int dt) {
    if (!amo::op_known(op) || !amo::datatype_known(dt)) return -FI_EINVAL;
    return offered(kind, op) & (1u << dt) ? 0 : -FI_EOPNOTSUPP;
}

int amo_query(int dt, int op, fi_atomic_attr *attr, uint64_t flags) {
    if (!attr) SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "NULL attr\n");
    bool fetch = flags & FI_FETCH_ATOMIC, cmp = flags & FI_COMPARE_ATOMIC;
    if (fetch && cmp) SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "fetch and compare both asked\n");
    if (flags & FI_CXI_PCIE_AMO)
        SN_REJECT(-FI_EOPNOTSUPP, FI_LOG_DOMAIN, "no PCIe fetch-add remap on a soft NIC\n");
    AmoKind kind = cmp ? AmoKind::kCompare : fetch ? AmoKind::kFetch : AmoKind::kWrite;
    if (int ret = amo_check(kind, op, dt)) return ret;
    attr->count = 1;
    attr->size = amo::datatype_size(dt);
    return 0;
}

fi_ops_atomic atomic_ops = {
    sizeof(fi_ops_atomic), a_write,      a_writev,         a_writemsg,      a_inject,
    a_readwrite,           a_readwritev, a_readwritemsg,   a_compwrite,     a_compwritev,
    a_compwritemsg,        a_writevalid, a_readwritevalid, a_compwritevalid};

}  // namespace softnic::cxi

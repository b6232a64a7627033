// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The collective entry points of fi_collective(3): fi_join_collective over an AV set
// (FI_JOIN_COMPLETE on the endpoint's EQ), barrier, broadcast, reduce and allreduce on
// the joined group (coll.hpp does them), and fi_query_collective. Each call checks its
// arguments and says why it refuses.
#include <rdma/fi_cxi_ext.h>
#include <rdma/fi_eq.h>

#include <cstring>

#include "common/av_set.hpp"
#include "common/eq.hpp"
#include "common/log.hpp"
#include "common/not_supported.hpp"
#include "cxi/obj/domain.hpp"
#include "cxi/obj/endpoint.hpp"

namespace softnic::cxi {
namespace {

EpView *view_of(fid_ep *f) {
    return owner_of<EpView>(f);
}

// A joined group, as the application holds it (fi_mc_addr: the group's address).
struct Mc {
    Handle<fid_mc, Mc> h;
    Endpoint *ep;
    PidEngine *engine;
};

int mc_close(fid *f) {
    Mc *mc = owner_of_fid<Mc, fid_mc>(f);
    mc->engine->locked([&] {
        mc->engine->coll().leave(mc->h.fid.fi_addr);
        return 0;
    });
    mc->ep->refs().put();
    delete mc;
    return 0;
}
fi_ops mc_fid_ops = make_fid_ops(mc_close, fid_no_bind, fid_no_control, fid_no_ops_open);

CxiAddr member_addr(Av &av, fi_addr_t a) {
    CxiAddr m{};
    if (Av::Entry *e = av.entry(a)) std::memcpy(&m, e->addr.data(), sizeof(m));
    m.pid_preferred = 0;
    m.pad = 0;
    return m;
}

// The endpoint a collective call may run on: enabled, with FI_COLLECTIVE, one context.
int usable(EpView *v) {
    if (!v->ep->enabled() || !v->engine)
        SN_REJECT(-FI_EOPBADSTATE, FI_LOG_EP_DATA, "collective on an endpoint not enabled\n");
    if (!(v->ep->caps() & FI_COLLECTIVE))
        SN_REJECT(-FI_EOPNOTSUPP, FI_LOG_EP_DATA, "endpoint without FI_COLLECTIVE\n");
    return 0;
}

// The rank of `root_addr` (an AV address) in the group `coll_addr`.
int root_rank(EpView *v, fi_addr_t coll_addr, fi_addr_t root_addr, uint32_t &rank) {
    Av *av = v->ep->av();
    if (!av || !av->entry(root_addr))
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "root fi_addr %lu is not in the AV\n", root_addr);
    int r = v->engine->locked(
        [&] { return v->engine->coll().rank_of(coll_addr, member_addr(*av, root_addr)); });
    if (r < 0) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "the root is not a member of the group\n");
    rank = uint32_t(r);
    return 0;
}

ssize_t post(EpView *v, fi_addr_t coll_addr, const CollArgs &a) {
    if (a.kind != CollKind::kBarrier) {
        if (a.dt < 0 || a.dt >= FI_DATATYPE_LAST ||
            (a.kind != CollKind::kBroadcast && !coll_bytes(a.kind, a.op, a.dt, 1)))
            SN_REJECT(-FI_EOPNOTSUPP, FI_LOG_EP_DATA, "op %d on datatype %d is not reduced\n", a.op,
                      a.dt);
        if (!coll_bytes(a.kind, a.op, a.dt, a.count))
            SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "%zu elements exceed %zu bytes (or none)\n",
                      a.count, kCollMaxBytes);
        if (!a.buf || (a.kind == CollKind::kAllreduce && !a.result))
            SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "NULL collective buffer\n");
    }
    return v->engine->locked([&] { return v->engine->coll().post(coll_addr, a); });
}

ssize_t coll_barrier(fid_ep *ep, fi_addr_t coll_addr, void *context) {
    EpView *v = view_of(ep);
    if (int r = usable(v)) return r;
    return post(v, coll_addr, CollArgs{CollKind::kBarrier, nullptr, nullptr, 0, 0, 0, 0, context});
}

ssize_t coll_barrier2(fid_ep *ep, fi_addr_t coll_addr, uint64_t flags, void *context) {
    if (flags) SN_REJECT(-FI_EINVAL, FI_LOG_EP_DATA, "barrier flags 0x%lx\n", flags);
    return coll_barrier(ep, coll_addr, context);
}

ssize_t coll_broadcast(fid_ep *ep, void *buf, size_t count, void *, fi_addr_t coll_addr,
                       fi_addr_t root_addr, fi_datatype dt, uint64_t, void *context) {
    EpView *v = view_of(ep);
    if (int r = usable(v)) return r;
    uint32_t root = 0;
    if (int r = root_rank(v, coll_addr, root_addr, root)) return r;
    return post(v, coll_addr,
                CollArgs{CollKind::kBroadcast, buf, buf, count, raw_enum(dt), 0, root, context});
}

ssize_t coll_allreduce(fid_ep *ep, const void *buf, size_t count, void *, void *result, void *,
                       fi_addr_t coll_addr, fi_datatype dt, fi_op op, uint64_t, void *context) {
    EpView *v = view_of(ep);
    if (int r = usable(v)) return r;
    return post(
        v, coll_addr,
        CollArgs{CollKind::kAllreduce, buf, result, count, raw_enum(dt), raw_enum(op), 0, context});
}

ssize_t coll_reduce_op(fid_ep *ep, const void *buf, size_t count, void *, void *result, void *,
                       fi_addr_t coll_addr, fi_addr_t root_addr, fi_datatype dt, fi_op op, uint64_t,
                       void *context) {
    EpView *v = view_of(ep);
    if (int r = usable(v)) return r;
    uint32_t root = 0;
    if (int r = root_rank(v, coll_addr, root_addr, root)) return r;
    return post(
        v, coll_addr,
        CollArgs{CollKind::kReduce, buf, result, count, raw_enum(dt), raw_enum(op), root, context});
}

fi_ops_collective make_coll_ops() {
    fi_ops_collective o = all_not_supported<fi_ops_collective>();
    o.barrier = coll_barrier;
    o.broadcast = coll_broadcast;
    o.allreduce = coll_allreduce;
    o.reduce = coll_reduce_op;
    o.barrier2 = coll_barrier2;
    return o;
}

}  // namespace

fi_ops_collective coll_ops = make_coll_ops();

int coll_join(fid_ep *ep, const void *addr, uint64_t flags, fid_mc **mc, void *context) {
    EpView *v = view_of(ep);
    if (!(flags & FI_COLLECTIVE))
        SN_REJECT(-FI_ENOSYS, FI_LOG_EP_CTRL, "multicast joins are not supported\n");
    if (!addr || !mc) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "NULL join address or mc\n");
    if (int r = usable(v)) return r;
    auto *ca = static_cast<const fi_collective_addr *>(addr);
    const AvSet *set = AvSet::of(ca->set);
    if (!set) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "join without an AV set\n");
    if (&set->av() != v->ep->av())
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "the AV set is not of the endpoint's AV\n");
    if (ca->coll_addr != set->coll_addr() && ca->coll_addr != FI_ADDR_NOTAVAIL)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "coll_addr is not the set's address\n");
    if (!v->ep->eq()) SN_REJECT(-FI_ENOEQ, FI_LOG_EP_CTRL, "join needs an EQ bound\n");
    std::vector<CxiAddr> members;
    int rank = -1;
    for (fi_addr_t a : set->members()) {
        if (!v->ep->av()->entry(a))
            SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "member fi_addr %lu left the AV\n", a);
        CxiAddr m = member_addr(*v->ep->av(), a);
        for (const CxiAddr &o : members)
            if (o.nic == m.nic && o.pid == m.pid)
                SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "an endpoint is in the set twice\n");
        if (m.nic == v->ep->domain().nic().addr && m.pid == v->engine->pid())
            rank = int(members.size());
        members.push_back(m);
    }
    if (rank < 0) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "this endpoint is not in the set\n");
    return guarded([&] {
        auto m = std::make_unique<Mc>();
        m->h.owner = m.get();
        m->h.fid.fid.fclass = FI_CLASS_MC;
        m->h.fid.fid.context = context;
        m->h.fid.fid.ops = &mc_fid_ops;
        m->ep = v->ep;
        m->engine = v->engine;
        m->h.fid.fi_addr =
            v->engine->locked([&] { return v->engine->coll().join(members, uint32_t(rank)); });
        fi_eq_entry ev{&m->h.fid.fid, context, 0};
        Eq *eq = Eq::of(reinterpret_cast<fid_eq *>(v->ep->eq()));
        if (!eq->post(FI_JOIN_COMPLETE, &ev, sizeof(ev)))
            SN_WARN(FI_LOG_EP_CTRL, "EQ full: FI_JOIN_COMPLETE lost\n");
        v->ep->refs().get();  // the endpoint stays open while the group does
        *mc = &m.release()->h.fid;
        return 0;
    });
}

// What a collective call accepts: op x datatype, and the most members.
int coll_query(fid_domain *, fi_collective_op coll, fi_collective_attr *attr, uint64_t flags) {
    if (!attr) SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "NULL collective attributes\n");
    if (flags) SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "query flags 0x%lx\n", flags);
    CollKind kind;
    switch (raw_enum(coll)) {
        case FI_BARRIER:
            kind = CollKind::kBarrier;
            break;
        case FI_BROADCAST:
            kind = CollKind::kBroadcast;
            break;
        case FI_REDUCE:
            kind = CollKind::kReduce;
            break;
        case FI_ALLREDUCE:
            kind = CollKind::kAllreduce;
            break;
        default:
            SN_REJECT(-FI_EOPNOTSUPP, FI_LOG_DOMAIN, "collective %d is not offered\n",
                      raw_enum(coll));
    }
    int dt = raw_enum(attr->datatype), op = raw_enum(attr->op);
    if (kind != CollKind::kBarrier && !coll_bytes(kind, op, dt, 1))
        SN_REJECT(-FI_EOPNOTSUPP, FI_LOG_DOMAIN, "op %d on datatype %d is not reduced\n", op, dt);
    size_t each = kind == CollKind::kBarrier ? 0 : coll_bytes(kind, op, dt, 1);
    attr->datatype_attr.count = each ? kCollMaxBytes / each : 0;
    attr->datatype_attr.size = each;
    attr->max_members = 1u << 16;
    attr->mode = 0;
    return 0;
}

}  // namespace softnic::cxi

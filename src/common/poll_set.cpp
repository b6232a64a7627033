// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "common/poll_set.hpp"

#include <algorithm>
#include <mutex>
#include <vector>

#include "common/cntr.hpp"
#include "common/cq.hpp"
#include "common/log.hpp"

namespace softnic {
namespace {

struct Member {
    fid *f;
    Cq *cq = nullptr;      // one of the two
    Cntr *cntr = nullptr;  // the values fi_poll last saw:
    uint64_t seen = 0, seen_err = 0;
};

struct PollSet {
    Handle<fid_poll, PollSet> handle;
    RefCount *domain_refs = nullptr;
    bool counters = false;
    std::mutex lock;
    std::vector<Member> members;
};

PollSet *set_of(fid_poll *f) {
    return owner_of<PollSet>(f);
}

// Whether `m` has something for the application; progresses it first.
bool ready(Member &m) {
    if (m.cq) {
        m.cq->progress().run();
        return !m.cq->empty();
    }
    uint64_t v = m.cntr->read(), e = m.cntr->readerr();
    bool changed = v != m.seen || e != m.seen_err;
    m.seen = v;
    m.seen_err = e;
    return changed;
}

int ps_poll(fid_poll *f, void **context, int count) {
    if (count < 0 || (count && !context)) SN_REJECT(-FI_EINVAL, FI_LOG_CQ, "bad context array\n");
    PollSet *ps = set_of(f);
    std::lock_guard<std::mutex> g(ps->lock);
    int n = 0;
    for (Member &m : ps->members) {
        if (n == count) break;
        if (ready(m)) context[n++] = m.f->context;
    }
    return n;
}

RefCount *refs_of(Member &m) {
    return m.cq ? &m.cq->refs() : &m.cntr->refs();
}

int ps_add(fid_poll *f, fid *member, uint64_t) {
    PollSet *ps = set_of(f);
    Member m{member};
    if (member && member->fclass == FI_CLASS_CQ)
        m.cq = owner_of<Cq>(reinterpret_cast<fid_cq *>(member));
    else if (member && member->fclass == FI_CLASS_CNTR && ps->counters)
        m.cntr = owner_of<Cntr>(reinterpret_cast<fid_cntr *>(member));
    else
        SN_REJECT(-FI_EINVAL, FI_LOG_CQ, "poll sets hold CQs%s only\n",
                  ps->counters ? " and counters" : "");
    std::lock_guard<std::mutex> g(ps->lock);
    for (const Member &have : ps->members)
        if (have.f == member) return 0;
    if (m.cntr) {
        m.seen = m.cntr->read();
        m.seen_err = m.cntr->readerr();
    }
    refs_of(m)->get();
    ps->members.push_back(m);
    return 0;
}

int ps_del(fid_poll *f, fid *member, uint64_t) {
    PollSet *ps = set_of(f);
    std::lock_guard<std::mutex> g(ps->lock);
    auto it = std::find_if(ps->members.begin(), ps->members.end(),
                           [member](const Member &m) { return m.f == member; });
    if (it == ps->members.end()) SN_REJECT(-FI_EINVAL, FI_LOG_CQ, "not in the poll set\n");
    refs_of(*it)->put();
    ps->members.erase(it);
    return 0;
}

int ps_close(fid *f) {
    PollSet *ps = owner_of_fid<PollSet, fid_poll>(f);
    if (!ps->members.empty()) SN_REJECT(-FI_EBUSY, FI_LOG_CQ, "poll set still has members\n");
    ps->domain_refs->put();
    delete ps;
    return 0;
}

fi_ops_poll poll_ops = {sizeof(fi_ops_poll), ps_poll, ps_add, ps_del};
fi_ops poll_fid_ops = make_fid_ops(ps_close, fid_no_bind, fid_no_control, fid_no_ops_open);

}  // namespace

int poll_set_open(RefCount &domain_refs, fi_poll_attr *attr, fid_poll **out, bool counters) {
    if (!attr || !out) SN_REJECT(-FI_EINVAL, FI_LOG_CQ, "NULL attr or poll set\n");
    if (attr->flags) SN_REJECT(-FI_EINVAL, FI_LOG_CQ, "poll set flags must be 0\n");
    return guarded([&] {
        auto *ps = new PollSet;
        ps->handle.owner = ps;
        ps->handle.fid.fid.fclass = FI_CLASS_POLL;
        ps->handle.fid.fid.ops = &poll_fid_ops;
        ps->handle.fid.ops = &poll_ops;
        ps->domain_refs = &domain_refs;
        ps->counters = counters;
        domain_refs.get();
        *out = &ps->handle.fid;
        return 0;
    });
}

}  // namespace softnic

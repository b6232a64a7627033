// Poll sets (fi_poll_open): a list of CQs; fi_poll progresses each and reports the
// contexts of those that hold completions.
#include <rdma/fi_domain.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "common/log.hpp"
#include "usnic/cq.hpp"
#include "usnic/domain.hpp"

namespace softnic::usnic {
namespace {

struct PollSet {
    Handle<fid_poll, PollSet> handle;
    Domain *domain = nullptr;
    std::mutex lock;
    std::vector<UCq *> cqs;
};

PollSet *set_of(fid_poll *f) {
    return owner_of<PollSet>(f);
}

int ps_poll(fid_poll *f, void **context, int count) {
    if (count < 0 || (count && !context)) SN_REJECT(-FI_EINVAL, FI_LOG_CQ, "bad context array\n");
    PollSet *ps = set_of(f);
    std::lock_guard<std::mutex> g(ps->lock);
    int n = 0;
    for (UCq *cq : ps->cqs) {
        if (n == count) break;
        cq->core().progress().run();
        if (!cq->core().empty()) context[n++] = cq->fid()->fid.context;
    }
    return n;
}

int ps_add(fid_poll *f, fid *member, uint64_t) {
    if (!member || member->fclass != FI_CLASS_CQ)
        SN_REJECT(-FI_EINVAL, FI_LOG_CQ, "poll sets hold CQs only\n");
    PollSet *ps = set_of(f);
    UCq *cq = UCq::of(reinterpret_cast<fid_cq *>(member));
    std::lock_guard<std::mutex> g(ps->lock);
    if (std::find(ps->cqs.begin(), ps->cqs.end(), cq) != ps->cqs.end()) return 0;
    ps->cqs.push_back(cq);
    cq->core().refs().get();
    return 0;
}

int ps_del(fid_poll *f, fid *member, uint64_t) {
    if (!member || member->fclass != FI_CLASS_CQ)
        SN_REJECT(-FI_EINVAL, FI_LOG_CQ, "poll sets hold CQs only\n");
    PollSet *ps = set_of(f);
    UCq *cq = UCq::of(reinterpret_cast<fid_cq *>(member));
    std::lock_guard<std::mutex> g(ps->lock);
    auto it = std::find(ps->cqs.begin(), ps->cqs.end(), cq);
    if (it == ps->cqs.end()) SN_REJECT(-FI_EINVAL, FI_LOG_CQ, "CQ is not in the poll set\n");
    ps->cqs.erase(it);
    cq->core().refs().put();
    return 0;
}

int ps_close(fid *f) {
    PollSet *ps = owner_of_fid<PollSet, fid_poll>(f);
    if (!ps->cqs.empty()) SN_REJECT(-FI_EBUSY, FI_LOG_CQ, "poll set still holds CQs\n");
    ps->domain->refs().put();
    delete ps;
    return 0;
}

fi_ops_poll poll_ops = {sizeof(fi_ops_poll), ps_poll, ps_add, ps_del};
fi_ops poll_fid_ops = make_fid_ops(ps_close, fid_no_bind, fid_no_control, fid_no_ops_open);

}  // namespace

int poll_open(Domain *domain, fi_poll_attr *attr, fid_poll **out) {
    if (!attr || !out) SN_REJECT(-FI_EINVAL, FI_LOG_CQ, "NULL attr or poll set\n");
    if (attr->flags) SN_REJECT(-FI_EINVAL, FI_LOG_CQ, "poll set flags must be 0\n");
    auto *ps = new PollSet;
    ps->handle.owner = ps;
    ps->handle.fid.fid.fclass = FI_CLASS_POLL;
    ps->handle.fid.fid.ops = &poll_fid_ops;
    ps->handle.fid.ops = &poll_ops;
    ps->domain = domain;
    domain->refs().get();
    *out = &ps->handle.fid;
    return 0;
}

}  // namespace softnic::usnic

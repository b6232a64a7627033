// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "common/av_set.hpp"

#include <algorithm>
#include <atomic>

#include "common/log.hpp"

namespace softnic {
namespace {

std::atomic<uint64_t> g_next_set{1};

int op_close(fid *f) {
    delete owner_of_fid<AvSet, fid_av_set>(f);
    return 0;
}
fi_ops set_fid_ops = make_fid_ops(op_close, fid_no_bind, fid_no_control, fid_no_ops_open);

AvSet *set_of(fid_av_set *s) {
    return owner_of<AvSet>(s);
}
int op_union(fid_av_set *dst, const fid_av_set *src) {
    const AvSet *s = AvSet::of(src);
    if (!s) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "NULL source set\n");
    return guarded([&] { return set_of(dst)->set_union(*s); });
}
int op_intersect(fid_av_set *dst, const fid_av_set *src) {
    const AvSet *s = AvSet::of(src);
    if (!s) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "NULL source set\n");
    return set_of(dst)->intersect(*s);
}
int op_diff(fid_av_set *dst, const fid_av_set *src) {
    const AvSet *s = AvSet::of(src);
    if (!s) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "NULL source set\n");
    return set_of(dst)->diff(*s);
}
int op_insert(fid_av_set *set, fi_addr_t a) {
    return guarded([&] { return set_of(set)->insert(a); });
}
int op_remove(fid_av_set *set, fi_addr_t a) {
    return set_of(set)->remove(a);
}
int op_addr(fid_av_set *set, fi_addr_t *coll_addr) {
    if (!coll_addr) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "NULL collective address\n");
    *coll_addr = set_of(set)->coll_addr();
    return 0;
}
fi_ops_av_set set_ops = {
    sizeof(fi_ops_av_set), op_union, op_intersect, op_diff, op_insert, op_remove, op_addr};

}  // namespace

AvSet::AvSet(Av &av, void *context) : av_(av), id_(g_next_set.fetch_add(1)) {
    handle_.owner = this;
    handle_.fid.fid.fclass = FI_CLASS_AV_SET;
    handle_.fid.fid.context = context;
    handle_.fid.fid.ops = &set_fid_ops;
    handle_.fid.ops = &set_ops;
    av_.refs().get();  // the AV stays open while a set names its addresses
}

AvSet::~AvSet() {
    av_.refs().put();
}

const AvSet *AvSet::of(const fid_av_set *set) {
    if (!set || set->fid.fclass != FI_CLASS_AV_SET || set->ops != &set_ops) return nullptr;
    return owner_of<AvSet>(const_cast<fid_av_set *>(set));
}

// attr: FI_UNIVERSE (every address of the AV), or start_addr..end_addr by stride (0 is
// taken as 1; addresses of the range not in the AV are skipped; at most `count` when it
// is not 0), or an empty set (start_addr FI_ADDR_NOTAVAIL).
int AvSet::open(Av &av, const fi_av_set_attr *attr, fid_av_set **set, void *context) {
    if (!attr || !set) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "NULL AV set attributes or set\n");
    if (attr->flags & ~FI_UNIVERSE)
        SN_REJECT(-FI_EINVAL, FI_LOG_AV, "AV set flags 0x%lx not supported\n", attr->flags);
    if (attr->comm_key_size || attr->comm_key)
        SN_REJECT(-FI_EINVAL, FI_LOG_AV, "communication keys are not supported\n");
    auto s = std::unique_ptr<AvSet>(new AvSet(av, context));
    if (attr->flags & FI_UNIVERSE) {
        for (fi_addr_t a = 0; a < av.span(); a++)
            if (av.entry(a)) s->members_.push_back(a);
    } else if (attr->start_addr != FI_ADDR_NOTAVAIL) {
        if (attr->end_addr < attr->start_addr || !attr->stride)
            SN_REJECT(-FI_EINVAL, FI_LOG_AV, "bad AV set range or stride\n");
        for (fi_addr_t a = attr->start_addr; a <= attr->end_addr; a += attr->stride) {
            if (!av.entry(a)) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "fi_addr %lu is not in the AV\n", a);
            s->members_.push_back(a);
            if (attr->count && s->members_.size() == attr->count) break;
        }
    }
    *set = s.release()->fid();
    return 0;
}

bool AvSet::has(fi_addr_t a) const {
    return std::find(members_.begin(), members_.end(), a) != members_.end();
}

int AvSet::check_peer(const AvSet &src) const {
    if (&src.av_ != &av_) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "AV sets of different AVs\n");
    return 0;
}

int AvSet::set_union(const AvSet &src) {
    if (int r = check_peer(src)) return r;
    for (fi_addr_t a : src.members_)
        if (!has(a)) members_.push_back(a);
    return 0;
}

int AvSet::intersect(const AvSet &src) {
    if (int r = check_peer(src)) return r;
    std::erase_if(members_, [&](fi_addr_t a) { return !src.has(a); });
    return 0;
}

int AvSet::diff(const AvSet &src) {
    if (int r = check_peer(src)) return r;
    std::erase_if(members_, [&](fi_addr_t a) { return src.has(a); });
    return 0;
}

int AvSet::insert(fi_addr_t a) {
    if (!av_.entry(a)) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "fi_addr %lu is not in the AV\n", a);
    if (has(a)) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "fi_addr %lu is already in the set\n", a);
    members_.push_back(a);
    return 0;
}

int AvSet::remove(fi_addr_t a) {
    auto it = std::find(members_.begin(), members_.end(), a);
    if (it == members_.end())
        SN_REJECT(-FI_EINVAL, FI_LOG_AV, "fi_addr %lu is not in the set\n", a);
    members_.erase(it);
    return 0;
}

}  // namespace softnic

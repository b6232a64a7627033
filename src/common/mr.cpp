// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "common/mr.hpp"

#include <sched.h>

#include <chrono>

#include "common/cntr.hpp"

namespace softnic {
namespace {

constexpr uint64_t kProvKeyBit = 1ULL << 63;
// A remote access (a copy, an atomic) holds the MR for a moment, possibly on another
// thread: a close that races with one waits this long before answering -FI_EBUSY.
constexpr auto kSettle = std::chrono::milliseconds(100);

int mr_close(fid *f) {
    Mr *mr = owner_of_fid<Mr, fid_mr>(f);
    auto until = std::chrono::steady_clock::now() + kSettle;
    // Unpublish under the table's lock: a remote access either holds a reference
    // already (then the MR is busy) or can no longer find it.
    while (mr->refs().busy() || (mr->keyed() && !mr->table().retire(mr, mr->key()))) {
        if (std::chrono::steady_clock::now() > until)
            SN_REJECT(-FI_EBUSY, FI_LOG_MR, "MR in use by a remote access\n");
        sched_yield();
    }
    delete mr;
    return 0;
}

int mr_bind(fid *f, fid *bfid, uint64_t flags) {
    return owner_of_fid<Mr, fid_mr>(f)->bind(bfid, flags);
}

int mr_control(fid *f, int command, void *) {
    if (command == FI_ENABLE) return owner_of_fid<Mr, fid_mr>(f)->enable();
    SN_REJECT(-FI_EINVAL, FI_LOG_MR, "unsupported MR control %d\n", command);
}

fi_ops mr_fid_ops = make_fid_ops(mr_close, mr_bind, mr_control, fid_no_ops_open);

}  // namespace

int MrTable::assign(Mr *mr, uint64_t requested, uint64_t &key) {
    std::lock_guard<std::mutex> g(lock_);
    if (prov_keys_) {
        uint64_t seq = next_seq_++;
        key = make_prov_key ? make_prov_key(*mr, seq) : kProvKeyBit | seq;
    } else {
        if (requested > 0xFFFFFFFFULL)
            SN_REJECT(-FI_EKEYREJECTED, FI_LOG_MR, "client key 0x%lx exceeds 32 bits\n", requested);
        if (keys_.count(requested))
            SN_REJECT(-FI_ENOKEY, FI_LOG_MR, "key 0x%lx already in use\n", requested);
        key = requested;
    }
    keys_[key] = mr;
    count_.store(keys_.size(), std::memory_order_relaxed);
    if (on_publish) on_publish(*mr, key);
    return 0;
}

void MrTable::erase(uint64_t key) {
    if (!keys_.erase(key)) return;
    count_.store(keys_.size(), std::memory_order_relaxed);
    if (on_withdraw) on_withdraw(key);
}

void MrTable::release(uint64_t key) {
    std::lock_guard<std::mutex> g(lock_);
    erase(key);
}

Mr *MrTable::acquire(uint64_t key) {
    std::lock_guard<std::mutex> g(lock_);
    auto it = keys_.find(key);
    if (it == keys_.end()) return nullptr;
    it->second->refs().get();
    return it->second;
}

bool MrTable::retire(Mr *mr, uint64_t key) {
    std::lock_guard<std::mutex> g(lock_);
    if (mr->refs().busy()) return false;
    erase(key);
    mr->unkey();
    return true;
}

int Mr::create(MrTable &table, fid_domain *domain, const fi_mr_attr &attr, uint64_t flags, Mr **out,
               hmem::Where where) {
    (void)domain;
    if (attr.iov_count > 1) SN_REJECT(-FI_ENOSYS, FI_LOG_MR, "only one iov per MR\n");
    if (attr.iov_count == 0 || !attr.mr_iov) SN_REJECT(-FI_EINVAL, FI_LOG_MR, "no iov\n");
    if (flags & FI_DIRECTED_RECV) SN_REJECT(-FI_EINVAL, FI_LOG_MR, "bad flag FI_DIRECTED_RECV\n");
    if (!table.prov_keys() && attr.requested_key > 0xFFFFFFFFULL &&
        (attr.access & (FI_REMOTE_READ | FI_REMOTE_WRITE)))
        SN_REJECT(-FI_EKEYREJECTED, FI_LOG_MR, "client key exceeds 32 bits\n");
    auto *mr = new Mr(table, attr, flags, where);
    if (!table.endpoint_mode()) {
        int ret = mr->publish();
        if (ret) {
            delete mr;
            return ret;
        }
    }
    *out = mr;
    return 0;
}

Mr::Mr(MrTable &table, const fi_mr_attr &attr, uint64_t flags, hmem::Where where)
    : table_(table),
      base_(attr.mr_iov[0].iov_base),
      len_(attr.mr_iov[0].iov_len),
      where_(where),
      access_(attr.access),
      flags_(flags),
      requested_key_(attr.requested_key) {
    handle_.owner = this;
    handle_.fid.fid.fclass = FI_CLASS_MR;
    handle_.fid.fid.context = attr.context;
    handle_.fid.fid.ops = &mr_fid_ops;
    handle_.fid.mem_desc = this;
    handle_.fid.key = FI_KEY_NOTAVAIL;
}

Mr::~Mr() {
    if (keyed_) table_.release(handle_.fid.key);
    if (ep_refs_) ep_refs_->put();
    if (Cntr *c = event_cntr()) c->refs().put();
}

int Mr::publish() {
    if (!remote()) return 0;  // local-only MRs get no remote key
    uint64_t key = 0;
    int ret = table_.assign(this, requested_key_, key);
    if (ret) return ret;
    keyed_ = true;
    handle_.fid.key = key;
    return 0;
}

int Mr::bind(struct fid *bfid, uint64_t flags) {
    if (!bfid) SN_REJECT(-FI_EINVAL, FI_LOG_MR, "NULL bind target\n");
    switch (bfid->fclass) {
        case FI_CLASS_EP:
            if (bound_ep_) SN_REJECT(-FI_EINVAL, FI_LOG_MR, "MR already bound to an EP\n");
            if (table_.bind_endpoint) {
                int ret = table_.bind_endpoint(bfid, flags_, &ep_refs_);
                if (ret) return ret;
            }
            bound_ep_ = bfid;
            return 0;
        case FI_CLASS_CNTR:
            if (!(flags & FI_REMOTE_WRITE))
                SN_REJECT(-FI_EINVAL, FI_LOG_MR, "counter bind needs FI_REMOTE_WRITE\n");
            if (enabled_) SN_REJECT(-FI_EINVAL, FI_LOG_MR, "bind counters before enable\n");
            if (Cntr *old = event_cntr()) old->refs().put();
            bound_cntr_ = bfid;
            event_cntr()->refs().get();  // remote writes count on it: it must outlive the MR
            return 0;
        default:
            SN_REJECT(-FI_EINVAL, FI_LOG_MR, "cannot bind class %zu\n", bfid->fclass);
    }
}

Cntr *Mr::event_cntr() const {
    return bound_cntr_ ? owner_of_fid<Cntr, fid_cntr>(bound_cntr_) : nullptr;
}

int Mr::enable() {
    if (!table_.endpoint_mode()) return 0;
    if (enabled_) return 0;
    if (!bound_ep_) SN_REJECT(-FI_EINVAL, FI_LOG_MR, "FI_MR_ENDPOINT: bind an EP first\n");
    int ret = publish();
    if (ret) return ret;
    enabled_ = true;
    return 0;
}

}  // namespace softnic

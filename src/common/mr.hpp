// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Memory registration: keys (client or provider chosen), FI_MR_ENDPOINT binding and
// enabling, and the per-domain key table that RMA targets look keys up in.
#pragma once

#include <rdma/fi_domain.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "common/fid.hpp"
#include "common/hmem.hpp"

namespace softnic {

class Mr;

// Per-domain table of remotely accessible MRs.
class MrTable {
  public:
    explicit MrTable(bool prov_keys, bool endpoint_mode)
        : prov_keys_(prov_keys), endpoint_mode_(endpoint_mode) {}
    bool prov_keys() const { return prov_keys_; }
    bool endpoint_mode() const { return endpoint_mode_; }

    // Claim a key for `mr`: the requested client key or a fresh provider key.
    int assign(Mr *mr, uint64_t requested, uint64_t &key);
    void release(uint64_t key);
    // The MR of `key` with a reference held (put it back with mr->refs().put()), so that
    // a concurrent fi_close cannot free it under a remote access; null if none.
    Mr *acquire(uint64_t key);
    // For fi_close: unpublish `key` unless the MR is in use. False when busy.
    bool retire(Mr *mr, uint64_t key);
    // Whether any MR is remotely accessible: a target must then be progressed even
    // while its application is away.
    bool any_remote() const { return count_.load(std::memory_order_relaxed) != 0; }

    // The provider's check of an fi_mr_bind to an endpoint (given the MR's registration
    // flags): 0 and the endpoint's reference count (held while bound), or a -FI_E* code.
    std::function<int(struct fid *ep, uint64_t mr_flags, RefCount **refs)> bind_endpoint;
    // Told when a key becomes remotely reachable and when it stops being so (called
    // under the table's lock), e.g. to publish it for single-copy access.
    std::function<void(const Mr &mr, uint64_t key)> on_publish;
    std::function<void(uint64_t key)> on_withdraw;
    // The provider key of `mr`, given a sequence number never used before (under the
    // table's lock); by default bit 63 and the sequence.
    std::function<uint64_t(const Mr &mr, uint64_t seq)> make_prov_key;

  private:
    void erase(uint64_t key);

    bool prov_keys_, endpoint_mode_;
    std::mutex lock_;
    std::unordered_map<uint64_t, Mr *> keys_;
    std::atomic<size_t> count_{0};  // keys_.size(), readable without the lock
    uint64_t next_seq_ = 1;         // provider keys are never reused
};

class Mr {
  public:
    // Returns 0 or -FI_E*; on success *out is the new MR.
    // `where`: the memory the buffer is in (the provider read and checked attr.iface).
    static int create(MrTable &table, fid_domain *domain, const fi_mr_attr &attr, uint64_t flags,
                      Mr **out, hmem::Where where = {});
    virtual ~Mr();
    Mr(const Mr &) = delete;
    Mr &operator=(const Mr &) = delete;

    fid_mr *fid() { return &handle_.fid; }
    MrTable &table() { return table_; }
    RefCount &refs() { return refs_; }
    // Keeps the parent (domain, or fabric for an EQ) open while this object lives.
    void hold_parent(RefCount &parent) { parent_.hold(parent); }
    const void *base() const { return base_; }
    const hmem::Where &where() const { return where_; }
    size_t len() const { return len_; }
    uint64_t access() const { return access_; }
    uint64_t flags() const { return flags_; }  // registration flags (FI_RMA_EVENT...)
    bool remote() const { return access_ & (FI_REMOTE_READ | FI_REMOTE_WRITE); }
    bool keyed() const { return keyed_; }
    void unkey() { keyed_ = false; }
    uint64_t key() const { return handle_.fid.key; }
    // The counter bound with FI_REMOTE_WRITE: counts remote operations on this MR.
    class Cntr *event_cntr() const;

    int bind(struct fid *bfid, uint64_t flags);
    int enable();

  private:
    Mr(MrTable &table, const fi_mr_attr &attr, uint64_t flags, hmem::Where where);
    int publish();

    Handle<fid_mr, Mr> handle_;
    MrTable &table_;
    const void *base_;
    size_t len_;
    hmem::Where where_;
    uint64_t access_, flags_, requested_key_;
    struct fid *bound_ep_ = nullptr;
    RefCount *ep_refs_ = nullptr;
    struct fid *bound_cntr_ = nullptr;
    bool enabled_ = false, keyed_ = false;
    RefCount refs_;
    ParentRef parent_;
};

}  // namespace softnic

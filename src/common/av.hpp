// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Address vector shared by both providers: FI_AV_TABLE and FI_AV_MAP use the same
// index-based table (fi_addr_t is opaque to the application), lookups by index are
// lock-free and reverse lookups (address -> fi_addr, for FI_SOURCE) are O(1).
#pragma once

#include <rdma/fi_domain.h>

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/fid.hpp"
#include "common/shared_av.hpp"

namespace softnic {

// What the provider contributes: its address format.
struct AvAddressing {
    size_t addrlen;                     // bytes of one address
    uint64_t (*key)(const void *addr);  // identity used for reverse lookup
    bool (*valid)(const void *addr);    // well-formed?
    int (*from_service)(const char *node, const char *service, void *out);
    std::string (*to_string)(const void *addr);
};

// FI_AV_AUTH_KEY (libfabric 1.20 and later): authorization keys inserted into the AV,
// each named by its own fi_addr_t handle; addresses inserted with FI_AUTH_KEY are
// reached under the key whose handle they name. The provider says what a key is.
struct AvAuthKeys {
    size_t max_keys = 0;  // 0: the AV holds no keys (the domain did not ask for them)
    size_t key_size = 0;
    // -FI_E* (logged) if unusable; may rewrite the copy it is given to a canonical form.
    std::function<int(uint8_t *key)> check;
    std::function<void(void *addr, const void *key)> apply;  // an address under a key
};

class Av {
  public:
    static constexpr size_t kMaxAddrLen = 32;
    struct Entry {
        std::array<uint8_t, kMaxAddrLen> addr{};
        uint64_t key = 0;
        fi_addr_t user_id = FI_ADDR_NOTAVAIL;
        uint32_t refs = 0;                        // 0 = free slot
        std::atomic<void *> peer_cache{nullptr};  // provider's resolved route, set lazily
    };

    static int check_attr(const fi_av_attr &attr);
    // Named AVs (FI_SHARED_AV) may fail to open: check init() after construction.
    Av(const fi_av_attr &attr, const AvAddressing &addressing, void *context);
    int init(const fi_av_attr &attr);
    // For a named AV opened FI_READ: the fi_addr_t of each entry the creator had inserted
    // (what fi_av_attr.map_addr returns to the application), else null.
    void *map_addr() { return map_.empty() ? nullptr : map_.data(); }
    virtual ~Av();
    Av(const Av &) = delete;
    Av &operator=(const Av &) = delete;

    fid_av *fid() { return &handle_.fid; }
    RefCount &refs() { return refs_; }
    // Keeps the parent (domain, or fabric for an EQ) open while this object lives.
    void hold_parent(RefCount &parent) { parent_.hold(parent); }
    const AvAddressing &addressing() const { return addressing_; }
    bool symmetric() const { return flags_ & FI_SYMMETRIC; }
    int rx_ctx_bits() const { return rx_ctx_bits_; }
    // Changes whenever an address is inserted or removed (for caches of reverse lookups).
    uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

    int insert(const void *addr, size_t count, fi_addr_t *fi_addr, uint64_t flags);
    int insertsvc(const char *node, const char *service, fi_addr_t *fi_addr, uint64_t flags);
    int remove(fi_addr_t *fi_addr, size_t count, uint64_t flags);
    int lookup(fi_addr_t fi_addr, void *addr, size_t *addrlen);
    const char *straddr(const void *addr, char *buf, size_t *len);
    int set_user_id(fi_addr_t fi_addr, fi_addr_t user_id, uint64_t flags);

    // Authorization keys (av_auth_keys.cpp).
    void use_auth_keys(AvAuthKeys policy) { auth_policy_ = std::move(policy); }
    bool auth_key_mode() const { return auth_policy_.max_keys != 0; }
    int insert_auth_key(const void *key, size_t size, fi_addr_t *fi_addr, uint64_t flags);
    int lookup_auth_key(fi_addr_t handle, void *key, size_t *size);
    int remove_auth_keys(const fi_addr_t *handles, size_t count);
    // An endpoint enabling takes the keys inserted so far (each copied into `out`, one
    // key_size record after another) and holds them until release_auth_keys.
    size_t acquire_auth_keys(std::vector<uint8_t> &out);
    void release_auth_keys();

    // Data path: the entry for an index (masked of rx context bits), or null. Inline: a
    // directed receive checks its source with it (MPI's every receive).
    Entry *entry(fi_addr_t fi_addr) const {
        if (rx_ctx_bits_ || read_only_) [[unlikely]]
            return entry_general(fi_addr);
        if (fi_addr >= capacity_.load(std::memory_order_acquire)) return nullptr;  // UNSPEC too
        Entry &e = slot(fi_addr);
        return e.refs ? &e : nullptr;
    }
    // The fi_addr (or user id) an address was inserted as, FI_ADDR_NOTAVAIL if none.
    fi_addr_t reverse(uint64_t key) const;
    // Strip the receive-context bits of a scalable-endpoint address.
    fi_addr_t base_index(fi_addr_t a) const;
    // One past the highest index ever used (entries below it may be free).
    fi_addr_t span() const {
        std::lock_guard<std::mutex> g(lock_);
        return next_;
    }
    // fi_av_set: a provider with collectives allows AV sets of this AV.
    void allow_sets() { sets_allowed_ = true; }
    bool sets_allowed() const { return sets_allowed_; }
    // Clear every cached route equal to `peer` (its peer went away).
    void forget_peer(void *peer);
    unsigned rx_index(fi_addr_t a) const;

  private:
    static constexpr size_t kChunk = 1024, kMaxChunks = 65536;
    fi_addr_t insert_one(const void *addr, fi_addr_t user_id);
    int check_insert_flags(uint64_t flags, const fi_addr_t *fi_addr) const;
    // The address of a FI_AUTH_KEY insert under the key `handle` names; false if none.
    bool under_auth_key(fi_addr_t handle, uint8_t *addr) const;
    void place_at(size_t i, const void *addr);
    void sync_shared();                             // a reader catches up with the creator's table
    Entry *entry_general(fi_addr_t fi_addr) const;  // scalable or named, read-only AVs
    int open_shared(const fi_av_attr &attr);
    Entry &slot(size_t i) const { return chunks_[i / kChunk].get()[i % kChunk]; }

    Handle<fid_av, Av> handle_;
    AvAddressing addressing_;
    uint64_t flags_;
    int rx_ctx_bits_;
    mutable std::mutex lock_;  // writers only; readers use the published chunks
    std::unique_ptr<std::unique_ptr<Entry[]>[]> chunks_;
    std::atomic<size_t> capacity_{0};
    std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> free_;
    size_t next_ = 0;
    std::unordered_map<uint64_t, size_t> by_key_;
    std::atomic<uint64_t> generation_{1};
    std::unique_ptr<SharedAvTable> shared_;
    bool read_only_ = false;
    bool sets_allowed_ = false;
    size_t synced_ = 0;
    std::vector<fi_addr_t> map_;
    struct AuthKeySlot {
        std::vector<uint8_t> key;  // empty: a free handle
        fi_addr_t user_id = FI_ADDR_NOTAVAIL;
    };
    AvAuthKeys auth_policy_;
    std::vector<AuthKeySlot> auth_keys_;
    uint32_t auth_key_holders_ = 0;  // enabled endpoints configured with the keys
    RefCount refs_;
    ParentRef parent_;
};

extern fi_ops_av av_ops;
extern fi_ops av_fid_ops;
int av_close(fid *f);

}  // namespace softnic

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "common/av.hpp"
#include "common/av_set.hpp"

#include <cstring>

#include "common/fi_api.hpp"

namespace softnic {

int av_close(fid *f);

namespace {

Av *av_of(fid_av *f) {
    return owner_of<Av>(f);
}

int op_insert(fid_av *f, const void *addr, size_t count, fi_addr_t *fi_addr, uint64_t flags,
              void *) {
    return guarded([&] { return av_of(f)->insert(addr, count, fi_addr, flags); });
}
int op_insertsvc(fid_av *f, const char *node, const char *service, fi_addr_t *fi_addr,
                 uint64_t flags, void *) {
    return guarded([&] { return av_of(f)->insertsvc(node, service, fi_addr, flags); });
}
int op_insertsym(fid_av *, const char *, size_t, const char *, size_t, fi_addr_t *, uint64_t,
                 void *) {
    SN_REJECT(-FI_ENOSYS, FI_LOG_AV, "fi_av_insertsym is not supported\n");
}
int op_remove(fid_av *f, fi_addr_t *fi_addr, size_t count, uint64_t flags) {
    return guarded([&] { return av_of(f)->remove(fi_addr, count, flags); });
}
int op_lookup(fid_av *f, fi_addr_t fi_addr, void *addr, size_t *addrlen) {
    return av_of(f)->lookup(fi_addr, addr, addrlen);
}
const char *op_straddr(fid_av *f, const void *addr, char *buf, size_t *len) {
    return av_of(f)->straddr(addr, buf, len);
}
int op_av_set(fid_av *f, fi_av_set_attr *attr, fid_av_set **set, void *context) {
    Av *av = av_of(f);
    if (!av->sets_allowed())
        SN_REJECT(-FI_ENOSYS, FI_LOG_AV, "AV sets (collectives) are not supported\n");
    return guarded([&] { return AvSet::open(*av, attr, set, context); });
}
#if SOFTNIC_HAS_AV_AUTH_KEY
int op_insert_auth_key(fid_av *f, const void *key, size_t size, fi_addr_t *fi_addr,
                       uint64_t flags) {
    return guarded([&] { return av_of(f)->insert_auth_key(key, size, fi_addr, flags); });
}
int op_lookup_auth_key(fid_av *f, fi_addr_t a, void *key, size_t *size) {
    return av_of(f)->lookup_auth_key(a, key, size);
}
int op_set_user_id(fid_av *f, fi_addr_t a, fi_addr_t user_id, uint64_t flags) {
    return av_of(f)->set_user_id(a, user_id, flags);
}
#endif

}  // namespace

// Filled by name: libfabric 1.20 appended the authorization-key and user-id operations.
fi_ops_av make_av_ops() {
    fi_ops_av o{};
    o.size = sizeof(o);
    o.insert = op_insert;
    o.insertsvc = op_insertsvc;
    o.insertsym = op_insertsym;
    o.remove = op_remove;
    o.lookup = op_lookup;
    o.straddr = op_straddr;
    o.av_set = op_av_set;
#if SOFTNIC_HAS_AV_AUTH_KEY
    o.insert_auth_key = op_insert_auth_key;
    o.lookup_auth_key = op_lookup_auth_key;
    o.set_user_id = op_set_user_id;
#endif
    return o;
}

fi_ops_av av_ops = make_av_ops();

fi_ops av_fid_ops = make_fid_ops(av_close, fid_no_bind, fid_no_control, fid_no_ops_open);

int av_close(fid *f) {
    Av *av = owner_of_fid<Av, fid_av>(f);
    if (av->refs().busy()) SN_REJECT(-FI_EBUSY, FI_LOG_AV, "AV still bound to an endpoint\n");
    delete av;
    return 0;
}

int Av::check_attr(const fi_av_attr &attr) {
    const int type = raw_enum(attr.type);
    if (type != FI_AV_UNSPEC && type != FI_AV_MAP && type != FI_AV_TABLE)
        SN_REJECT(-FI_EINVAL, FI_LOG_AV, "invalid AV type %d\n", type);
    if (attr.flags & FI_EVENT) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "FI_EVENT is not supported\n");
    if ((attr.flags & FI_READ) && !attr.name)
        SN_REJECT(-FI_EINVAL, FI_LOG_AV, "FI_READ opens a named AV: give attr.name\n");
    if (attr.flags & ~(FI_SYMMETRIC | FI_AV_USER_ID | FI_READ))
        SN_REJECT(-FI_EINVAL, FI_LOG_AV, "unsupported AV flags 0x%lx\n", attr.flags);
    if (attr.rx_ctx_bits < 0 || attr.rx_ctx_bits > 4)
        SN_REJECT(-FI_EINVAL, FI_LOG_AV, "rx_ctx_bits %d outside 0..4\n", attr.rx_ctx_bits);
    return 0;
}

Av::Av(const fi_av_attr &attr, const AvAddressing &addressing, void *context)
    : addressing_(addressing),
      flags_(attr.flags),
      rx_ctx_bits_(attr.rx_ctx_bits),
      chunks_(new std::unique_ptr<Entry[]>[kMaxChunks]) {
    handle_.owner = this;
    handle_.fid.fid.fclass = FI_CLASS_AV;
    handle_.fid.fid.context = context;
    handle_.fid.ops = &av_ops;
}

Av::~Av() = default;

int Av::init(const fi_av_attr &attr) {
    if (!attr.name) return 0;
    SharedAvTable *t = nullptr;
    read_only_ = attr.flags & FI_READ;
    int ret = read_only_ ? SharedAvTable::open(attr.name, addressing_.addrlen, &t)
                         : SharedAvTable::create(attr.name, addressing_.addrlen,
                                                 std::max<size_t>(attr.count, 65536), &t);
    if (ret) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "named AV %s: %s\n", attr.name, strerror(-ret));
    shared_.reset(t);
    if (read_only_) {
        // The creator may insert after we open (fabtests' fi_rdm_shared_av does): every
        // slot's fi_addr is its index, so the map covers the whole table from the start.
        sync_shared();
        map_.resize(t->capacity());
        for (size_t i = 0; i < map_.size(); i++)
            map_[i] = i;
    }
    return 0;
}

void Av::place_at(size_t i, const void *addr) {
    while (i >= capacity_.load()) {
        size_t c = capacity_.load() / kChunk;
        chunks_[c].reset(new Entry[kChunk]);
        capacity_.store((c + 1) * kChunk, std::memory_order_release);
    }
    Entry &e = slot(i);
    std::memcpy(e.addr.data(), addr, addressing_.addrlen);
    e.key = addressing_.key(addr);
    e.refs = 1;
    by_key_[e.key] = i;
    generation_.fetch_add(1, std::memory_order_release);
    next_ = std::max(next_, i + 1);
}

void Av::sync_shared() {
    std::lock_guard<std::mutex> g(lock_);
    std::array<uint8_t, kMaxAddrLen> a{};
    for (size_t n = shared_->published(); synced_ < n && synced_ < shared_->capacity(); synced_++)
        if (shared_->read(synced_, a.data())) place_at(synced_, a.data());
}

fi_addr_t Av::base_index(fi_addr_t a) const {
    return rx_ctx_bits_ ? (a & ((1ULL << (64 - rx_ctx_bits_)) - 1)) : a;
}

unsigned Av::rx_index(fi_addr_t a) const {
    return rx_ctx_bits_ ? static_cast<unsigned>(a >> (64 - rx_ctx_bits_)) : 0;
}

Av::Entry *Av::entry_general(fi_addr_t fi_addr) const {
    size_t i = base_index(fi_addr);
    if (read_only_ && fi_addr != FI_ADDR_UNSPEC && i >= synced_)
        const_cast<Av *>(this)->sync_shared();  // inserted by the creator since we looked
    if (fi_addr == FI_ADDR_UNSPEC || i >= capacity_.load(std::memory_order_acquire)) return nullptr;
    Entry &e = slot(i);
    return e.refs ? &e : nullptr;
}

void Av::forget_peer(void *peer) {
    std::lock_guard<std::mutex> g(lock_);
    for (size_t i = 0; i < next_; i++) {
        void *expected = peer;
        slot(i).peer_cache.compare_exchange_strong(expected, nullptr);
    }
}

fi_addr_t Av::reverse(uint64_t key) const {
    std::lock_guard<std::mutex> g(lock_);
    auto it = by_key_.find(key);
    if (it == by_key_.end()) return FI_ADDR_NOTAVAIL;
    const Entry &e = slot(it->second);
    return e.user_id != FI_ADDR_NOTAVAIL ? e.user_id : it->second;
}

fi_addr_t Av::insert_one(const void *addr, fi_addr_t user_id) {
    uint64_t key = addressing_.key(addr);
    auto it = by_key_.find(key);
    if (it != by_key_.end()) {  // already present: same index, one more reference
        slot(it->second).refs++;
        return it->second;
    }
    size_t i;
    if (!free_.empty()) {
        i = free_.top();
        free_.pop();
    } else {
        i = next_++;
        if (i / kChunk >= kMaxChunks) return FI_ADDR_NOTAVAIL;
        if (i >= capacity_.load()) {
            chunks_[i / kChunk].reset(new Entry[kChunk]);
            capacity_.store((i / kChunk + 1) * kChunk, std::memory_order_release);
        }
    }
    Entry &e = slot(i);
    std::memset(e.addr.data(), 0, e.addr.size());
    std::memcpy(e.addr.data(), addr, addressing_.addrlen);
    e.key = key;
    e.user_id = user_id;
    e.peer_cache.store(nullptr);
    e.refs = 1;
    by_key_[key] = i;
    generation_.fetch_add(1, std::memory_order_release);
    if (shared_) {
        if (i >= shared_->capacity()) return FI_ADDR_NOTAVAIL;
        shared_->publish(i, addr);
    }
    return i;
}

int Av::check_insert_flags(uint64_t flags, const fi_addr_t *fi_addr) const {
    if (flags & ~(FI_MORE | FI_AV_USER_ID | kAuthKeyFlag))
        SN_REJECT(-FI_EINVAL, FI_LOG_AV, "unsupported insert flags 0x%lx\n", flags);
    bool user_ids = flags & FI_AV_USER_ID, keyed = flags & kAuthKeyFlag;
    if ((user_ids || keyed) && !fi_addr)
        SN_REJECT(-FI_EINVAL, FI_LOG_AV, "FI_AV_USER_ID and FI_AUTH_KEY need fi_addr\n");
    if (user_ids && symmetric())
        SN_REJECT(-FI_EINVAL, FI_LOG_AV, "FI_AV_USER_ID cannot be used with FI_SYMMETRIC\n");
    if (user_ids && (flags_ & FI_AV_USER_ID))
        SN_REJECT(-FI_EINVAL, FI_LOG_AV, "AV already assigns user ids\n");
    if (keyed && user_ids)
        SN_REJECT(-FI_EINVAL, FI_LOG_AV, "FI_AUTH_KEY and FI_AV_USER_ID do not go together\n");
    if (keyed != auth_key_mode())
        SN_REJECT(-FI_EINVAL, FI_LOG_AV, "%s\n",
                  keyed ? "FI_AUTH_KEY needs a domain opened with FI_AV_AUTH_KEY"
                        : "an AV of a FI_AV_AUTH_KEY domain takes addresses with FI_AUTH_KEY");
    if (read_only_) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "AV was opened FI_READ (read-only)\n");
    return 0;
}

int Av::insert(const void *addr, size_t count, fi_addr_t *fi_addr, uint64_t flags) {
    if (count && !addr) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "NULL address array\n");
    if (int ret = check_insert_flags(flags, fi_addr)) return ret;
    const bool user_ids = flags & FI_AV_USER_ID, keyed = flags & kAuthKeyFlag;
    std::lock_guard<std::mutex> g(lock_);
    int inserted = 0;
    auto *bytes = static_cast<const uint8_t *>(addr);
    for (size_t n = 0; n < count; n++) {
        // Widened into a zeroed buffer: the provider reads its full address struct, and a
        // caller's address may be shorter (cxi's 4-byte form for applications before 1.20).
        std::array<uint8_t, kMaxAddrLen> a{};
        std::memcpy(a.data(), bytes + n * addressing_.addrlen, addressing_.addrlen);
        fi_addr_t id = user_ids ? fi_addr[n] : FI_ADDR_NOTAVAIL;
        bool ok = addressing_.valid(a.data()) && (!keyed || under_auth_key(fi_addr[n], a.data()));
        fi_addr_t r = ok ? insert_one(a.data(), id) : FI_ADDR_NOTAVAIL;
        if (r == FI_ADDR_NOTAVAIL)
            SN_WARN(FI_LOG_AV, "address %zu is invalid\n", n);
        else
            inserted++;
        if (fi_addr) fi_addr[n] = r;
    }
    return inserted;
}

int Av::insertsvc(const char *node, const char *service, fi_addr_t *fi_addr, uint64_t flags) {
    if (!node || !service) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "node and service are required\n");
    std::array<uint8_t, kMaxAddrLen> a{};
    int ret = addressing_.from_service(node, service, a.data());
    if (ret) return ret;
    return insert(a.data(), 1, fi_addr, flags);
}

int Av::remove(fi_addr_t *fi_addr, size_t count, uint64_t flags) {
    if (count && !fi_addr) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "NULL fi_addr array\n");
    if (flags == kAuthKeyFlag) return remove_auth_keys(fi_addr, count);
    if (flags) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "remove flags must be 0 or FI_AUTH_KEY\n");
    if (read_only_) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "AV was opened FI_READ (read-only)\n");
    std::lock_guard<std::mutex> g(lock_);
    for (size_t n = 0; n < count; n++) {
        size_t i = base_index(fi_addr[n]);
        if (i >= next_ || !slot(i).refs)
            SN_REJECT(-FI_EINVAL, FI_LOG_AV, "fi_addr %lu is not in the AV\n", fi_addr[n]);
    }
    for (size_t n = 0; n < count; n++) {
        size_t i = base_index(fi_addr[n]);
        Entry &e = slot(i);
        if (--e.refs == 0) {
            generation_.fetch_add(1, std::memory_order_release);
            by_key_.erase(e.key);
            free_.push(i);
            if (shared_) shared_->publish(i, nullptr);
        }
    }
    return 0;
}

int Av::lookup(fi_addr_t fi_addr, void *addr, size_t *addrlen) {
    if (!addrlen) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "NULL addrlen\n");
    Entry *e = entry(fi_addr);
    if (!e) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "fi_addr %lu is not in the AV\n", fi_addr);
    size_t n = std::min(*addrlen, addressing_.addrlen);
    if (addr && n) std::memcpy(addr, e->addr.data(), n);
    size_t need = addressing_.addrlen;
    *addrlen = need;
    return n < need ? -FI_ETOOSMALL : 0;
}

const char *Av::straddr(const void *addr, char *buf, size_t *len) {
    if (!addr || !len) return nullptr;
    std::array<uint8_t, kMaxAddrLen> a{};  // widened, as in insert
    std::memcpy(a.data(), addr, addressing_.addrlen);
    std::string s = addressing_.to_string(a.data());
    size_t need = s.size() + 1;
    if (buf && *len) {
        std::strncpy(buf, s.c_str(), *len - 1);
        buf[*len - 1] = '\0';
    }
    *len = need;
    return buf;
}

}  // namespace softnic

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "usnic/av.hpp"

#include <rdma/fi_ext_usnic.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/eq.hpp"
#include "common/fi_api.hpp"
#include "common/log.hpp"
#include "common/not_supported.hpp"
#include "usnic/addr.hpp"
#include "usnic/domain.hpp"
#include "usnic/route.hpp"

namespace softnic::usnic {
namespace {

uint64_t key_of(const void *a) {
    return addr_key(*static_cast<const sockaddr_in *>(a));
}
bool valid(const void *a) {
    auto *s = static_cast<const sockaddr_in *>(a);
    return s->sin_family == AF_INET && s->sin_addr.s_addr != 0 && s->sin_port != 0;
}
int from_service(const char *node, const char *service, void *out) {
    return resolve(node, service, *static_cast<sockaddr_in *>(out));
}
std::string string_of(const void *a) {
    return to_string(*static_cast<const sockaddr_in *>(a));
}
const AvAddressing kAddressing = {sizeof(sockaddr_in), key_of, valid, from_service, string_of};

int op_insert(fid_av *av, const void *addr, size_t count, fi_addr_t *fi_addr, uint64_t flags,
              void *context) {
    return guarded([&] { return UAv::of(av)->insert_addrs(addr, count, fi_addr, flags, context); });
}
int op_insertsvc(fid_av *av, const char *node, const char *service, fi_addr_t *fi_addr,
                 uint64_t flags, void *context) {
    return guarded(
        [&] { return UAv::of(av)->insert_service(node, service, fi_addr, flags, context); });
}
int op_insertsym(fid_av *, const char *, size_t, const char *, size_t, fi_addr_t *, uint64_t,
                 void *) {
    SN_REJECT(-FI_ENOSYS, FI_LOG_AV, "fi_av_insertsym is not supported\n");
}
int op_remove(fid_av *av, fi_addr_t *fi_addr, size_t count, uint64_t flags) {
    return guarded([&] { return UAv::of(av)->remove_addrs(fi_addr, count, flags); });
}
int op_lookup(fid_av *av, fi_addr_t fi_addr, void *addr, size_t *addrlen) {
    return guarded([&] { return UAv::of(av)->lookup_addr(fi_addr, addr, addrlen); });
}
const char *op_straddr(fid_av *av, const void *addr, char *buf, size_t *len) {
    if (!av || !addr || !buf || !len) return nullptr;
    sockaddr_in a{};
    if (!from_user(UAv::of(av)->domain().addr_format(), addr, a)) return nullptr;
    std::string s = to_string(a);
    if (*len) {
        std::strncpy(buf, s.c_str(), *len - 1);
        buf[*len - 1] = '\0';
    }
    *len = s.size() + 1;
    return buf;
}
fi_ops_av make_av_ops() {
    fi_ops_av o{};
    o.size = sizeof(o);
    o.insert = op_insert;
    o.insertsvc = op_insertsvc;
    o.insertsym = op_insertsym;
    o.remove = op_remove;
    o.lookup = op_lookup;
    o.straddr = op_straddr;
    SN_NOT_SUPPORTED(o, av_set);
#if SOFTNIC_HAS_AV_AUTH_KEY  // libfabric 2.x: usnic has neither authorization keys nor user ids
    SN_NOT_SUPPORTED(o, insert_auth_key);
    SN_NOT_SUPPORTED(o, lookup_auth_key);
    SN_NOT_SUPPORTED(o, set_user_id);
#endif
    return o;
}
fi_ops_av uav_ops = make_av_ops();

int get_distance(fid_av *av, void *addr, int *metric) {
    if (!av || !addr || !metric) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "NULL argument\n");
    sockaddr_in a;
    std::memcpy(&a, addr, sizeof(a));  // read as a sockaddr_in, as upstream
    *metric = route_distance(UAv::of(av)->domain().device(), a.sin_addr.s_addr);
    return 0;
}
fi_usnic_ops_av ext_ops = {sizeof(fi_usnic_ops_av), get_distance};

int av_ops_open(fid *, const char *name, uint64_t, void **ops, void *) {
    if (!name || !ops) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "NULL name or ops\n");
    if (std::strcmp(name, FI_USNIC_AV_OPS_1))
        SN_REJECT(-FI_EINVAL, FI_LOG_AV, "unknown AV ops \"%s\"\n", name);
    *ops = &ext_ops;
    return 0;
}
int av_close_op(fid *f) {
    UAv *av = UAv::of(reinterpret_cast<fid_av *>(f));
    if (av->refs().busy()) SN_REJECT(-FI_EBUSY, FI_LOG_AV, "AV still bound to an endpoint\n");
    delete av;
    return 0;
}
int av_bind(fid *f, fid *bfid, uint64_t) {
    return UAv::of(reinterpret_cast<fid_av *>(f))->bind_eq(bfid);
}
fi_ops uav_fid_ops = make_fid_ops(av_close_op, av_bind, fid_no_control, av_ops_open);

fi_av_attr core_attr(const fi_av_attr &a) {
    fi_av_attr c = a;
    c.flags = 0;
    return c;
}

}  // namespace

UAv::UAv(Domain *domain, const fi_av_attr &attr, void *context)
    : Av(core_attr(attr), kAddressing, context), domain_(domain), events_(attr.flags & FI_EVENT) {
    fid()->fid.ops = &uav_fid_ops;
    fid()->ops = &uav_ops;
    domain_->refs().get();
}

UAv::~UAv() {
    if (eq_) eq_->refs().put();
    domain_->refs().put();
}

int UAv::bind_eq(::fid *f) {
    if (!f || f->fclass != FI_CLASS_EQ) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "AVs bind EQs only\n");
    if (eq_) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "the AV already has an EQ\n");
    eq_ = Eq::of(reinterpret_cast<fid_eq *>(f));
    eq_->refs().get();
    return 0;
}

int UAv::insert_one_addr(const sockaddr_in &a, fi_addr_t &out) {
    out = FI_ADDR_NOTAVAIL;
    if (!valid(&a)) return EINVAL;
    if (route_distance(domain_->device(), a.sin_addr.s_addr) < 0) {
        SN_WARN(FI_LOG_AV, "%s is not reachable from %s\n", to_string(a).c_str(),
                domain_->device().name.c_str());
        return EHOSTUNREACH;
    }
    fi_addr_t r = FI_ADDR_NOTAVAIL;
    if (Av::insert(&a, 1, &r, 0) != 1) return EINVAL;
    out = r;
    return 0;
}

void UAv::post_events(void *context, size_t count, const int *errs, int ok) {
    for (size_t i = 0; i < count; i++) {
        if (!errs[i]) continue;
        fi_eq_err_entry e{};
        e.fid = &fid()->fid;
        e.context = context;
        e.data = i;
        e.err = errs[i];
        eq_->post_error(e, nullptr, 0);
    }
    fi_eq_entry done{&fid()->fid, context, static_cast<uint64_t>(ok)};
    eq_->post(FI_AV_COMPLETE, &done, sizeof(done));
}

int UAv::insert_addrs(const void *addr, size_t count, fi_addr_t *fi_addr, uint64_t flags,
                      void *context) {
    if (count && !addr) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "NULL address array\n");
    uint64_t allowed = events_ ? FI_MORE : (FI_MORE | FI_SYNC_ERR);
    if (flags & ~allowed) SN_REJECT(-FI_EBADFLAGS, FI_LOG_AV, "unsupported insert flags\n");
    bool sync_err = flags & FI_SYNC_ERR;
    if (sync_err && !context) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "FI_SYNC_ERR needs an int array\n");
    if (events_ && !eq_) SN_REJECT(-FI_ENOEQ, FI_LOG_AV, "FI_EVENT AV without an EQ\n");
    std::vector<int> errs(count);
    int ok = 0;
    uint32_t fmt = domain_->addr_format();
    for (size_t i = 0; i < count; i++) {
        sockaddr_in a{};
        const void *one = fmt == FI_ADDR_STR
                              ? static_cast<const void *>(static_cast<const char *const *>(addr)[i])
                              : static_cast<const uint8_t *>(addr) + i * sizeof(a);
        fi_addr_t r = FI_ADDR_NOTAVAIL;
        errs[i] = from_user(fmt, one, a) ? insert_one_addr(a, r) : EINVAL;
        if (!errs[i]) ok++;
        if (fi_addr) fi_addr[i] = r;
    }
    if (sync_err) std::memcpy(context, errs.data(), count * sizeof(int));
    if (!events_) return ok;
    post_events(context, count, errs.data(), ok);
    return 0;
}

int UAv::insert_service(const char *node, const char *service, fi_addr_t *fi_addr, uint64_t flags,
                        void *context) {
    if (domain_->addr_format() == FI_ADDR_STR) {
        if (!node || service) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "FI_ADDR_STR: a node only\n");
        const char *list[1] = {node};
        return insert_addrs(list, 1, fi_addr, flags, context);
    }
    if (!node || !service) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "node and service are required\n");
    sockaddr_in a{};
    if (resolve(node, service, a)) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "cannot resolve %s\n", node);
    return insert_addrs(&a, 1, fi_addr, flags, context);
}

int UAv::remove_addrs(fi_addr_t *fi_addr, size_t count, uint64_t flags) {
    if (count && !fi_addr) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "NULL fi_addr array\n");
    if (flags) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "remove flags must be 0\n");
    for (size_t i = 0; i < count; i++) {
        if (fi_addr[i] == FI_ADDR_NOTAVAIL) continue;
        if (entry(fi_addr[i])) Av::remove(&fi_addr[i], 1, 0);
        fi_addr[i] = FI_ADDR_NOTAVAIL;  // as upstream: the handle is gone
    }
    return 0;
}

int UAv::lookup_addr(fi_addr_t fi_addr, void *addr, size_t *addrlen) {
    if (!addrlen) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "NULL addrlen\n");
    const sockaddr_in *a = fi_addr == FI_ADDR_NOTAVAIL ? nullptr : peer(fi_addr);
    if (!a) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "fi_addr %lu is not in the AV\n", fi_addr);
    return to_user(domain_->addr_format(), *a, addr, addrlen);
}

fi_addr_t UAv::reverse_of(const sockaddr_in &a) const {
    return reverse(addr_key(a));
}

int av_open(Domain *domain, fi_av_attr *attr, fid_av **av, void *context) {
    if (!attr || !av) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "NULL attr or av\n");
    if (attr->name || attr->map_addr || (attr->flags & FI_READ))
        SN_REJECT(-FI_ENOSYS, FI_LOG_AV, "shared (named) AVs are not supported\n");
    if (attr->flags & ~uint64_t(FI_EVENT))
        SN_REJECT(-FI_EINVAL, FI_LOG_AV, "AV flags other than FI_EVENT\n");
    if (attr->rx_ctx_bits) SN_REJECT(-FI_EINVAL, FI_LOG_AV, "no receive contexts\n");
    const int type = raw_enum(attr->type);
    if (type != FI_AV_UNSPEC && type != FI_AV_MAP && type != FI_AV_TABLE)
        SN_REJECT(-FI_EINVAL, FI_LOG_AV, "unknown AV type %d\n", type);
    if (attr->type == FI_AV_UNSPEC) attr->type = FI_AV_MAP;
    auto *a = new UAv(domain, *attr, context);
    *av = a->fid();
    return 0;
}

}  // namespace softnic::usnic

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "usnic/pep.hpp"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/eq.hpp"
#include "common/log.hpp"
#include "common/not_supported.hpp"
#include "usnic/addr.hpp"
#include "usnic/caps.hpp"
#include "usnic/fabric.hpp"
#include "usnic/msg_cm.hpp"

namespace softnic::usnic {
namespace {

int pep_close(fid *f) {
    delete owner_of_fid<Pep, fid_pep>(f);
    return 0;
}
int pep_bind(fid *f, fid *bfid, uint64_t flags) {
    return owner_of_fid<Pep, fid_pep>(f)->bind(bfid, flags);
}
int pep_listen(fid_pep *f) {
    return guarded([&] { return Pep::of(f)->listen(); });
}
int pep_setname(fid *f, void *addr, size_t addrlen) {
    return owner_of_fid<Pep, fid_pep>(f)->setname(addr, addrlen);
}
int pep_getname(fid *f, void *addr, size_t *addrlen) {
    return owner_of_fid<Pep, fid_pep>(f)->getname(addr, addrlen);
}
int pep_reject(fid_pep *f, fid_t handle, const void *param, size_t paramlen) {
    return guarded([&] { return Pep::of(f)->reject(handle, param, paramlen); });
}
int pep_getopt(fid *f, int level, int name, void *optval, size_t *optlen) {
    return owner_of_fid<Pep, fid_pep>(f)->getopt(level, name, optval, optlen);
}
int pep_setopt(fid *, int, int, const void *, size_t) {
    SN_REJECT(-FI_ENOPROTOOPT, FI_LOG_EP_CTRL, "passive endpoints have no settable options\n");
}

fi_ops pep_fid_ops = make_fid_ops(pep_close, pep_bind, fid_no_control, fid_no_ops_open);

fi_ops_cm make_cm_ops() {
    fi_ops_cm o{};
    o.size = sizeof(o);
    o.setname = pep_setname;
    o.getname = pep_getname;
    SN_NOT_SUPPORTED(o, getpeer);
    SN_NOT_SUPPORTED(o, connect);
    o.listen = pep_listen;
    SN_NOT_SUPPORTED(o, accept);
    o.reject = pep_reject;
    SN_NOT_SUPPORTED(o, shutdown);
    SN_NOT_SUPPORTED(o, join);
    return o;
}
fi_ops_ep make_ep_ops() {
    fi_ops_ep o{};
    o.size = sizeof(o);
    SN_NOT_SUPPORTED(o, cancel);
    o.getopt = pep_getopt;
    o.setopt = pep_setopt;
    SN_NOT_SUPPORTED(o, tx_ctx);
    SN_NOT_SUPPORTED(o, rx_ctx);
    SN_NOT_SUPPORTED(o, rx_size_left);
    SN_NOT_SUPPORTED(o, tx_size_left);
    return o;
}
fi_ops_cm pep_cm_ops = make_cm_ops();

fi_ops_ep pep_ep_ops = make_ep_ops();

// Replaces an fi_info address (malloc'ed, as fi_freeinfo frees it) with `a`.
bool put_addr(uint32_t format, const sockaddr_in &a, void *&addr, size_t &addrlen) {
    free(addr);
    addr = nullptr;
    addrlen = 0;
    uint8_t tmp[kAddrStrMax + 1];
    size_t len = sizeof(tmp);
    if (to_user(format, a, tmp, &len) != 0 || !(addr = malloc(len))) return false;
    std::memcpy(addr, tmp, len);
    addrlen = len;
    return true;
}

}  // namespace

Pep::Pep(Fabric *fabric, const fi_info &info, void *context)
    : fabric_(fabric), info_(fi_dupinfo(&info)) {
    if (!info_) throw std::bad_alloc();
    handle_.owner = this;
    handle_.fid.fid.fclass = FI_CLASS_PEP;
    handle_.fid.fid.context = context;
    handle_.fid.fid.ops = &pep_fid_ops;
    handle_.fid.ops = &pep_ep_ops;
    handle_.fid.cm = &pep_cm_ops;
    addr_.sin_family = AF_INET;
    addr_.sin_addr.s_addr = fabric->device().ip_be;
    sockaddr_in src{};
    if (info.src_addr && from_user(info.addr_format, info.src_addr, src))
        addr_.sin_port = src.sin_port;
    fabric_->refs().get();
}

Pep::~Pep() {
    if (fd_ >= 0) {
        fabric_->poller().remove(fd_);
        close(fd_);
    }
    for (ConnReq *req : reading_) {
        fabric_->poller().remove(req->sock);
        delete req;
    }
    if (eq_) eq_->refs().put();
    fi_freeinfo(info_);
    fabric_->refs().put();
}

int Pep::bind(::fid *f, uint64_t) {
    if (!f || f->fclass != FI_CLASS_EQ)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "passive endpoints bind an EQ\n");
    if (eq_) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "an EQ is already bound\n");
    eq_ = Eq::of(reinterpret_cast<fid_eq *>(f));
    eq_->refs().get();
    return 0;
}

int Pep::setname(void *addr, size_t addrlen) {
    (void)addrlen;
    if (listening_) SN_REJECT(-FI_EOPBADSTATE, FI_LOG_EP_CTRL, "setname before fi_listen\n");
    sockaddr_in a{};
    if (!from_user(info_->addr_format, addr, a))
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "bad address\n");
    if (a.sin_addr.s_addr != fabric_->device().ip_be)
        SN_REJECT(-FI_EADDRNOTAVAIL, FI_LOG_EP_CTRL, "not the device's address\n");
    addr_ = a;
    return 0;
}

int Pep::getname(void *addr, size_t *addrlen) {
    if (!addrlen) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "NULL addrlen\n");
    return to_user(info_->addr_format, addr_, addr, addrlen);
}

int Pep::getopt(int level, int name, void *optval, size_t *optlen) {
    if (!optval || !optlen) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "NULL option buffer\n");
    if (level != FI_OPT_ENDPOINT || name != FI_OPT_CM_DATA_SIZE)
        SN_REJECT(-FI_ENOPROTOOPT, FI_LOG_EP_CTRL, "option %d/%d not supported\n", level, name);
    if (*optlen < sizeof(size_t))
        SN_REJECT(-FI_ETOOSMALL, FI_LOG_EP_CTRL, "option buffer too small\n");
    *static_cast<size_t *>(optval) = kCmDataMax;
    *optlen = sizeof(size_t);
    return 0;
}

int Pep::listen() {
    if (listening_) SN_REJECT(-FI_EOPBADSTATE, FI_LOG_EP_CTRL, "already listening\n");
    if (!eq_) SN_REJECT(-FI_ENOEQ, FI_LOG_EP_CTRL, "bind an EQ before fi_listen\n");
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0) return -errno;
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(s, reinterpret_cast<sockaddr *>(&addr_), sizeof(addr_)) || ::listen(s, 10)) {
        int err = errno;
        close(s);
        SN_REJECT(-err, FI_LOG_EP_CTRL, "listen on %s: %s\n", to_string(addr_).c_str(),
                  strerror(err));
    }
    socklen_t len = sizeof(addr_);
    getsockname(s, reinterpret_cast<sockaddr *>(&addr_), &len);
    fd_ = s;
    listening_ = true;
    fabric_->poller().add(fd_, POLLIN, [this](short) { on_listen_ready(); });
    return 0;
}

void Pep::on_listen_ready() {
    int s = accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (s < 0) return;
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    auto *req = new ConnReq;
    req->fid_.fclass = FI_CLASS_CONNREQ;
    req->sock = s;
    req->fabric = fabric_;
    socklen_t len = sizeof(req->local);
    getsockname(s, reinterpret_cast<sockaddr *>(&req->local), &len);
    reading_.push_back(req);
    fabric_->poller().add(s, POLLIN, [this, req](short) { on_request_bytes(req); });
}

void Pep::on_request_bytes(ConnReq *req) {
    int r = read_cm_msg(req->sock, req->in);
    if (r == 0) return;
    fabric_->poller().remove(req->sock);
    reading_.erase(std::remove(reading_.begin(), reading_.end(), req), reading_.end());
    if (r < 0) {
        SN_WARN(FI_LOG_EP_CTRL, "dropped a malformed connection request\n");
        delete req;
        return;
    }
    CmMsg m;
    std::memcpy(&m, req->in.data(), sizeof(m));
    req->peer.sin_family = AF_INET;
    req->peer.sin_addr.s_addr = m.ip_be;
    req->peer.sin_port = m.port_be;
    fi_info *info = fi_dupinfo(info_);
    // src: the address the request came in on (the passive endpoint may have been
    // opened without one); dest: the client's data address.
    if (!info || !put_addr(info->addr_format, req->local, info->src_addr, info->src_addrlen) ||
        !put_addr(info->addr_format, req->peer, info->dest_addr, info->dest_addrlen)) {
        fi_freeinfo(info);
        delete req;
        return;
    }
    info->handle = &req->fid_;
    size_t datalen = ntohl(m.datalen);
    uint8_t buf[sizeof(fi_eq_cm_entry) + kCmDataMax];
    fi_eq_cm_entry e{};
    e.fid = &handle_.fid.fid;
    e.info = info;
    std::memcpy(buf, &e, sizeof(e));
    if (datalen) std::memcpy(buf + sizeof(e), req->in.data() + sizeof(CmMsg), datalen);
    req->in.clear();
    if (!eq_->post(FI_CONNREQ, buf, sizeof(e) + datalen)) {
        fi_freeinfo(info);
        delete req;
    }
}

int Pep::reject(fid_t handle, const void *param, size_t paramlen) {
    if (!handle || handle->fclass != FI_CLASS_CONNREQ)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "reject takes the FI_CONNREQ's handle\n");
    if (paramlen > kCmDataMax)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "private data above 256 bytes\n");
    std::unique_ptr<ConnReq> req = adopt_connreq(handle);
    if (!req) SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "connection request already answered\n");
    CmMsg m{};
    m.magic = htonl(kCmMagic);
    m.ip_be = addr_.sin_addr.s_addr;
    m.result = static_cast<int32_t>(htonl(static_cast<uint32_t>(-FI_ECONNREFUSED)));
    m.datalen = htonl(static_cast<uint32_t>(paramlen));
    write_cm_msg(req->sock, m, param, param ? paramlen : 0);
    return 0;
}

int pep_open(Fabric *fabric, fi_info *info, fid_pep **pep, void *context) {
    if (!info || !pep || !info->ep_attr)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "NULL info or pep\n");
    if (info->ep_attr->type != FI_EP_MSG)
        SN_REJECT(-FI_ENODEV, FI_LOG_EP_CTRL, "passive endpoints are FI_EP_MSG\n");
    auto *p = new Pep(fabric, *info, context);
    *pep = p->fid();
    return 0;
}

}  // namespace softnic::usnic

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "usnic/msg_cm.hpp"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/eq.hpp"
#include "common/log.hpp"
#include "common/not_supported.hpp"
#include "usnic/addr.hpp"
#include "usnic/caps.hpp"
#include "usnic/domain.hpp"
#include "usnic/rudp_ep.hpp"

namespace softnic::usnic {

ConnReq::~ConnReq() {
    if (sock >= 0) close(sock);
}

std::unique_ptr<ConnReq> adopt_connreq(fid *handle) {
    auto *req = reinterpret_cast<ConnReq *>(handle);
    if (req->adopted) return nullptr;
    req->adopted = true;
    return std::unique_ptr<ConnReq>(req);
}

int read_cm_msg(int sock, std::vector<uint8_t> &buf) {
    uint8_t tmp[sizeof(CmMsg) + kCmDataMax];
    size_t want = sizeof(CmMsg);
    if (buf.size() >= sizeof(CmMsg)) {
        CmMsg m;
        std::memcpy(&m, buf.data(), sizeof(m));
        want += ntohl(m.datalen);
    }
    ssize_t n = recv(sock, tmp, want - buf.size(), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return -1;
    if (n > 0) buf.insert(buf.end(), tmp, tmp + n);
    if (buf.size() < sizeof(CmMsg)) return 0;
    CmMsg m;
    std::memcpy(&m, buf.data(), sizeof(m));  // from the network: check before use
    if (ntohl(m.magic) != kCmMagic || ntohl(m.datalen) > kCmDataMax) return -1;
    return buf.size() == sizeof(CmMsg) + ntohl(m.datalen) ? 1 : 0;
}

bool write_cm_msg(int sock, const CmMsg &m, const void *data, size_t len) {
    uint8_t out[sizeof(CmMsg) + kCmDataMax];
    std::memcpy(out, &m, sizeof(m));
    if (len) std::memcpy(out + sizeof(m), data, len);
    size_t total = sizeof(m) + len, done = 0;
    while (done < total) {  // small: the socket's buffer takes it at once
        ssize_t n = ::send(sock, out + done, total - done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) {
            pollfd p{sock, POLLOUT, 0};
            if (::poll(&p, 1, 1000) <= 0) return false;
            continue;
        }
        if (n <= 0) return false;
        done += static_cast<size_t>(n);
    }
    return true;
}

namespace {

CmMsg make_msg(RudpEp &ep, int result, size_t datalen) {
    CmMsg m{};
    m.magic = htonl(kCmMagic);
    m.ip_be = ep.domain().device().ip_be;
    m.port_be = ep.udp_port_be();
    m.result = static_cast<int32_t>(htonl(static_cast<uint32_t>(result)));
    m.datalen = htonl(static_cast<uint32_t>(datalen));
    return m;
}

void post_cm(Eq *eq, uint32_t event, RudpEp &ep, const uint8_t *data, size_t len) {
    uint8_t buf[sizeof(fi_eq_cm_entry) + kCmDataMax];
    fi_eq_cm_entry e{};
    e.fid = &ep.fid()->fid;
    std::memcpy(buf, &e, sizeof(e));
    if (len) std::memcpy(buf + sizeof(e), data, len);
    eq->post(event, buf, sizeof(e) + len);
}

// After FI_CONNECTED: the peer closing its end is our FI_SHUTDOWN. Handlers use the fd
// they were registered for: msg_cm_close may take ep.cm_fd meanwhile (and then waits
// for them in Poller::remove before closing it).
void watch_for_shutdown(RudpEp &ep, int fd) {
    ep.domain().fabric().poller().add(fd, POLLIN, [&ep, fd](short) {
        char b[64];
        ssize_t n = recv(fd, b, sizeof(b), MSG_DONTWAIT);
        if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR))) return;
        ep.domain().fabric().poller().remove(fd);
        if (ep.end_connection()) post_cm(ep.eq(), FI_SHUTDOWN, ep, nullptr, 0);
    });
}

void on_reply(RudpEp &ep, int fd, std::vector<uint8_t> &buf) {
    int r = read_cm_msg(fd, buf);
    if (r == 0) return;
    ep.domain().fabric().poller().remove(fd);
    CmMsg m{};
    if (r > 0) std::memcpy(&m, buf.data(), sizeof(m));
    const uint8_t *data = buf.data() + sizeof(CmMsg);
    size_t len = r > 0 ? ntohl(m.datalen) : 0;
    if (r < 0 || m.result != 0) {
        ep.set_refused();
        int mine = fd;  // ours to close unless msg_cm_close took it already
        if (ep.cm_fd.compare_exchange_strong(mine, -1)) close(fd);
        fi_eq_err_entry e{};
        e.fid = &ep.fid()->fid;
        e.err = FI_ECONNREFUSED;
        ep.eq()->post_error(e, data, len);
        return;
    }
    sockaddr_in peer{};
    peer.sin_family = AF_INET;
    peer.sin_addr.s_addr = m.ip_be;
    peer.sin_port = m.port_be;
    ep.set_connected(peer);
    watch_for_shutdown(ep, fd);
    post_cm(ep.eq(), FI_CONNECTED, ep, data, len);
}

int check_cm_call(RudpEp &ep, size_t paramlen) {
    if (paramlen > kCmDataMax)
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "private data of %zu bytes, at most %zu\n", paramlen,
                  kCmDataMax);
    if (!ep.eq()) SN_REJECT(-FI_ENOEQ, FI_LOG_EP_CTRL, "bind an EQ first\n");
    return ep.enable_once();
}

// A connecting TCP socket, bound to the adopted passive endpoint's address if any; the
// endpoint's name becomes its local address. A socket or -errno.
int open_cm_socket(RudpEp &ep, const sockaddr_in &to) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0) return -errno;
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    const sockaddr_in *mine = ep.adopted_name();
    if (mine && ::bind(s, reinterpret_cast<const sockaddr *>(mine), sizeof(*mine))) {
        int err = errno;
        close(s);
        SN_REJECT(-err, FI_LOG_EP_CTRL, "bind %s: %s\n", to_string(*mine).c_str(), strerror(err));
    }
    if (connect(s, reinterpret_cast<const sockaddr *>(&to), sizeof(to)) && errno != EINPROGRESS) {
        int err = errno;
        close(s);
        SN_REJECT(-err, FI_LOG_EP_CTRL, "connect %s: %s\n", to_string(to).c_str(), strerror(err));
    }
    sockaddr_in name{};
    socklen_t len = sizeof(name);
    getsockname(s, reinterpret_cast<sockaddr *>(&name), &len);
    ep.set_cm_name(name);
    return s;
}

int cm_connect(fid_ep *f, const void *addr, const void *param, size_t paramlen) {
    auto &ep = static_cast<RudpEp &>(*Endpoint::of(f));
    sockaddr_in to{};
    if (!from_user(ep.domain().addr_format(), addr, to))
        SN_REJECT(-FI_EINVAL, FI_LOG_EP_CTRL, "bad address\n");
    if (ep.conn() != RudpEp::Conn::kIdle)
        SN_REJECT(-FI_EISCONN, FI_LOG_EP_CTRL, "endpoint already connecting or connected\n");
    int ret = check_cm_call(ep, paramlen);
    if (ret) return ret;
    int s = open_cm_socket(ep, to);
    if (s < 0) return s;
    if (!ep.start_connecting()) {
        close(s);
        SN_REJECT(-FI_EISCONN, FI_LOG_EP_CTRL, "endpoint already connecting or connected\n");
    }
    ep.cm_fd = s;
    std::vector<uint8_t> data(static_cast<const uint8_t *>(param),
                              static_cast<const uint8_t *>(param) + (param ? paramlen : 0));
    auto buf = std::make_shared<std::vector<uint8_t>>();
    ep.domain().fabric().poller().add(s, POLLOUT, [&ep, s, data, buf](short ev) {
        int err = 0;
        socklen_t l = sizeof(err);
        getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &l);
        if (err || (ev & (POLLERR | POLLHUP)) ||
            !write_cm_msg(s, make_msg(ep, 0, data.size()), data.data(), data.size())) {
            on_reply(ep, s, *buf);  // reads the failure and reports it
            return;
        }
        ep.domain().fabric().poller().add(s, POLLIN,
                                          [&ep, s, buf](short) { on_reply(ep, s, *buf); });
    });
    return 0;
}

int cm_accept(fid_ep *f, const void *param, size_t paramlen) {
    auto &ep = static_cast<RudpEp &>(*Endpoint::of(f));
    if (!ep.has_connreq())
        SN_REJECT(-FI_ENOTCONN, FI_LOG_EP_CTRL, "no connection request to accept\n");
    int ret = check_cm_call(ep, paramlen);
    if (ret) return ret;
    std::unique_ptr<ConnReq> req = ep.take_connreq();
    if (!req) SN_REJECT(-FI_ENOTCONN, FI_LOG_EP_CTRL, "the request was accepted already\n");
    // Connected, and FI_CONNECTED queued, before the reply leaves: the client may send,
    // or connect another endpoint (whose FI_CONNREQ may land on this same EQ), as soon
    // as it reads the reply.
    ep.set_connected(req->peer);
    int fd = req->sock;
    req->sock = -1;
    ep.cm_fd = fd;
    post_cm(ep.eq(), FI_CONNECTED, ep, nullptr, 0);
    if (!write_cm_msg(fd, make_msg(ep, 0, paramlen), param, param ? paramlen : 0)) {
        SN_WARN(FI_LOG_EP_CTRL, "the client went away before the reply\n");
        if (ep.end_connection()) post_cm(ep.eq(), FI_SHUTDOWN, ep, nullptr, 0);
        return 0;
    }
    watch_for_shutdown(ep, fd);
    return 0;
}

// Each connected endpoint gets one FI_SHUTDOWN: here, or earlier from the peer's.
int cm_shutdown(fid_ep *f, uint64_t) {
    auto &ep = static_cast<RudpEp &>(*Endpoint::of(f));
    if (ep.end_connection()) {
        msg_cm_close(ep);  // the peer learns first
        post_cm(ep.eq(), FI_SHUTDOWN, ep, nullptr, 0);
        return 0;
    }
    if (ep.conn() == RudpEp::Conn::kShutdown) return 0;  // the peer shut down first
    SN_REJECT(-FI_ENOTCONN, FI_LOG_EP_CTRL, "endpoint is not connected\n");
}

int cm_getname(fid *f, void *addr, size_t *addrlen) {
    return owner_of_fid<Endpoint, fid_ep>(f)->getname(addr, addrlen);
}

fi_ops_cm make_ops() {
    fi_ops_cm o{};
    o.size = sizeof(o);
    o.getname = cm_getname;
    SN_NOT_SUPPORTED(o, setname);
    SN_NOT_SUPPORTED(o, getpeer);
    o.connect = cm_connect;
    SN_NOT_SUPPORTED(o, listen);
    o.accept = cm_accept;
    SN_NOT_SUPPORTED(o, reject);
    o.shutdown = cm_shutdown;
    SN_NOT_SUPPORTED(o, join);
    return o;
}

}  // namespace

fi_ops_cm ep_cm_ops_msg = make_ops();

void msg_cm_close(RudpEp &ep) {
    Poller &poller = ep.domain().fabric().poller();
    int fd = ep.cm_fd.exchange(-1);
    if (fd < 0) {
        poller.sync();  // a refusal's handler that closed it may still be posting
        return;
    }
    poller.remove(fd);  // waits for a handler of fd that is running
    ::shutdown(fd, SHUT_RDWR);
    close(fd);
}

}  // namespace softnic::usnic

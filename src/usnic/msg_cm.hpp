// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// MSG connection management over TCP (one short-lived exchange, then the TCP
// connection stays open only to tell each side when the other shuts down):
// the client sends a request, the passive side raises FI_CONNREQ, the new endpoint
// accepts or the passive endpoint rejects; both sides then get FI_CONNECTED, and
// FI_SHUTDOWN when the peer shuts down or closes.
#pragma once

#include <netinet/in.h>
#include <rdma/fi_cm.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace softnic::usnic {

class Fabric;
class Pep;
class RudpEp;

// The CM message (24 bytes, network order), followed by up to 256 bytes of private data.
struct CmMsg {
    uint32_t magic;    // kCmMagic
    uint32_t ip_be;    // the sender's device address
    uint16_t port_be;  // the sender's UDP data port
    uint16_t rsvd;
    int32_t result;  // 0: accepted; else -FI_ECONNREFUSED (a reply)
    uint32_t datalen;
    uint32_t rsvd2;
};
static_assert(sizeof(CmMsg) == 24);
constexpr uint32_t kCmMagic = 0x55534e43;  // "USNC"

// A connection request waiting for fi_accept / fi_reject (info->handle).
struct ConnReq {
    fid fid_{};  // first: the application holds &fid_
    int sock = -1;
    sockaddr_in peer{};   // the client's data address
    sockaddr_in local{};  // our end of the TCP connection: the accepting endpoint's name
    Fabric *fabric = nullptr;
    std::vector<uint8_t> in;  // bytes of the request read so far
    bool adopted = false;
    ~ConnReq();
};

std::unique_ptr<ConnReq> adopt_connreq(fid *handle);
// Read what arrived of a request or reply on `sock` into `buf`; 1 when whole, 0 when
// more is to come, -1 on a closed or malformed connection.
int read_cm_msg(int sock, std::vector<uint8_t> &buf);
bool write_cm_msg(int sock, const CmMsg &m, const void *data, size_t len);
void msg_cm_close(RudpEp &ep);

extern fi_ops_cm ep_cm_ops_msg;

}  // namespace softnic::usnic

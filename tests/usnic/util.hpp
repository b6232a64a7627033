// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Shared helpers of the usnic conformance suite: return-code assertions, an
// RAII holder for fids, getinfo wrappers restricted to the usnic provider,
// IPv4 helpers and payload patterns.
//
// Only the public libfabric API and <rdma/fi_ext_usnic.h> are used.
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <rdma/fabric.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_ext_usnic.h>
#include "fid_holder.hpp"
#include "rc_assert.hpp"  // EXPECT_RC, ASSERT_RC, rc_str

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fid_holder.hpp"

namespace usnict {

// API version asked of fi_getinfo unless a test is about old versions.
inline constexpr uint32_t kApi = FI_VERSION(1, 15);
inline constexpr size_t kPrefix = 64;        // FI_MSG_PREFIX size of DGRAM endpoints
inline constexpr size_t kDgramInject = 950;  // DGRAM tx_attr->inject_size
inline constexpr size_t kDgramSize = 1023;   // DGRAM tx/rx queue depth
inline constexpr size_t kRudpInject = 64;    // MSG/RDM tx_attr->inject_size
inline constexpr size_t kCmDataMax = 256;    // FI_OPT_CM_DATA_SIZE
inline constexpr size_t kUdpMaxPayload = 65507;
inline constexpr uint32_t kLoopback = 0x7f000001;  // 127.0.0.1, host order
inline constexpr int kTimeoutMs = 10000;           // liveness bound of every wait
inline constexpr char kUnreachableIp[] = "10.255.255.1";

using softnic_test::rc_str;  // tests/common/rc.hpp

// Closes the object on destruction (tests/common/fid_holder.hpp).
struct CloseReport {
    void operator()(int rc) const { ADD_FAILURE() << "fi_close in destructor: " << rc_str(rc); }
};
template <typename T>
using Fid = testutil::Fid<T, CloseReport>;

// Runs an open call with a Fid's output slot and forgets the pointer unless
// the call succeeded (a provider may leave garbage behind on failure).
#define USNICT_OPEN(holder, call_with_OUT)                 \
    [&]() -> long {                                        \
        auto *OUT = (holder).out();                        \
        const long rc_ = static_cast<long>(call_with_OUT); \
        (holder).drop_on_error(rc_);                       \
        return rc_;                                        \
    }()

struct InfoFree {
    void operator()(fi_info *i) const { fi_freeinfo(i); }
};
using InfoPtr = std::unique_ptr<fi_info, InfoFree>;

// Hints naming the usnic provider with the given endpoint type and mode; the
// MR mode says FI_MR_LOCAL | FI_MR_ALLOCATED (what the provider requires).
InfoPtr usnic_hints(fi_ep_type type = FI_EP_UNSPEC, uint64_t mode = FI_LOCAL_MR);

bool is_usnic(const fi_info *i);

struct GetinfoResult {
    long rc = 0;
    InfoPtr list;
    std::vector<const fi_info *> usnic;  // the usnic entries of list, in order
};
GetinfoResult getinfo(const fi_info *hints, uint32_t api = kApi, const char *node = nullptr,
                      const char *service = nullptr, uint64_t flags = 0);

// IPv4 helpers (ports and addresses in host order).
sockaddr_in make_sin(uint32_t ip, uint16_t port);
sockaddr_in make_sin(const char *ip, uint16_t port);
uint16_t port_of(const sockaddr_in &sin);
uint32_t ip_of(const sockaddr_in &sin);
std::string sin_str(const sockaddr_in &sin);

// Interface properties read from the kernel.
int iface_mtu(const char *ifname);
// Largest DGRAM payload on an interface: MTU - 28, but never above what a UDP
// datagram can carry.
size_t dgram_max_payload(const char *ifname);

// Deterministic payloads: byte `off` of message `msg`.
inline uint8_t pattern(size_t msg, size_t off) {
    return static_cast<uint8_t>((msg * 131 + off * 7 + (off >> 8)) & 0xff);
}
void fill_pattern(void *buf, size_t len, size_t msg);
// Returns the first offset that differs from the pattern, or len.
size_t check_pattern(const void *buf, size_t len, size_t msg);

// A liveness bound for loops that wait for the provider.
class Deadline {
  public:
    explicit Deadline(int ms = kTimeoutMs)
        : end_(std::chrono::steady_clock::now() + std::chrono::milliseconds(ms)) {}
    bool expired() const { return std::chrono::steady_clock::now() >= end_; }

  private:
    std::chrono::steady_clock::time_point end_;
};

// An AF_INET/SOCK_DGRAM socket bound to 127.0.0.1 on an ephemeral port.
class UdpSocket {
  public:
    UdpSocket();
    ~UdpSocket();
    UdpSocket(const UdpSocket &) = delete;
    UdpSocket &operator=(const UdpSocket &) = delete;
    int fd() const { return fd_; }
    sockaddr_in addr() const { return addr_; }
    ssize_t send_to(const sockaddr_in &to, const void *buf, size_t len) const;
    // Waits (bounded) for one datagram; returns its length or -1.
    ssize_t recv_from(void *buf, size_t len, sockaddr_in *from) const;

  private:
    int fd_ = -1;
    sockaddr_in addr_{};
};

}  // namespace usnict

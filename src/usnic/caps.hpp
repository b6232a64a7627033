// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What the usnic provider offers (fi_usnic(7), upstream's values).
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_ext_usnic.h>

#include <cstddef>
#include <cstdint>

#include "common/fi_api.hpp"

namespace softnic::usnic {

constexpr uint32_t kProviderVersion = FI_VERSION(1, 0);
constexpr uint64_t kCaps = FI_MSG | FI_SOURCE | FI_SEND | FI_RECV;
// fi_getinfo(3) splits caps by direction: FI_SOURCE and FI_RECV are receive caps.
constexpr uint64_t kTxCaps = FI_MSG | FI_SEND;
constexpr uint64_t kRxCaps = FI_MSG | FI_RECV | FI_SOURCE;
constexpr uint64_t kDomainCaps = FI_LOCAL_COMM | FI_REMOTE_COMM;
constexpr uint64_t kModeBits = kLocalMrMode | FI_MSG_PREFIX;
constexpr size_t kPrefixSize = 64;       // FI_MSG_PREFIX bytes in front of DGRAM data
constexpr size_t kPrefixHdrOffset = 22;  // where the VIC writes Ethernet+IP+UDP in it
constexpr size_t kFrameHdr = 42;         // Ethernet 14 + IPv4 20 + UDP 8
constexpr size_t kMaxUdpPayload = 65507;
constexpr unsigned kCredits = 4095;   // descriptors per queue
constexpr size_t kDgramInject = 950;  // 992 - 42: sends up to this are copied
constexpr size_t kDgramQueue = 1023;  // 4095 / 4
constexpr size_t kMaxIov = 8;
constexpr size_t kRudpInject = 64;
constexpr size_t kMsgQueue = 512, kRdmQueue = 128;
constexpr size_t kRudpMaxMsg = UINT32_MAX;
constexpr size_t kMrCount = 65535;
constexpr size_t kMaxCqSize = 65535;
constexpr size_t kCmDataMax = 256;

// DGRAM message size limit for an interface MTU. Limits count the payload only, as
// fi_getinfo(3) says of FI_MSG_PREFIX (upstream added the prefix; fi_pingpong and
// Open MPI work either way with this one), while lengths passed in include it.
inline size_t dgram_max_msg(unsigned mtu) {
    size_t payload = mtu > 28 ? mtu - 28 : 0;
    return payload > kMaxUdpPayload ? kMaxUdpPayload : payload;
}

}  // namespace softnic::usnic

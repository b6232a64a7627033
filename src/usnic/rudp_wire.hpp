// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The MSG/RDM message header, carried in each packet of the shared reliable UDP layer
// (src/transport/udp), which numbers, acknowledges, retransmits and orders them.
// Little-endian; everything in it is checked on arrival.
#pragma once

#include <cstdint>

namespace softnic::usnic {

enum class RudpType : uint8_t { kData = 1 };

struct RudpHdr {
    uint8_t type;     // RudpType
    uint8_t version;  // 1
    uint16_t rsvd;
    uint32_t msg_len;  // bytes of the whole message
    uint32_t offset;   // where this packet's payload goes in it
    uint32_t rsvd2;
};
static_assert(sizeof(RudpHdr) == 16);

constexpr uint8_t kRudpVersion = 1;

}  // namespace softnic::usnic

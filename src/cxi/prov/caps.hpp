// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What the software Cassini offers, in libfabric terms (spec §0-§1).
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_cxi_ext.h>

#include <cstdint>

namespace softnic::cxi {

constexpr uint32_t kProviderVersion = FI_VERSION(0, 2);
constexpr size_t kInjectSize = 192;
constexpr size_t kMaxMsgSize = 0xFFFFFFFFULL;
constexpr uint64_t kTagBits = 48;
constexpr uint64_t kTagMask = (1ULL << kTagBits) - 1;
constexpr uint64_t kMemTagFormat = 0x0000AAAAAAAAAAAAULL;
// FI_PROTO_CXI_RNR endpoints: 40-bit tags, no inject, no send-after-send order.
constexpr uint64_t kRnrTagMask = (1ULL << 40) - 1;
constexpr uint64_t kRnrMemTagFormat = 0x000000AAAAAAAAAAULL;
constexpr uint64_t kRnrDefaultMaxRetryUs = 500000;
constexpr size_t kTxSizeMax = 16384;
constexpr size_t kRxSizeMax = 15360;
constexpr size_t kMaxEpAuthKeys = 4;  // FI_AV_AUTH_KEY: VNIs one endpoint listens on
constexpr size_t kMaxContexts = 16;   // scalable endpoint: one PID per context pair
constexpr size_t kMinMultiRecvMax = (1ULL << 24) - 1;
constexpr uint64_t kOptimizedKeys = 100;  // client keys below this are "optimized" MRs
// Provider-key bits (spec §6.1) and how many MR ids get optimized provider keys.
constexpr uint64_t kProvKey = 1ULL << 63, kProvKeyOptimized = 1ULL << 61;
constexpr uint64_t kProvKeyEvents = 1ULL << 60, kProvKeyCqData = 1ULL << 59;
constexpr uint32_t kOptimizedProvIds = 92;

// Primary capabilities built so far.
constexpr uint64_t kPrimaryCaps = FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_DIRECTED_RECV |
                                  FI_NAMED_RX_CTX | FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE |
                                  FI_REMOTE_READ | FI_REMOTE_WRITE | FI_TRIGGER | FI_COLLECTIVE;
// FI_RMA_EVENT is secondary: asked for, never given unasked.
constexpr uint64_t kSecondaryCaps = FI_SOURCE | FI_SOURCE_ERR | FI_LOCAL_COMM | FI_REMOTE_COMM |
                                    FI_MULTI_RECV | FI_FENCE | FI_SHARED_AV | FI_RMA_EVENT;
constexpr uint64_t kCaps = kPrimaryCaps | kSecondaryCaps;
// Per direction, only what libfabric defines for that direction (LOCAL/REMOTE_COMM and
// FI_SHARED_AV are domain-level; FI_NAMED_RX_CTX belongs to the initiator).
constexpr uint64_t kTxCaps = FI_MSG | FI_TAGGED | FI_SEND | FI_FENCE | FI_NAMED_RX_CTX | FI_RMA |
                             FI_ATOMIC | FI_READ | FI_WRITE | FI_TRIGGER | FI_COLLECTIVE;
constexpr uint64_t kRxCaps = FI_MSG | FI_TAGGED | FI_RECV | FI_DIRECTED_RECV | FI_SOURCE |
                             FI_SOURCE_ERR | FI_MULTI_RECV | FI_RMA | FI_ATOMIC | FI_REMOTE_READ |
                             FI_REMOTE_WRITE | FI_RMA_EVENT | FI_TRIGGER | FI_COLLECTIVE;
constexpr uint64_t kDomainCaps = FI_LOCAL_COMM | FI_REMOTE_COMM | FI_AV_USER_ID;

constexpr uint64_t kCompletionLevels =
    FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | FI_MATCH_COMPLETE;
constexpr uint64_t kTxOpFlags =
    FI_INJECT | FI_COMPLETION | kCompletionLevels | FI_REMOTE_CQ_DATA | FI_MORE | FI_FENCE;
constexpr uint64_t kRxOpFlags = FI_COMPLETION | FI_MULTI_RECV | FI_MORE;
constexpr uint64_t kMsgOrder = FI_ORDER_SAS | FI_ORDER_WAW | FI_ORDER_RMA_WAW | FI_ORDER_RMA_RAR |
                               FI_ORDER_ATOMIC_WAW | FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_RAW |
                               FI_ORDER_ATOMIC_RAR;

constexpr uint64_t kRnrMsgOrder = kMsgOrder & ~FI_ORDER_SAS;

constexpr int kMrModeProvKey = FI_MR_PROV_KEY | FI_MR_ALLOCATED | FI_MR_ENDPOINT;
constexpr int kMrModeClientKey = FI_MR_ALLOCATED | FI_MR_ENDPOINT;

}  // namespace softnic::cxi

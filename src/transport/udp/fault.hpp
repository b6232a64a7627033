// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Fault injection on the send path: drop, duplicate, reorder and delay datagrams on
// purpose, so that applications (and our tests) can exercise their error paths.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace softnic::transport::udp {

struct FaultConfig {
    unsigned drop = 0, dup = 0, reorder = 0, delay = 0;  // percent of datagrams
    unsigned delay_us = 1000;
    uint64_t seed = 0;  // 0: from the clock and PID
    bool any() const { return drop || dup || reorder || delay; }
};

// Parse "drop=5,dup=2,reorder=3,delay=1,delay_us=500,seed=7". False on a bad token.
bool parse_faults(const std::string &spec, FaultConfig &out, std::string &error);

class FaultInjector {
  public:
    explicit FaultInjector(const FaultConfig &c);
    enum class Verdict { kSend, kDrop, kDuplicate, kHold };
    // What to do with the next datagram; kHold: the caller hands it to hold().
    Verdict decide();
    // Keep a copy to send later: after the next datagram (reorder) or after delay_us.
    void hold(const void *to, size_t to_len, const void *buf, size_t len, uint64_t now_ns);
    struct Held {
        std::vector<uint8_t> to, data;
        uint64_t due_ns;  // 0: with the next datagram
    };
    // Datagrams now due; called after a send, so reordered ones follow it.
    void take_due(uint64_t now_ns, std::vector<Held> &out);
    bool holding() const { return !held_.empty(); }
    uint64_t dropped = 0, duplicated = 0, reordered = 0, delayed = 0;

  private:
    unsigned roll();  // 0..99
    FaultConfig c_;
    uint64_t rng_;
    bool pending_delay_ = false;
    std::vector<Held> held_;
};

}  // namespace softnic::transport::udp

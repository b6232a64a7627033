// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The congestion window of one channel, in packets: how many may be unacknowledged at
// once, on top of the receiver's flow-control limit.
//
// Loss is the signal (a receiver's socket that overflows drops datagrams, as a switch
// buffer does): the window halves at most once per window of data when fast retransmit
// finds a loss, falls to kMin on a retransmission timeout, and grows back by one packet
// per window's worth acknowledged (doubling per round trip below the halved mark). Many
// senders toward one receiver thus share its buffer instead of overflowing it together.
// A lone ping-pong has one packet in flight and never meets the window.
#pragma once

#include <algorithm>
#include <cstdint>

namespace softnic::transport::udp {

class CongestionWindow {
  public:
    static constexpr uint32_t kInitial = 16, kMin = 2;

    explicit CongestionWindow(uint32_t max)
        : max_(std::max(max, kMin)), cwnd_(std::min(kInitial, max_)), ssthresh_(max_) {}

    uint32_t packets() const { return cwnd_; }

    // `n` packets newly acknowledged, the lowest unacknowledged now `una`.
    void on_acked(uint64_t n, uint64_t una) {
        if (una < recover_) return;  // still repairing the last loss: hold
        if (cwnd_ < ssthresh_) {
            cwnd_ = uint32_t(std::min<uint64_t>(cwnd_ + n, ssthresh_));
            return;
        }
        credit_ += n;
        while (credit_ >= cwnd_ && cwnd_ < max_) {
            credit_ -= cwnd_;
            cwnd_++;
        }
        if (cwnd_ == max_) credit_ = 0;
    }

    // Fast retransmit found a loss among the packets sent before `next_seq`. Returns
    // whether the window shrank (once per window of data).
    bool on_loss(uint64_t una, uint64_t next_seq) {
        if (una < recover_) return false;
        ssthresh_ = std::max(cwnd_ / 2, kMin);
        cwnd_ = ssthresh_;
        credit_ = 0;
        recover_ = next_seq;
        return true;
    }

    // The retransmission timer fired; `first`: not already backing off.
    void on_timeout(uint64_t next_seq, bool first) {
        if (first) ssthresh_ = std::max(cwnd_ / 2, kMin);
        cwnd_ = kMin;
        credit_ = 0;
        recover_ = next_seq;
    }

  private:
    uint32_t max_, cwnd_, ssthresh_;
    uint64_t credit_ = 0;   // packets acknowledged toward the next additive step
    uint64_t recover_ = 0;  // no growth or second cut until this sequence is acknowledged
};

}  // namespace softnic::transport::udp

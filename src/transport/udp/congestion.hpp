// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The congestion window of one channel, in packets: how many may be unacknowledged at
// once, on top of the receiver's flow-control limit.
//
// The signal is the receiver's, as an ECN mark is a switch's: when its socket's queue
// runs past half its buffer, or overflows, it marks its next acknowledgement to each peer
// that was sending, and each halves its window at most once per window of data. The
// window grows back by one packet per window's worth acknowledged (doubling per round
// trip below the halved mark). Many senders toward one receiver thus share its buffer
// instead of overflowing it together, while random loss on the wire, which no receiver
// marks, is repaired at full speed (a loss-driven window under 10 % random loss sat at a
// few packets: 1 MiB ping-pongs ten times slower). A lone ping-pong never meets it.
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
        if (una < recover_) return;  // hold at the halved window until that window is acknowledged
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

    // The receiver signalled congestion while the packets before `next_seq` were out.
    // Returns whether the window shrank (once per window of data).
    bool on_congestion(uint64_t una, uint64_t next_seq) {
        if (una < recover_ || una < no_cut_) return false;
        ssthresh_ = std::max(cwnd_ / 2, kMin);
        cwnd_ = ssthresh_;
        credit_ = 0;
        recover_ = next_seq;
        return true;
    }

    // The retransmission timer fired on more than a lone packet; `first`: not already
    // backing off. A receiver that answers nothing for a whole timeout is not keeping up
    // (descheduled, overloaded): the window starts again from its floor, and slow start
    // refills it from the next acknowledgement on, up to half what it was.
    void on_timeout(uint64_t next_seq, bool first) {
        if (first) ssthresh_ = std::max(cwnd_ / 2, kMin);
        cwnd_ = kMin;
        credit_ = 0;
        recover_ = 0;
        no_cut_ = next_seq;  // no mark cuts the same window again
    }

  private:
    uint32_t max_, cwnd_, ssthresh_;
    uint64_t credit_ = 0;   // packets acknowledged toward the next additive step
    uint64_t recover_ = 0;  // no growth or second cut until this sequence is acknowledged
    uint64_t no_cut_ = 0;   // no cut until this sequence is acknowledged (after a timeout)
};

}  // namespace softnic::transport::udp

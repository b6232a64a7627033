// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Completion on acknowledgement, and failure fan-out. Over a reliable network link an
// operation whose packets are all queued is not complete: the link may still resend
// them from the application's buffer. It completes when the peer has acknowledged the
// link's token for its last packet (Link::acked), or fails with everything else bound
// for a peer that went away. Shared memory links acknowledge on queueing, so an
// operation there leaves on the next reap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "transport/transport.hpp"

namespace softnic::transport::msg {

template <class Op>
class AckQueue {
  public:
    // `op` completes once `link` acknowledged `token` (its last_token() after the
    // operation's last packet).
    void wait(Op *op, Link *link, uint64_t token) { q_.push_back(Entry{op, link, token}); }
    void reserve(size_t n) { q_.reserve(n); }  // room for every slot: no allocation later
    bool empty() const { return q_.empty(); }
    size_t size() const { return q_.size(); }

    // Hands each acknowledged operation to done(op), in the order they were queued.
    // `done` may queue more (the entry leaves first).
    template <class Done>
    void reap(Done &&done) {
        for (size_t i = 0; i < q_.size();) {
            const Entry e = q_[i];
            if (!e.link->acked(e.token)) {
                i++;
                continue;
            }
            q_.erase(q_.begin() + long(i));
            done(e.op);
        }
    }

    // `link` failed: each operation waiting on it leaves and goes to failed(op).
    template <class Failed>
    void fail(const Link *link, Failed &&failed) {
        for (size_t i = 0; i < q_.size();) {
            if (q_[i].link != link) {
                i++;
                continue;
            }
            Op *op = q_[i].op;
            q_.erase(q_.begin() + long(i));
            failed(op);
        }
    }
    // `link` failed and the caller completes its operations by other means.
    void drop(const Link *link) {
        fail(link, [](Op *) {});
    }

  private:
    struct Entry {
        Op *op;
        Link *link;
        uint64_t token;
    };
    std::vector<Entry> q_;
};

}  // namespace softnic::transport::msg

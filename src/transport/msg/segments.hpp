// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A message over a link, the part both providers share: cutting it into packets on the
// way out, checking and placing each packet's bytes on the way in, one message at a
// time per link. Each provider frames its own header around these offsets.
#pragma once

#include <sys/uio.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace softnic::transport::msg {

// Whether bytes [off, off + n) lie within `len`: offsets from the wire are untrusted,
// so this is written to be right for any values (no overflowing sum).
inline bool within(size_t off, size_t n, size_t len) {
    return off <= len && n <= len - off;
}

// Cuts bytes [pos, end) into packets of at most `room` bytes and hands each to
// send(offset, bytes, more) until one is refused (the link is full). `pos` moves past
// what was taken; true once it reaches `end`. `more` says another packet follows.
template <class Send>
bool cut(size_t &pos, size_t end, size_t room, Send &&send) {
    while (pos < end) {
        const size_t n = std::min(room, end - pos);
        if (!send(pos, n, pos + n < end)) return false;
        pos += n;
    }
    return true;
}

// Calls piece(address, bytes) for each run of bytes [off, off + n) of a message spread
// over iov[0..count), in order; bytes beyond the buffers are not visited.
template <class Piece>
void for_each_piece(const iovec *iov, size_t count, size_t off, size_t n, Piece &&piece) {
    for (size_t i = 0; i < count && n; i++) {
        const size_t l = iov[i].iov_len;
        if (off >= l) {
            off -= l;
            continue;
        }
        const size_t k = std::min(l - off, n);
        piece(static_cast<uint8_t *>(iov[i].iov_base) + off, k);
        n -= k;
        off = 0;
    }
}

// The pieces of bytes [off, off + n), written to out (at most `count` entries);
// returns how many.
inline size_t gather(const iovec *iov, size_t count, size_t off, size_t n, iovec *out) {
    size_t np = 0;
    for_each_piece(iov, count, off, n, [&](uint8_t *p, size_t k) { out[np++] = iovec{p, k}; });
    return np;
}

// Copies n bytes to offset `off`; what falls beyond the buffers is dropped (the
// receive is truncated). Returns the bytes copied.
inline size_t scatter(const iovec *iov, size_t count, size_t off, const void *src, size_t n) {
    const auto *from = static_cast<const uint8_t *>(src);
    size_t copied = 0;
    for_each_piece(iov, count, off, n, [&](uint8_t *p, size_t k) {
        std::memcpy(p, from + copied, k);
        copied += k;
    });
    return copied;
}

// One message being put back together from a link whose packets arrive in order (both
// transports guarantee it): each packet must continue exactly where the last ended.
class Reassembly {
  public:
    bool active() const { return active_; }
    size_t length() const { return len_; }
    // A message of `len` bytes starts (its first packet has offset 0).
    void begin(size_t len) {
        active_ = true;
        len_ = len;
        got_ = 0;
    }
    // Whether a packet claiming bytes [off, off + n) of a `len`-byte message continues
    // this one; if so its bytes are counted. A false answer means: drop the packet.
    bool accept(size_t off, size_t n, size_t len) {
        if (!active_ || len != len_ || off != got_ || !within(off, n, len_)) return false;
        got_ += n;
        return true;
    }
    // Every byte is in: the message is done and the next one may begin.
    bool finish() {
        if (!active_ || got_ != len_) return false;
        active_ = false;
        return true;
    }

  private:
    bool active_ = false;
    size_t len_ = 0, got_ = 0;
};

}  // namespace softnic::transport::msg

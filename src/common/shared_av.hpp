// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// FI_SHARED_AV: a named AV's table in POSIX shared memory. The process that creates the
// AV publishes every insert and remove; processes that open the name with FI_READ see
// the same fi_addr_t values.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace softnic {

class SharedAvTable {
  public:
    ~SharedAvTable();
    SharedAvTable(const SharedAvTable &) = delete;
    SharedAvTable &operator=(const SharedAvTable &) = delete;

    // The creator's table; -errno on failure.
    static int create(const std::string &name, size_t addrlen, size_t capacity,
                      SharedAvTable **out);
    // A reader's view; -FI_ENOENT style errors as -errno.
    static int open(const std::string &name, size_t addrlen, SharedAvTable **out);

    size_t capacity() const { return capacity_; }
    size_t published() const { return hdr_->count.load(std::memory_order_acquire); }
    // Creator: entry i now holds addr (or is free, with addr == nullptr).
    void publish(size_t i, const void *addr);
    // Reader: copy entry i; false when the slot is free.
    bool read(size_t i, void *addr) const;

  private:
    struct Header {
        uint64_t magic;
        uint32_t addrlen;
        uint32_t capacity;
        std::atomic<uint64_t> count;  // slots [0, count) were ever written
    };
    SharedAvTable() = default;
    uint8_t *slot(size_t i) const { return data_ + i * (1 + addrlen_); }

    std::string name_;
    void *map_ = nullptr;
    size_t size_ = 0, addrlen_ = 0, capacity_ = 0;
    Header *hdr_ = nullptr;
    uint8_t *data_ = nullptr;
    bool owner_ = false;
};

}  // namespace softnic

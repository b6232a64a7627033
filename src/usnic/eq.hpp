// usnic event queue: connection and AV events, with an eventfd wait object
// (FI_WAIT_UNSPEC becomes FI_WAIT_FD, as upstream).
#pragma once

#include <rdma/fi_eq.h>

#include <deque>
#include <mutex>
#include <vector>

#include "common/fid.hpp"

namespace softnic::usnic {

class Eq {
  public:
    // Validates and completes attr (size 0 becomes 1024); 0 or a -FI_E* code.
    static int check_attr(fi_eq_attr &attr);
    Eq(const fi_eq_attr &attr, void *context);
    ~Eq();
    Eq(const Eq &) = delete;
    Eq &operator=(const Eq &) = delete;
    fid_eq *fid() { return &handle_.fid; }
    static Eq *of(fid_eq *f) { return owner_of<Eq>(f); }
    RefCount &refs() { return refs_; }
    // Provider events: false when the queue is full (the event is lost, as upstream).
    bool post(uint32_t type, const void *buf, size_t len);
    bool post_error(const fi_eq_err_entry &e, const void *err_data, size_t err_len);
    ssize_t write(uint32_t type, const void *buf, size_t len, uint64_t flags);
    ssize_t read(uint32_t *type, void *buf, size_t len, uint64_t flags);
    ssize_t readerr(fi_eq_err_entry *out, uint64_t flags);
    ssize_t sread(uint32_t *type, void *buf, size_t len, int timeout_ms, uint64_t flags);
    int control(int command, void *arg);
    int wait_fd() const { return efd_; }

  private:
    struct Event {
        uint32_t type;
        std::vector<uint8_t> data;
    };
    struct Error {
        fi_eq_err_entry entry;
        std::vector<uint8_t> err_data;
    };
    void signal();
    void settle();  // the fd is readable exactly while something is queued

    Handle<fid_eq, Eq> handle_;
    fi_wait_obj wait_obj_;
    bool writable_;
    size_t size_;
    std::mutex lock_;
    std::deque<Event> events_;
    std::deque<Error> errors_;
    Error last_error_;  // err_data handed out by readerr stays valid until the next
    int efd_ = -1;
    RefCount refs_;
};

}  // namespace softnic::usnic

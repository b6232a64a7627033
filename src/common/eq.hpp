// Event queue: control-path events (and fi_eq_write from the application).
#pragma once

#include <rdma/fi_eq.h>

#include <deque>
#include <vector>

#include "common/fid.hpp"
#include "common/lock.hpp"

namespace softnic {

// fi_eq_strerror: the error's text, copied into buf when one is given.
const char *eq_strerror(int prov_errno, char *buf, size_t len);

class Eq {
  public:
    static int check_attr(const fi_eq_attr &attr);
    Eq(const fi_eq_attr &attr, void *context);
    Eq(const Eq &) = delete;
    Eq &operator=(const Eq &) = delete;

    fid_eq *fid() { return &handle_.fid; }
    RefCount &refs() { return refs_; }

    ssize_t write(uint32_t event, const void *buf, size_t len, uint64_t flags);
    ssize_t read(uint32_t *event, void *buf, size_t len, uint64_t flags);
    ssize_t readerr(fi_eq_err_entry *out, uint64_t flags);
    ssize_t sread(uint32_t *event, void *buf, size_t len, int timeout_ms, uint64_t flags);
    void write_error(const fi_eq_err_entry &err);

  private:
    struct Event {
        uint32_t type;
        std::vector<uint8_t> data;
    };
    Handle<fid_eq, Eq> handle_;
    SpinLock lock_;
    std::deque<Event> events_;
    std::deque<fi_eq_err_entry> errors_;
    RefCount refs_;
};

}  // namespace softnic

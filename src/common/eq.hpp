// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Event queue: control-path events (and fi_eq_write from the application). A
// provider's rules that differ (capacity, FI_WRITE gating, codes) come in EqRules;
// FI_WAIT_FD gives an eventfd that is readable exactly while something is queued.
#pragma once

#include <rdma/fi_eq.h>

#include <deque>
#include <vector>

#include "common/fid.hpp"
#include "common/lock.hpp"

namespace softnic {

// fi_eq_strerror: the error's text, copied into buf when one is given.
const char *eq_strerror(int prov_errno, char *buf, size_t len);

struct EqRules {
    size_t capacity = 0;             // events + errors queued at most (0: unbounded)
    bool write_needs_flag = false;   // fi_eq_write only on EQs opened with FI_WRITE
    bool sread_needs_wait = false;   // fi_eq_sread on FI_WAIT_NONE: -FI_ENOSYS
    int no_wait_code = -FI_ENODATA;  // FI_GETWAIT without a wait fd
    int bad_control_code = -FI_ENOSYS;
};

class Eq {
  public:
    static int check_attr(const fi_eq_attr &attr);
    Eq(const fi_eq_attr &attr, void *context, const EqRules &rules = {});
    ~Eq();
    Eq(const Eq &) = delete;
    Eq &operator=(const Eq &) = delete;

    fid_eq *fid() { return &handle_.fid; }
    static Eq *of(fid_eq *f) { return owner_of<Eq>(f); }
    RefCount &refs() { return refs_; }
    // Keeps the parent (domain, or fabric for an EQ) open while this object lives.
    void hold_parent(RefCount &parent) { parent_.hold(parent); }

    // Provider events: false when the queue is full (the event is lost).
    bool post(uint32_t event, const void *buf, size_t len);
    bool post_error(const fi_eq_err_entry &err, const void *err_data = nullptr, size_t len = 0);
    ssize_t write(uint32_t event, const void *buf, size_t len, uint64_t flags);
    ssize_t read(uint32_t *event, void *buf, size_t len, uint64_t flags);
    ssize_t readerr(fi_eq_err_entry *out, uint64_t flags);
    ssize_t sread(uint32_t *event, void *buf, size_t len, int timeout_ms, uint64_t flags);
    int control(int command, void *arg);
    // fi_trywait: 0 when nothing is queued (the eventfd is readable while events are).
    int trywait();

  private:
    struct Event {
        uint32_t type;
        std::vector<uint8_t> data;
    };
    struct Error {
        fi_eq_err_entry entry;
        std::vector<uint8_t> err_data;  // owned: handed out by readerr
    };
    bool full() const {
        return rules_.capacity && events_.size() + errors_.size() >= rules_.capacity;
    }
    void signal();
    void settle();  // drain the eventfd once nothing is queued

    Handle<fid_eq, Eq> handle_;
    EqRules rules_;
    fi_wait_obj wait_obj_;
    bool writable_;
    SpinLock lock_;
    std::deque<Event> events_;
    std::deque<Error> errors_;
    Error last_error_;  // err_data lent by readerr stays valid until the next call
    int efd_ = -1;
    RefCount refs_;
    ParentRef parent_;
};

}  // namespace softnic

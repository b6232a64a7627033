// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "common/cntr.hpp"

#include "common/deadline.hpp"

namespace softnic {
namespace {

Cntr *cntr_of(fid_cntr *f) {
    return owner_of<Cntr>(f);
}

uint64_t op_read(fid_cntr *f) {
    return cntr_of(f)->read();
}
uint64_t op_readerr(fid_cntr *f) {
    return cntr_of(f)->readerr();
}
int op_add(fid_cntr *f, uint64_t v) {
    return cntr_of(f)->add(v);
}
int op_adderr(fid_cntr *f, uint64_t v) {
    return cntr_of(f)->adderr(v);
}
int op_set(fid_cntr *f, uint64_t v) {
    return cntr_of(f)->set(v);
}
int op_seterr(fid_cntr *f, uint64_t v) {
    return cntr_of(f)->seterr(v);
}
int op_wait(fid_cntr *f, uint64_t threshold, int timeout) {
    return guarded([&] { return cntr_of(f)->wait(threshold, timeout); });
}

}  // namespace

fi_ops_cntr cntr_ops = {sizeof(fi_ops_cntr), op_read,  op_readerr, op_add, op_set, op_wait,
                        op_adderr,           op_seterr};

int cntr_close(fid *f) {
    Cntr *c = owner_of_fid<Cntr, fid_cntr>(f);
    if (c->refs().busy()) SN_REJECT(-FI_EBUSY, FI_LOG_CNTR, "counter still bound\n");
    delete c;
    return 0;
}

namespace {
int cntr_control(fid *f, int command, void *arg) {
    if (command == FI_GETWAIT) return owner_of_fid<Cntr, fid_cntr>(f)->getwait(arg);
    SN_REJECT(-FI_EINVAL, FI_LOG_CNTR, "unsupported counter control %d\n", command);
}
}  // namespace

fi_ops cntr_fid_ops = make_fid_ops(cntr_close, fid_no_bind, cntr_control, fid_no_ops_open);

int Cntr::check_attr(const fi_cntr_attr &attr) {
    // 1 is FI_CNTR_EVENTS_BYTES, which 1.17's enum does not name.
    const int events = raw_enum(attr.events);
    if (events != FI_CNTR_EVENTS_COMP && events != 1)
        SN_REJECT(-FI_ENOSYS, FI_LOG_CNTR, "unsupported counter events %d\n", events);
    const int wait = raw_enum(attr.wait_obj);
    if (wait == FI_WAIT_SET && !attr.wait_set)
        SN_REJECT(-FI_EINVAL, FI_LOG_CNTR, "FI_WAIT_SET without a wait set\n");
    const auto w = fi_wait_obj(wait);  // a valid value from here on, or rejected below
    if (wait < FI_WAIT_NONE || wait > FI_WAIT_POLLFD ||
        (!polled_wait_obj(w) && !WaitFd::serves(w) && wait != FI_WAIT_SET))
        SN_REJECT(-FI_ENOSYS, FI_LOG_CNTR, "unsupported counter wait object %d\n", wait);
    if (attr.flags & ~(1ULL << 32))
        SN_REJECT(-FI_ENOSYS, FI_LOG_CNTR, "unsupported counter flags 0x%lx\n", attr.flags);
    return 0;
}

Cntr::Cntr(const fi_cntr_attr &attr, void *context)
    : events_(attr.events),
      wait_obj_(attr.wait_obj),
      wait_(attr.wait_obj, attr.wait_set, [this, seen = uint64_t{0}]() mutable {
          uint64_t v = read() + readerr();  // a change since the set last reported one
          bool changed = v != seen;
          seen = v;
          return changed;
      }) {
    handle_.owner = this;
    handle_.fid.fid.fclass = FI_CLASS_CNTR;
    handle_.fid.fid.context = context;
    handle_.fid.ops = &cntr_ops;
}

uint64_t Cntr::read() {
    progress_.run();
    return value_.load(std::memory_order_acquire);
}

uint64_t Cntr::readerr() {
    progress_.run();
    return err_.load(std::memory_order_acquire);
}

int Cntr::add(uint64_t v) {
    if (v > kSuccessMax) SN_REJECT(-FI_EINVAL, FI_LOG_CNTR, "value exceeds 48 bits\n");
    value_.fetch_add(v);
    notify();
    return 0;
}

int Cntr::adderr(uint64_t v) {
    if (v > kErrorMax) SN_REJECT(-FI_EINVAL, FI_LOG_CNTR, "error value exceeds 127\n");
    err_.fetch_add(v);
    notify();
    return 0;
}

int Cntr::set(uint64_t v) {
    if (v > kSuccessMax) SN_REJECT(-FI_EINVAL, FI_LOG_CNTR, "value exceeds 48 bits\n");
    value_.store(v);
    notify();
    return 0;
}

int Cntr::seterr(uint64_t v) {
    if (v > kErrorMax) SN_REJECT(-FI_EINVAL, FI_LOG_CNTR, "error value exceeds 127\n");
    err_.store(v);
    notify();
    return 0;
}

// A counter opened with FI_WAIT_NONE is waited on by polling too: upstream cxi refuses
// (-FI_EINVAL), but fabtests and libfabric's own util counters wait on such counters.
int Cntr::wait(uint64_t threshold, int timeout_ms) {
    if (threshold > kSuccessMax) SN_REJECT(-FI_EINVAL, FI_LOG_CNTR, "threshold exceeds 48 bits\n");
    const uint64_t err0 = err_.load();
    int rc = -FI_ETIMEDOUT;
    auto ready = [&] {
        if (read() >= threshold)
            rc = 0;
        else if (err_.load() != err0)
            rc = -FI_EAVAIL;
        return rc != -FI_ETIMEDOUT;
    };
    if (wait_)
        sleep_until(*wait_, timeout_ms, ready);  // sleeps: wait.hpp
    else
        poll_until(timeout_ms, ready);
    return rc;
}

int Cntr::getwait(void *arg) {
    if (!wait_ || wait_obj_ == FI_WAIT_UNSPEC || wait_.in_set())
        SN_REJECT(-FI_ENODATA, FI_LOG_CNTR, "counter has no FD or POLLFD wait object\n");
    return wait_->getwait(wait_obj_, arg);
}

// A counter has nothing to drain: arming is all (its next change rings).
int Cntr::trywait() {
    if (!wait_)
        SN_REJECT(-FI_EINVAL, FI_LOG_CNTR, "fi_trywait on a counter without a wait object\n");
    progress_.run();
    wait_->arm();
    return 0;
}

}  // namespace softnic

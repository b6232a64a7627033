// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "cxi/obj/cntr.hpp"

#include <rdma/fi_cxi_ext.h>

#include <cstring>

#include "common/log.hpp"
#include "cxi/obj/domain.hpp"

namespace softnic::cxi {
namespace {

int counter_control(fid *f, int command, void *arg) {
    return static_cast<Counter *>(owner_of_fid<Cntr, fid_cntr>(f))->control(command, arg);
}

// The counter behind an extension call's fid, or null (with a warning).
Counter *ext_counter(fid *f) {
    // A fid_cntr begins with its fid.
    Counter *c =
        f && f->fclass == FI_CLASS_CNTR ? counter_of(reinterpret_cast<fid_cntr *>(f)) : nullptr;
    if (!c) SN_WARN(FI_LOG_CNTR, "not a cxi counter\n");
    return c;
}

int ops_set_wb(fid *f, void *buf, size_t len) {
    Counter *c = ext_counter(f);
    return c ? c->set_wb_buffer(buf, len) : -FI_EINVAL;
}

int ops_mmio(fid *f, void **addr, size_t *len) {
    Counter *c = ext_counter(f);
    return c ? c->get_mmio_addr(addr, len) : -FI_EINVAL;
}

fi_cxi_cntr_ops counter_ext_ops = {ops_set_wb, ops_mmio};

int counter_ops_open(fid *, const char *name, uint64_t, void **ops, void *) {
    if (!name || !ops || std::strcmp(name, FI_CXI_COUNTER_OPS))
        SN_REJECT(-FI_EINVAL, FI_LOG_CNTR, "unknown counter ops \"%s\"\n", name ? name : "");
    *ops = &counter_ext_ops;
    return 0;
}

fi_ops counter_fid_ops = make_fid_ops(cntr_close, fid_no_bind, counter_control, counter_ops_open);

}  // namespace

Counter *counter_of(fid_cntr *cntr) {
    if (!cntr || cntr->fid.ops != &counter_fid_ops) return nullptr;
    return static_cast<Counter *>(owner_of<Cntr>(cntr));
}

Counter::Counter(Domain &domain, const fi_cntr_attr &attr, void *context)
    : Cntr(attr, context), domain_(domain), op_flags_(attr.flags) {
    handle_.fid.fid.ops = &counter_fid_ops;
    serialise_by(domain_.serial());
    domain_.refs().get();
}

Counter::~Counter() {
    domain_.service()->give(CXI_RSRC_TYPE_CT);
    progress_.remove(&doorbell_);
    domain_.refs().put();
}

int Counter::set_wb_buffer(void *buf, size_t len) {
    if (!buf || len < sizeof(uint64_t))
        SN_REJECT(-FI_EINVAL, FI_LOG_CNTR, "writeback buffer needs 8 bytes\n");
    wb_.store(static_cast<uint64_t *>(buf), std::memory_order_release);
    watched_.store(true, std::memory_order_release);
    write_back();
    return 0;
}

int Counter::get_mmio_addr(void **addr, size_t *len) {
    if (!addr || !len) SN_REJECT(-FI_EINVAL, FI_LOG_CNTR, "NULL addr or len\n");
    mmio_[FI_CXI_CNTR_MMIO_RST_SUCCESS].store(kArmed);
    mmio_[FI_CXI_CNTR_MMIO_RST_FAILURE].store(kArmed);
    progress_.add(&doorbell_);  // reading or waiting on the counter rings the doorbell
    *addr = mmio_.data();
    *len = sizeof(mmio_);
    return 0;
}

// The hardware applies doorbell stores at once; we apply them whenever the counter is
// read or waited on. (Two adds stored before one reading are seen as the last one.)
void Counter::ring() {
    if (uint64_t v = mmio_[FI_CXI_CNTR_MMIO_INC_SUCCESS].exchange(0)) add(v & kSuccessMax);
    if (uint64_t v = mmio_[FI_CXI_CNTR_MMIO_INC_FAILURE].exchange(0)) adderr(v & kErrorMax);
    if (mmio_[FI_CXI_CNTR_MMIO_RST_SUCCESS].exchange(kArmed) != kArmed) set(0);
    if (mmio_[FI_CXI_CNTR_MMIO_RST_FAILURE].exchange(kArmed) != kArmed) seterr(0);
}

void Counter::write_back() {
    uint64_t *w = wb_.load(std::memory_order_acquire);
    if (!w) return;
    uint64_t word =
        (value_.load() & kSuccessMax) | (err_.load() & kErrorMax) << 48 | FI_CXI_CNTR_WB_VALID;
    __atomic_store_n(w, word, __ATOMIC_RELEASE);
}

void Counter::watch_triggers() {
    triggers_.store(true, std::memory_order_release);
    watched_.store(true, std::memory_order_release);
}

void Counter::changed() {
    write_back();
    if (triggers_.load(std::memory_order_relaxed)) domain_.deferred().wake();
}

int Counter::control(int command, void *arg) {
    switch (command) {
        case FI_GETOPSFLAG:
            if (!arg) SN_REJECT(-FI_EINVAL, FI_LOG_CNTR, "NULL flags\n");
            *static_cast<uint64_t *>(arg) = op_flags_;
            return 0;
        case FI_SETOPSFLAG:
            if (!arg) SN_REJECT(-FI_EINVAL, FI_LOG_CNTR, "NULL flags\n");
            op_flags_ = *static_cast<uint64_t *>(arg);
            return 0;
        case FI_GETWAIT:
            return getwait(arg);
        default:
            SN_REJECT(-FI_EINVAL, FI_LOG_CNTR, "unsupported counter control %d\n", command);
    }
}

int counter_open(fid_domain *domain, fi_cntr_attr *attr, fid_cntr **cntr, void *context) {
    if (!cntr) SN_REJECT(-FI_EINVAL, FI_LOG_CNTR, "NULL cntr\n");
    fi_cntr_attr dflt{FI_CNTR_EVENTS_COMP, FI_WAIT_YIELD, nullptr, 0};
    if (!attr) attr = &dflt;
    if (int ret = Cntr::check_attr(*attr)) return ret;
    Domain *d = owner_of_fid<Domain, fid_domain>(&domain->fid);
    if (int ret = d->service()->take(CXI_RSRC_TYPE_CT)) return ret;
    int ret = guarded([&] {
        *cntr = (new Counter(*d, *attr, context))->fid();
        return 0;
    });
    if (ret) d->service()->give(CXI_RSRC_TYPE_CT);
    return ret;
}

}  // namespace softnic::cxi

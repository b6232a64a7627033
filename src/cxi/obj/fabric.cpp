// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "cxi/obj/fabric.hpp"

#include <rdma/fi_cxi_ext.h>

#include <cstring>

#include "common/cntr.hpp"
#include "common/cq.hpp"
#include "common/eq.hpp"
#include "common/fi_api.hpp"
#include "common/wait_set.hpp"
#include "cxi/obj/domain.hpp"

namespace softnic::cxi {
namespace {

int fabric_close(fid *f) {
    Fabric *fab = owner_of_fid<Fabric, fid_fabric>(f);
    if (fab->refs().busy()) SN_REJECT(-FI_EBUSY, FI_LOG_FABRIC, "fabric has open domains or EQs\n");
    delete fab;
    return 0;
}

int passive_ep(fid_fabric *, fi_info *, fid_pep **, void *) {
    SN_REJECT(-FI_ENOSYS, FI_LOG_FABRIC, "cxi has no passive endpoints (FI_EP_RDM only)\n");
}

int eq_open(fid_fabric *f, fi_eq_attr *attr, fid_eq **eq, void *context) {
    if (!attr || !eq) SN_REJECT(-FI_EINVAL, FI_LOG_EQ, "NULL attr or eq\n");
    int ret = Eq::check_attr(*attr);
    if (ret) return ret;
    return guarded([&] {
        Eq *e = new Eq(*attr, context);
        e->hold_parent(owner_of<Fabric>(f)->refs());
        *eq = e->fid();
        return 0;
    });
}

int wait_open(fid_fabric *f, fi_wait_attr *attr, fid_wait **ws) {
    return WaitSet::open(owner_of<Fabric>(f)->refs(), attr, ws);
}

// fi_trywait over CQs, counters and EQs with wait objects (common/wait.hpp): 0 once
// every one is armed with nothing pending, else -FI_EAGAIN (an early one may stay
// armed: it rings once, harmlessly).
int trywait(fid_fabric *, fid **fids, int count) {
    if (count < 0 || (count && !fids))
        SN_REJECT(-FI_EINVAL, FI_LOG_FABRIC, "bad fid list for fi_trywait\n");
    for (int i = 0; i < count; i++) {
        fid *f = fids[i];
        int ret;
        switch (f ? f->fclass : -1) {
            case FI_CLASS_CQ:
                ret = owner_of_fid<Cq, fid_cq>(f)->trywait();
                break;
            case FI_CLASS_CNTR:
                ret = owner_of_fid<Cntr, fid_cntr>(f)->trywait();
                break;
            case FI_CLASS_EQ:
                ret = owner_of_fid<Eq, fid_eq>(f)->trywait();
                break;
            case FI_CLASS_WAIT:
                ret = owner_of_fid<WaitSet, fid_wait>(f)->trywait();
                break;
            default:
                SN_REJECT(-FI_EINVAL, FI_LOG_FABRIC, "fi_trywait on fid class %d\n",
                          f ? int(f->fclass) : -1);
        }
        if (ret) return ret;
    }
    return 0;
}

int domain2(fid_fabric *fabric, fi_info *info, fid_domain **dom, uint64_t flags, void *ctx) {
    if (flags) SN_REJECT(-FI_EINVAL, FI_LOG_DOMAIN, "fi_domain2 flags must be 0\n");
    return domain_open(fabric, info, dom, ctx);
}

fi_ops_fabric fabric_ops = {
    sizeof(fi_ops_fabric), domain_open, passive_ep, eq_open, wait_open, trywait, domain2};
fi_ops fabric_fid_ops = make_fid_ops(fabric_close, fid_no_bind, fid_no_control, fid_no_ops_open);

}  // namespace

Fabric::Fabric(void *context) {
    handle_.owner = this;
    handle_.fid.fid.fclass = FI_CLASS_FABRIC;
    handle_.fid.fid.context = context;
    handle_.fid.fid.ops = &fabric_fid_ops;
    handle_.fid.ops = &fabric_ops;
    handle_.fid.api_version = kBuiltApi;
}

int fabric_open(fi_fabric_attr *attr, fid_fabric **fabric, void *context) {
    if (!attr || !fabric) SN_REJECT(-FI_EINVAL, FI_LOG_FABRIC, "NULL attr or fabric\n");
    if (attr->name && std::strcmp(attr->name, "cxi"))
        SN_REJECT(-FI_ENODATA, FI_LOG_FABRIC, "unknown fabric %s\n", attr->name);
    return guarded([&] {
        *fabric = (new Fabric(context))->fid();
        return 0;
    });
}

const char *prov_strerror(int prov_errno) {
    switch (prov_errno) {
        case C_RC_OK:
            return "C_RC_OK";
        case C_RC_UNDELIVERABLE:
            return "C_RC_UNDELIVERABLE: peer unreachable";
        case C_RC_PT_DISABLED:
            return "C_RC_PT_DISABLED: target portal disabled";
        case C_RC_NO_MATCH:
            return "C_RC_NO_MATCH";
        case C_RC_ENTRY_NOT_FOUND:
            return "C_RC_ENTRY_NOT_FOUND";
        case C_RC_VNI_NOT_FOUND:
            return "C_RC_VNI_NOT_FOUND";
        case C_RC_PTLTE_NOT_FOUND:
            return "C_RC_PTLTE_NOT_FOUND: no endpoint at that address";
        default:
            return fi_strerror(prov_errno);
    }
}

}  // namespace softnic::cxi

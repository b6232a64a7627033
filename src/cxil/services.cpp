// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The rules of the service calls, as the Cassini driver applies them.
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "cxil/service.hpp"
#include "cxil/usage.hpp"

namespace softnic::cxil {
namespace {

Service *find(std::vector<Service> &svcs, unsigned id) {
    for (Service &s : svcs)
        if (s.id() == id) return &s;
    return nullptr;
}

bool vni_valid(unsigned v) {
    return v >= 1 && v <= 0xffff;
}

// A descriptor the driver would accept (the errors all read -EINVAL).
bool valid(const cxi_svc_desc &d) {
    if (d.restricted_vnis) {
        if (d.num_vld_vnis < 1 || d.num_vld_vnis > CXI_SVC_MAX_VNIS) return false;
        for (int i = 0; i < d.num_vld_vnis; i++)
            if (!vni_valid(d.vnis[i])) return false;
    }
    if (d.restricted_members)
        for (const auto &m : d.members)
            if (m.type < CXI_SVC_MEMBER_IGNORE || m.type >= CXI_SVC_MEMBER_MAX) return false;
    if (d.resource_limits)
        for (int t = 0; t < CXI_RSRC_TYPE_MAX; t++)
            if (d.limits.type[t].max < d.limits.type[t].res ||
                d.limits.type[t].max > kDeviceTotals[t])
                return false;
    return true;
}

bool claims_vni(const Service &s, unsigned v) {
    if (s.desc.restricted_vnis)
        return std::find(s.desc.vnis, s.desc.vnis + s.desc.num_vld_vnis, v) !=
               s.desc.vnis + s.desc.num_vld_vnis;
    return s.has_range() && v >= s.vni_min && v <= s.vni_max;
}

// Whether `d` names a VNI that another service already has.
bool overlaps(const std::vector<Service> &svcs, const cxi_svc_desc &d) {
    if (!d.restricted_vnis) return false;
    for (const Service &s : svcs)
        for (int i = 0; i < d.num_vld_vnis; i++)
            if (s.id() != d.svc_id && claims_vni(s, d.vnis[i])) return true;
    return false;
}

// Reservations of all services must fit the device; fills `fail` when they do not.
bool reservations_fit(const std::vector<Service> &svcs, const cxi_svc_desc &d,
                      cxi_svc_fail_info *fail) {
    bool fit = true;
    for (int t = 0; t < CXI_RSRC_TYPE_MAX; t++) {
        unsigned reserved = 0;
        for (const Service &s : svcs)
            if (s.id() != d.svc_id && s.desc.resource_limits) reserved += s.desc.limits.type[t].res;
        unsigned avail = reserved >= kDeviceTotals[t] ? 0 : kDeviceTotals[t] - reserved;
        if (fail) fail->rsrc_avail[t] = uint16_t(avail);
        if (d.resource_limits && d.limits.type[t].res > avail) fit = false;
    }
    return fit;
}

}  // namespace

const char *rsrc_name(int type) {
    return type >= 0 && type < CXI_RSRC_TYPE_MAX ? cxi_rsrc_type_strs[type] : "(invalid)";
}

const char *tc_name(int tc) {
    static const char *const names[] = {"DEDICATED_ACCESS", "LOW_LATENCY", "BULK_DATA",
                                        "BEST_EFFORT", "ETH"};
    return tc >= 0 && tc < CXI_TC_MAX ? names[tc] : "(invalid)";
}

int alloc_svc(Registry &r, const cxi_svc_desc &in, cxi_svc_fail_info *fail) {
    if (geteuid() != 0) return -EPERM;
    if (!valid(in)) return -EINVAL;
    cxi_svc_fail_info info{};
    int ret = r.modify([&](std::vector<Service> &svcs) {
        Service s;
        s.desc = in;
        cxi_svc_desc &d = s.desc;
        d.svc_id = 2;
        while (find(svcs, d.svc_id))
            d.svc_id++;
        d.is_system_svc = 0;
        if (d.resource_limits) {  // triggered operations come from a pool of at least 8
            d.limits.tles.res = std::max<uint16_t>(d.limits.tles.res, kMinSvcTles);
            d.limits.tles.max = d.limits.tles.res;
        }
        if (overlaps(svcs, d)) return -EEXIST;
        if (!reservations_fit(svcs, d, &info)) return -ENOSPC;
        d.enable = d.restricted_vnis;  // a range service waits for its range
        svcs.push_back(s);
        return int(d.svc_id);
    });
    if (ret < 0 && fail) *fail = info;
    return ret;
}

int destroy_svc(Registry &r, unsigned svc_id) {
    if (geteuid() != 0) return -EPERM;
    if (svc_id == CXI_DEFAULT_SVC_ID) return -EINVAL;
    return r.modify([&](std::vector<Service> &svcs) {
        Service *s = find(svcs, svc_id);
        if (!s) return -EINVAL;
        if (Usage(r.device()).in_use(svc_id)) return -EBUSY;
        svcs.erase(svcs.begin() + (s - svcs.data()));
        return 0;
    });
}

int update_svc(Registry &r, const cxi_svc_desc &in, cxi_svc_fail_info *fail) {
    if (geteuid() != 0) return -EPERM;
    if (!valid(in)) return -EINVAL;
    cxi_svc_fail_info info{};
    int ret = r.modify([&](std::vector<Service> &svcs) {
        Service *s = find(svcs, in.svc_id);
        if (!s) return -EINVAL;
        if (in.resource_limits != s->desc.resource_limits) return -EINVAL;
        if (Usage(r.device()).in_use(in.svc_id)) return -EBUSY;
        if (overlaps(svcs, in)) return -EEXIST;
        if (!reservations_fit(svcs, in, &info)) return -ENOSPC;
        cxi_svc_desc d = in;
        d.enable = s->desc.enable;  // enabling has its own call
        d.is_system_svc = s->desc.is_system_svc;
        s->desc = d;
        return 0;
    });
    if (ret < 0 && fail) *fail = info;
    return ret;
}

int get_svc(const Registry &r, unsigned svc_id, Service &out) {
    std::vector<Service> svcs;
    int ret = r.load(svcs);
    if (ret) return ret;
    Service *s = find(svcs, svc_id);
    if (!s) return -EINVAL;
    out = *s;
    return 0;
}

int edit_svc(Registry &r, unsigned svc_id, bool busy_matters,
             const std::function<int(Service &)> &change) {
    if (geteuid() != 0) return -EPERM;
    if (svc_id < 1) return -EINVAL;
    return r.modify([&](std::vector<Service> &svcs) {
        Service *s = find(svcs, svc_id);
        if (!s) return -EINVAL;
        if (busy_matters && Usage(r.device()).in_use(svc_id)) return -EBUSY;
        return change(*s);
    });
}

int set_vni_range(Registry &r, unsigned svc_id, uint16_t vni_min, uint16_t vni_max) {
    unsigned size = unsigned(vni_max) - vni_min + 1;
    if (!vni_valid(vni_min) || !vni_valid(vni_max) || vni_max < vni_min ||
        (size & (size - 1)) != 0 || vni_min % size != 0)
        return -EINVAL;  // a power-of-two block, aligned to its size
    return r.modify([&](std::vector<Service> &svcs) {
        Service *s = find(svcs, svc_id);
        if (!s || s->desc.restricted_vnis) return -EINVAL;
        for (const Service &o : svcs)
            for (unsigned v = vni_min; o.id() != svc_id && v <= vni_max; v++)
                if (claims_vni(o, v)) return -EEXIST;
        s->vni_min = vni_min;
        s->vni_max = vni_max;
        return 0;
    });
}

}  // namespace softnic::cxil

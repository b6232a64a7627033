// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Who may use a service, and which service a process gets when it names none.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "cxil/service.hpp"

namespace softnic::cxil {

Caller Caller::self() {
    Caller c;
    c.uid = geteuid();
    c.gids.push_back(getegid());
    int n = getgroups(0, nullptr);
    if (n > 0) {
        std::vector<gid_t> more(size_t(n), 0);
        n = getgroups(n, more.data());
        if (n > 0) c.gids.insert(c.gids.end(), more.begin(), more.begin() + n);
    }
    struct stat st;
    if (stat("/proc/self/ns/net", &st) == 0) c.netns = st.st_ino;
    return c;
}

namespace {

bool matches(const Service &s, const Caller &c, cxi_svc_member_type type) {
    if (type == CXI_SVC_MEMBER_NET_NS) return s.netns && s.netns == c.netns;
    for (const auto &m : s.desc.members) {
        if (m.type != type) continue;
        if (type == CXI_SVC_MEMBER_UID && m.svc_member.uid == c.uid) return true;
        if (type == CXI_SVC_MEMBER_GID &&
            std::find(c.gids.begin(), c.gids.end(), m.svc_member.gid) != c.gids.end())
            return true;
    }
    return false;
}

}  // namespace

bool is_member(const Service &s, const Caller &c) {
    if (!s.desc.restricted_members) return true;
    return matches(s, c, CXI_SVC_MEMBER_UID) || matches(s, c, CXI_SVC_MEMBER_GID) ||
           matches(s, c, CXI_SVC_MEMBER_NET_NS);
}

bool vni_allowed(const Service &s, uint16_t vni) {
    if (s.desc.restricted_vnis)
        return std::find(s.desc.vnis, s.desc.vnis + s.desc.num_vld_vnis, vni) !=
               s.desc.vnis + s.desc.num_vld_vnis;
    if (s.has_range()) return vni >= s.vni_min && vni <= s.vni_max;
    return true;  // a service that does not restrict VNIs
}

bool tc_allowed(const Service &s, cxi_traffic_class tc) {
    return !s.desc.restricted_tcs || (tc >= 0 && tc < CXI_TC_MAX && s.desc.tcs[tc]);
}

bool pick_default(const std::vector<Service> &svcs, const Caller &c, uint16_t default_vni,
                  uint32_t &svc_id, uint16_t &vni) {
    // Best match first: namespace, uid, gid, then a service open to all.
    const Service *best = nullptr;
    int best_rank = 4;
    for (auto it = svcs.rbegin(); it != svcs.rend(); ++it) {
        const Service &s = *it;
        if (!s.desc.enable || s.desc.is_system_svc) continue;
        int rank = 4;
        if (!s.desc.restricted_members)
            rank = 3;
        else if (matches(s, c, CXI_SVC_MEMBER_NET_NS))
            rank = 0;
        else if (matches(s, c, CXI_SVC_MEMBER_UID))
            rank = 1;
        else if (matches(s, c, CXI_SVC_MEMBER_GID))
            rank = 2;
        if (rank < best_rank) {
            best = &s;
            best_rank = rank;
        }
    }
    if (!best) return false;
    svc_id = best->id();
    if (best->desc.restricted_vnis)
        vni = best->desc.vnis[0];
    else if (best->has_range())
        vni = best->vni_min;
    else
        vni = default_vni;
    return true;
}

}  // namespace softnic::cxil

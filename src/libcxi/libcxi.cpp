// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The libCXI C API over softnic's devices and service registry (src/cxil).
#include <libcxi/libcxi.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include "cxil/devices.hpp"
#include "cxil/service.hpp"
#include "cxil/usage.hpp"

#define CXIL_API extern "C" __attribute__((visibility("default")))

using namespace softnic::cxil;

namespace {

std::vector<SoftNic> devices() {
    const char *nics = std::getenv("FI_CXI_SOFT_NICS");
    const char *filter = std::getenv("FI_CXI_DEVICE_NAME");
    return discover(nics ? nics : "", filter ? filter : "", [](const std::string &) {});
}

void fill(const SoftNic &n, cxil_devinfo &i) {
    i = cxil_devinfo{};
    i.dev_id = n.index;
    i.nid = n.addr;
    i.pid_bits = 9;
    i.pid_count = 511;
    i.pid_granule = 256;
    i.min_free_shift = 0;
    std::snprintf(i.device_name, sizeof(i.device_name), "%s", n.name.c_str());
    std::snprintf(i.driver_name, sizeof(i.driver_name), "softnic");
    i.vendor_id = 0x17db;
    i.device_id = 0x501;
    i.device_rev = 2;
    uint16_t *num[CXI_RSRC_TYPE_MAX] = {&i.num_ptes, &i.num_txqs, &i.num_tgqs, &i.num_eqs,
                                        &i.num_cts,  &i.num_les,  &i.num_tles, &i.num_acs};
    for (int t = 0; t < CXI_RSRC_TYPE_MAX; t++)
        *num[t] = kDeviceTotals[t];
    i.link_mtu = n.mtu;
    i.link_speed = 200000;  // Mb/s, as the provider's fi_link_attr says
    i.link_state = 1;
    i.cassini_version = CASSINI_2_0;
    std::snprintf(i.fru_description, sizeof(i.fru_description), "softnic %s", n.ifname.c_str());
    i.system_type_identifier = CASSINI_2_ONLY;
}

Registry registry(const cxil_dev *dev) {
    return Registry(dev->info.device_name);
}

}  // namespace

CXIL_API int cxil_get_device_list(cxil_device_list **dev_list) {
    if (!dev_list) return -EINVAL;
    std::vector<SoftNic> nics = devices();
    size_t bytes = sizeof(cxil_device_list) + nics.size() * sizeof(cxil_devinfo);
    auto *l = static_cast<cxil_device_list *>(std::calloc(1, bytes));
    if (!l) return -ENOMEM;
    l->count = unsigned(nics.size());
    for (size_t i = 0; i < nics.size(); i++)
        fill(nics[i], l->info[i]);
    *dev_list = l;
    return 0;
}

CXIL_API void cxil_free_device_list(cxil_device_list *dev_list) {
    std::free(dev_list);
}

CXIL_API int cxil_open_device(uint32_t dev_id, cxil_dev **dev) {
    if (!dev) return -EINVAL;
    for (const SoftNic &n : devices()) {
        if (n.index != dev_id) continue;
        auto *d = static_cast<cxil_dev *>(std::calloc(1, sizeof(cxil_dev)));
        if (!d) return -ENOMEM;
        fill(n, d->info);
        *dev = d;
        return 0;
    }
    return -ENOENT;
}

CXIL_API void cxil_close_device(cxil_dev *dev) {
    std::free(dev);
}

CXIL_API int cxil_alloc_svc(cxil_dev *dev, const cxi_svc_desc *desc, cxi_svc_fail_info *fail) {
    if (!dev || !desc) return -EINVAL;
    Registry r = registry(dev);
    return alloc_svc(r, *desc, fail);
}

CXIL_API int cxil_destroy_svc(cxil_dev *dev, unsigned int svc_id) {
    if (!dev || svc_id < 1) return -EINVAL;
    Registry r = registry(dev);
    return destroy_svc(r, svc_id);
}

CXIL_API int cxil_update_svc(cxil_dev *dev, const cxi_svc_desc *desc, cxi_svc_fail_info *fail) {
    if (!dev || !desc) return -EINVAL;
    Registry r = registry(dev);
    return update_svc(r, *desc, fail);
}

CXIL_API int cxil_get_svc(cxil_dev *dev, unsigned int svc_id, cxi_svc_desc *desc) {
    if (!dev || !desc) return -EINVAL;
    Service s;
    int ret = get_svc(registry(dev), svc_id, s);
    if (!ret) *desc = s.desc;
    return ret;
}

CXIL_API int cxil_get_svc_list(cxil_dev *dev, cxil_svc_list **svc_list) {
    if (!dev || !svc_list) return -EINVAL;
    std::vector<Service> svcs;
    int ret = registry(dev).load(svcs);
    if (ret) return ret;
    size_t bytes = sizeof(cxil_svc_list) + svcs.size() * sizeof(cxi_svc_desc);
    auto *l = static_cast<cxil_svc_list *>(std::calloc(1, bytes));
    if (!l) return -ENOMEM;
    l->count = unsigned(svcs.size());
    for (size_t i = 0; i < svcs.size(); i++)
        l->descs[i] = svcs[i].desc;
    *svc_list = l;
    return 0;
}

CXIL_API void cxil_free_svc_list(cxil_svc_list *svc_list) {
    std::free(svc_list);
}

namespace {

void use_of(Usage &u, unsigned svc_id, cxi_rsrc_use &out) {
    Counts c = u.total(svc_id);
    out = cxi_rsrc_use{};
    out.svc_id = svc_id;
    for (int t = 0; t < CXI_RSRC_TYPE_MAX; t++)
        out.in_use[t] = uint16_t(c[t] > 0xffff ? 0xffff : c[t]);
}

}  // namespace

CXIL_API int cxil_get_svc_rsrc_use(cxil_dev *dev, unsigned int svc_id, cxi_rsrc_use *rsrcs) {
    if (!dev || !rsrcs) return -EINVAL;
    Service s;
    int ret = get_svc(registry(dev), svc_id, s);
    if (ret) return ret;
    Usage u(dev->info.device_name);
    use_of(u, svc_id, *rsrcs);
    return 0;
}

CXIL_API int cxil_get_svc_rsrc_list(cxil_dev *dev, cxil_svc_rsrc_list **rsrc_list) {
    if (!dev || !rsrc_list) return -EINVAL;
    std::vector<Service> svcs;
    int ret = registry(dev).load(svcs);
    if (ret) return ret;
    size_t bytes = sizeof(cxil_svc_rsrc_list) + svcs.size() * sizeof(cxi_rsrc_use);
    auto *l = static_cast<cxil_svc_rsrc_list *>(std::calloc(1, bytes));
    if (!l) return -ENOMEM;
    Usage u(dev->info.device_name);
    l->count = unsigned(svcs.size());
    for (size_t i = 0; i < svcs.size(); i++)
        use_of(u, svcs[i].id(), l->rsrcs[i]);
    *rsrc_list = l;
    return 0;
}

CXIL_API void cxil_free_svc_rsrc_list(cxil_svc_rsrc_list *rsrc_list) {
    std::free(rsrc_list);
}

CXIL_API int cxil_set_svc_lpr(cxil_dev *dev, unsigned int svc_id, unsigned int lnis_per_rgid) {
    if (!dev || lnis_per_rgid < 1 || lnis_per_rgid > 8) return -EINVAL;
    Registry r = registry(dev);
    return edit_svc(r, svc_id, true, [&](Service &s) {
        s.lpr = lnis_per_rgid;
        return 0;
    });
}

CXIL_API int cxil_get_svc_lpr(cxil_dev *dev, unsigned int svc_id) {
    if (!dev) return -EINVAL;
    Service s;
    int ret = get_svc(registry(dev), svc_id, s);
    return ret ? ret : int(s.lpr);
}

CXIL_API int cxil_svc_enable(cxil_dev *dev, unsigned int svc_id, bool enable) {
    if (!dev) return -EINVAL;
    Registry r = registry(dev);
    return edit_svc(r, svc_id, true, [&](Service &s) {
        s.desc.enable = enable;
        return 0;
    });
}

CXIL_API int cxil_svc_set_exclusive_cp(cxil_dev *dev, unsigned int svc_id, bool exclusive_cp) {
    if (!dev) return -EINVAL;
    Registry r = registry(dev);
    return edit_svc(r, svc_id, true, [&](Service &s) {
        s.exclusive_cp = exclusive_cp;
        return 0;
    });
}

CXIL_API int cxil_svc_get_exclusive_cp(cxil_dev *dev, unsigned int svc_id, bool *exclusive_cp) {
    if (!dev || !exclusive_cp) return -EINVAL;
    Service s;
    int ret = get_svc(registry(dev), svc_id, s);
    if (!ret) *exclusive_cp = s.exclusive_cp;
    return ret;
}

CXIL_API int cxil_svc_set_vni_range(cxil_dev *dev, unsigned int svc_id, uint16_t vni_min,
                                    uint16_t vni_max) {
    if (!dev) return -EINVAL;
    Registry r = registry(dev);
    return set_vni_range(r, svc_id, vni_min, vni_max);
}

CXIL_API int cxil_svc_get_vni_range(cxil_dev *dev, unsigned int svc_id, uint16_t *vni_min,
                                    uint16_t *vni_max) {
    if (!dev || !vni_min || !vni_max) return -EINVAL;
    Service s;
    int ret = get_svc(registry(dev), svc_id, s);
    if (ret) return ret;
    if (s.desc.restricted_vnis || !s.has_range()) return -ENOENT;
    *vni_min = s.vni_min;
    *vni_max = s.vni_max;
    return 0;
}

CXIL_API int cxil_svc_set_netns(cxil_dev *dev, unsigned int svc_id, unsigned int netns) {
    if (!dev) return -EINVAL;
    Registry r = registry(dev);
    return edit_svc(r, svc_id, true, [&](Service &s) {
        for (const auto &m : s.desc.members)  // a namespace service has no uid/gid members
            if (m.type == CXI_SVC_MEMBER_UID || m.type == CXI_SVC_MEMBER_GID) return -EEXIST;
        s.netns = netns;
        s.desc.restricted_members = 1;
        return 0;
    });
}

CXIL_API int cxil_svc_get_netns(cxil_dev *dev, unsigned int svc_id, unsigned int *netns) {
    if (!dev || !netns) return -EINVAL;
    Service s;
    int ret = get_svc(registry(dev), svc_id, s);
    if (!ret) *netns = s.netns;
    return ret;
}

CXIL_API const char *cxi_rsrc_type_to_str(cxi_rsrc_type type) {
    return rsrc_name(type);
}

CXIL_API const char *cxi_tc_to_str(cxi_traffic_class tc) {
    return tc_name(tc);
}

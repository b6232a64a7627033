// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "usnic/fabric.hpp"

#include <rdma/fi_ext_usnic.h>

#include <cstdlib>
#include <cstring>

#include "common/eq.hpp"
#include "common/fi_api.hpp"
#include "common/log.hpp"
#include "common/not_supported.hpp"
#include "common/wait_set.hpp"
#include "usnic/cq.hpp"
#include "usnic/domain.hpp"
#include "usnic/pep.hpp"

namespace softnic::usnic {
namespace {

// A soft device has what the extension's capability list asks about; GRP_INTR is what
// FI_WAIT_FD needs.
const char *const kCapNames[] = {"USD_CAP_CQ_SHARING", "USD_CAP_MAP_PER_RES", "USD_CAP_PIO",
                                 "USD_CAP_CQ_INTR", "USD_CAP_GRP_INTR"};
const int kCapPresent[] = {1, 0, 0, 1, 1};
constexpr unsigned kNumVf = 64, kQpPerVf = 64, kCqPerVf = 64;

void copy_str(char *dst, size_t cap, const std::string &s) {
    std::strncpy(dst, s.c_str(), cap - 1);
    dst[cap - 1] = '\0';
}

void fill_v1(const Device &d, fi_usnic_info_v1 &v) {
    v.ui_link_speed = d.speed_mbps;
    v.ui_netmask_be = d.netmask_be;
    copy_str(v.ui_ifname, sizeof(v.ui_ifname), d.ifname);
    v.ui_num_vf = kNumVf;
    v.ui_qp_per_vf = kQpPerVf;
    v.ui_cq_per_vf = kCqPerVf;
}

int fill_v2(const Device &d, fi_usnic_info_v2 &v) {
    fi_usnic_info_v1 v1{};
    fill_v1(d, v1);
    std::memcpy(&v, &v1, sizeof(v1));  // v2 begins with v1's fields
    copy_str(v.ui_devname, sizeof(v.ui_devname), d.name);
    std::memcpy(v.ui_mac_addr, d.mac, 6);
    v.ui_ipaddr_be = d.ip_be;
    v.ui_prefixlen = d.prefixlen;
    v.ui_mtu = d.mtu;
    v.ui_link_up = d.link_up;
    v.ui_vendor_id = 0;  // not Cisco's 0x1137: the names below say what this is
    v.ui_vendor_part_id = 0;
    v.ui_device_id = 0;
    copy_str(v.ui_firmware, sizeof(v.ui_firmware), "softnic " SOFTNIC_VERSION);
    v.ui_intr_per_vf = 64;
    v.ui_max_cq = v.ui_max_qp = 1024;
    v.ui_max_cqe = 65535;
    v.ui_max_send_credits = v.ui_max_recv_credits = 4095;
    v.ui_nicname = "softnic usNIC";
    v.ui_pid = "softnic";
    auto **caps = static_cast<fi_usnic_cap **>(std::calloc(6, sizeof(fi_usnic_cap *)));
    if (!caps) return -FI_ENOMEM;
    for (int i = 0; i < 5; i++) {
        caps[i] = static_cast<fi_usnic_cap *>(std::calloc(1, sizeof(fi_usnic_cap)));
        if (!caps[i]) {
            for (int j = 0; j < i; j++)
                std::free(caps[j]);
            std::free(caps);
            return -FI_ENOMEM;
        }
        caps[i]->uc_capability = kCapNames[i];
        caps[i]->uc_present = kCapPresent[i];
    }
    v.ui_caps = caps;  // the caller frees the entries and the array
    return 0;
}

int ext_getinfo(uint32_t version, fid_fabric *fabric, fi_usnic_info *info) {
    if (!fabric || !info) SN_REJECT(-FI_EINVAL, FI_LOG_FABRIC, "NULL fabric or info\n");
    Device d = refresh(Fabric::of(fabric)->device());
    if (version == 1) {
        info->ui_version = 1;
        fill_v1(d, info->ui.v1);
        return 0;
    }
    if (version == 2) {
        info->ui_version = 2;
        return fill_v2(d, info->ui.v2);
    }
    SN_REJECT(-FI_EINVAL, FI_LOG_FABRIC, "getinfo extension version %u is not known\n", version);
}

fi_usnic_ops_fabric ext_ops = {sizeof(fi_usnic_ops_fabric), ext_getinfo};

int fabric_ops_open(fid *, const char *name, uint64_t, void **ops, void *) {
    if (!name || !ops) SN_REJECT(-FI_EINVAL, FI_LOG_FABRIC, "NULL name or ops\n");
    if (std::strcmp(name, FI_USNIC_FABRIC_OPS_1))
        SN_REJECT(-FI_EINVAL, FI_LOG_FABRIC, "unknown fabric ops \"%s\"\n", name);
    *ops = &ext_ops;
    return 0;
}

int fabric_close(fid *f) {
    Fabric *fab = owner_of_fid<Fabric, fid_fabric>(f);
    if (fab->refs().busy()) SN_REJECT(-FI_EBUSY, FI_LOG_FABRIC, "fabric still has objects\n");
    delete fab;
    return 0;
}

// usnic's EQ rules: FI_WAIT_UNSPEC becomes FD, size 0 becomes 1024 (written back),
// FI_WRITE gates fi_eq_write.
int check_eq_attr(fi_eq_attr &attr) {
    switch (attr.wait_obj) {
        case FI_WAIT_NONE:
        case FI_WAIT_FD:
            break;
        case FI_WAIT_UNSPEC:
            attr.wait_obj = FI_WAIT_FD;
            break;
        default:
            SN_REJECT(-FI_ENOSYS, FI_LOG_EQ, "EQ wait object %d is not supported\n", attr.wait_obj);
    }
    if (attr.flags & ~uint64_t(FI_WRITE))
        SN_REJECT(-FI_EINVAL, FI_LOG_EQ, "unknown EQ flags %#llx\n",
                  (unsigned long long)attr.flags);
    if (!attr.size) attr.size = 1024;
    return 0;
}

int fabric_eq_open(fid_fabric *f, fi_eq_attr *attr, fid_eq **eq, void *context) {
    if (!attr || !eq) SN_REJECT(-FI_EINVAL, FI_LOG_EQ, "NULL attr or eq\n");
    return guarded([&] {
        int ret = check_eq_attr(*attr);
        if (ret) return ret;
        EqRules rules;
        rules.capacity = attr->size;
        rules.write_needs_flag = rules.sread_needs_wait = true;
        rules.no_wait_code = rules.bad_control_code = -FI_EINVAL;
        Eq *e = new Eq(*attr, context, rules);
        e->hold_parent(Fabric::of(f)->refs());
        *eq = e->fid();
        return 0;
    });
}

int fabric_wait_open(fid_fabric *f, fi_wait_attr *attr, fid_wait **ws) {
    return WaitSet::open(owner_of<Fabric>(f)->refs(), attr, ws);
}

int fabric_trywait(fid_fabric *, fid **fids, int count) {
    if (count < 0 || (count && !fids)) SN_REJECT(-FI_EINVAL, FI_LOG_FABRIC, "bad fid list\n");
    for (int i = 0; i < count; i++) {
        if (!fids[i]) SN_REJECT(-FI_EINVAL, FI_LOG_FABRIC, "NULL fid\n");
        if (fids[i]->fclass == FI_CLASS_EQ) continue;
        int ret;
        if (fids[i]->fclass == FI_CLASS_WAIT)
            ret = owner_of_fid<WaitSet, fid_wait>(fids[i])->trywait();
        else if (fids[i]->fclass == FI_CLASS_CQ)
            ret = cq_trywait(reinterpret_cast<fid_cq *>(fids[i]));
        else
            SN_REJECT(-FI_EINVAL, FI_LOG_FABRIC, "fi_trywait takes CQs, EQs and wait sets\n");
        if (ret) return ret;
    }
    return 0;
}

int fabric_domain(fid_fabric *f, fi_info *info, fid_domain **dom, void *context) {
    return guarded([&] { return domain_open(Fabric::of(f), info, dom, context); });
}
int fabric_pep(fid_fabric *f, fi_info *info, fid_pep **pep, void *context) {
    return guarded([&] { return pep_open(Fabric::of(f), info, pep, context); });
}

fi_ops fabric_fid_ops = make_fid_ops(fabric_close, fid_no_bind, fid_no_control, fabric_ops_open);
fi_ops_fabric make_fabric_ops() {
    fi_ops_fabric o{};
    o.size = sizeof(o);
    o.domain = fabric_domain;
    o.passive_ep = fabric_pep;
    o.eq_open = fabric_eq_open;
    o.wait_open = fabric_wait_open;
    o.trywait = fabric_trywait;
    SN_NOT_SUPPORTED(o, domain2);
    return o;
}
fi_ops_fabric fabric_ops = make_fabric_ops();

}  // namespace

Fabric::Fabric(const Device &dev, void *context) : dev_(dev) {
    handle_.owner = this;
    handle_.fid.fid.fclass = FI_CLASS_FABRIC;
    handle_.fid.fid.context = context;
    handle_.fid.fid.ops = &fabric_fid_ops;
    handle_.fid.ops = &fabric_ops;
    handle_.fid.api_version = kBuiltApi;
}

Poller &Fabric::poller() {
    std::lock_guard<std::mutex> g(lock_);
    if (!poller_) poller_ = std::make_unique<Poller>();
    return *poller_;
}

int fabric_open(fi_fabric_attr *attr, fid_fabric **fabric, void *context) {
    if (!attr || !fabric) SN_REJECT(-FI_EINVAL, FI_LOG_FABRIC, "NULL attr or fabric\n");
    const Device *d = find_device(attr->name);
    if (!d)
        SN_REJECT(-FI_ENODEV, FI_LOG_FABRIC, "no usnic device for fabric \"%s\"\n",
                  attr->name ? attr->name : "(null)");
    return guarded([&] {
        auto *f = new Fabric(*d, context);
        *fabric = f->fid();
        return 0;
    });
}

}  // namespace softnic::usnic

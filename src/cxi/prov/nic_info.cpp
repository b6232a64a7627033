// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "cxi/prov/nic_info.hpp"

#include <rdma/fi_cxi_ext.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "common/fid.hpp"

namespace softnic::cxi {
namespace {

constexpr size_t kLinkSpeed = 200000000000ULL;  // Slingshot's 200 Gb/s, for the record

char *dup_or_null(const char *s) {
    return s ? strdup(s) : nullptr;
}

void free_nic(fid_nic *n) {
    if (!n) return;
    if (fi_device_attr *d = n->device_attr) {
        for (char *s :
             {d->name, d->device_id, d->device_version, d->vendor_id, d->driver, d->firmware})
            std::free(s);
        std::free(d);
    }
    if (n->link_attr) {
        std::free(n->link_attr->address);
        std::free(n->link_attr->network_type);
        std::free(n->link_attr);
    }
    std::free(n->bus_attr);
    std::free(n->prov_attr);
    std::free(n);
}

int nic_close(fid *f) {
    free_nic(reinterpret_cast<fid_nic *>(f));
    return 0;
}

fid_nic *copy_nic(const fid_nic &src);

int nic_control(fid *f, int command, void *arg) {
    if (command != FI_DUP || !arg) return -FI_EINVAL;
    fid_nic *copy = copy_nic(*reinterpret_cast<fid_nic *>(f));
    if (!copy) return -FI_ENOMEM;
    *static_cast<fid_nic **>(arg) = copy;
    return 0;
}

fi_ops nic_ops = make_fid_ops(nic_close, fid_no_bind, nic_control, fid_no_ops_open);

fid_nic *alloc_nic() {
    auto *n = static_cast<fid_nic *>(std::calloc(1, sizeof(fid_nic)));
    if (!n) return nullptr;
    n->fid.fclass = FI_CLASS_NIC;
    n->fid.ops = &nic_ops;
    n->device_attr = static_cast<fi_device_attr *>(std::calloc(1, sizeof(fi_device_attr)));
    n->bus_attr = static_cast<fi_bus_attr *>(std::calloc(1, sizeof(fi_bus_attr)));
    n->link_attr = static_cast<fi_link_attr *>(std::calloc(1, sizeof(fi_link_attr)));
    n->prov_attr = std::calloc(1, sizeof(cxip_nic_attr));
    if (!n->device_attr || !n->bus_attr || !n->link_attr || !n->prov_attr) {
        free_nic(n);
        return nullptr;
    }
    return n;
}

fid_nic *copy_nic(const fid_nic &src) {
    fid_nic *n = alloc_nic();
    if (!n) return nullptr;
    const fi_device_attr &d = *src.device_attr;
    *n->device_attr = fi_device_attr{dup_or_null(d.name),           dup_or_null(d.device_id),
                                     dup_or_null(d.device_version), dup_or_null(d.vendor_id),
                                     dup_or_null(d.driver),         dup_or_null(d.firmware)};
    *n->bus_attr = *src.bus_attr;
    *n->link_attr = *src.link_attr;
    n->link_attr->address = dup_or_null(src.link_attr->address);
    n->link_attr->network_type = dup_or_null(src.link_attr->network_type);
    std::memcpy(n->prov_attr, src.prov_attr, sizeof(cxip_nic_attr));
    return n;
}

}  // namespace

fid_nic *make_nic_info(const SoftNic &nic, uint32_t default_rgroup, uint16_t default_vni) {
    fid_nic *n = alloc_nic();
    if (!n) return nullptr;
    char addr[16];
    std::snprintf(addr, sizeof(addr), "0x%x", nic.addr);
    *n->device_attr =
        fi_device_attr{strdup(nic.name.c_str()), strdup("0x501"),   strdup("2"),
                       strdup("0x17db"),         strdup("softnic"), strdup("software")};
    n->bus_attr->bus_type = FI_BUS_UNKNOWN;  // no PCI device to match against
    *n->link_attr =
        fi_link_attr{strdup(addr), nic.mtu, kLinkSpeed, FI_LINK_UP, strdup("HPC Ethernet")};
    cxip_nic_attr attr{FI_CXI_NIC_ATTR_VER, nic.addr, default_rgroup, default_vni};
    std::memcpy(n->prov_attr, &attr, sizeof(attr));
    return n;
}

}  // namespace softnic::cxi

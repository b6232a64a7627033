// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// CXI services: who may use a soft NIC, on which VNIs and traffic classes, and how
// much of it. One registry per device, kept in a directory only root may change.
#pragma once

#include <libcxi/libcxi.h>

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace softnic::cxil {

// What the emulated NIC has of each resource (cxi_rsrc_type order).
constexpr std::array<uint16_t, CXI_RSRC_TYPE_MAX> kDeviceTotals = {
    2048,   // PTEs: portal table entries (receive contexts)
    1024,   // TXQs: transmit queues
    512,    // TGQs: target queues
    2048,   // EQs: event queues (completion queues)
    2048,   // CTs: counters
    16384,  // LEs: list entries (memory regions)
    2048,   // TLEs: triggered operations
    1022,   // ACs: address contexts (domains)
};
constexpr uint16_t kDefaultSvcTles = 512;
constexpr uint16_t kMinSvcTles = 8;

struct Service {
    cxi_svc_desc desc{};                // desc.enable: whether processes may use it now
    uint32_t lpr = 1;                   // LNIs per resource group
    uint16_t vni_min = 0, vni_max = 0;  // the VNI range of a service without a list
    uint32_t netns = 0;
    bool exclusive_cp = false;

    uint32_t id() const { return desc.svc_id; }
    bool has_range() const { return !desc.restricted_vnis && vni_max != 0; }
};

// The service every fresh node has: id 1, VNIs 1 and 10, open to everyone.
Service default_service();

// A device's registry: `<dir>/<device>.services`, written whole and renamed into place
// under `<dir>/<device>.lock`, so readers never see half a file.
class Registry {
  public:
    explicit Registry(std::string device);
    // The services, in id order; the default service when nothing was written yet.
    // -EIO (with `why`) when the file is damaged.
    int load(std::vector<Service> &out, std::string *why = nullptr) const;
    // Load, apply `change`, and store the result if it returned >= 0 (needs root).
    int modify(const std::function<int(std::vector<Service> &)> &change);
    const std::string &device() const { return device_; }
    // A registry file's bytes (untrusted: tests/fuzz feeds it anything).
    static int parse(const std::string &bytes, std::vector<Service> &out, std::string *why);
    // SOFTNIC_CXI_SERVICES when it names a directory owned by root and writable by root
    // alone, else /var/lib/softnic/cxi.
    static std::string dir();

  private:
    std::string device_;
};

// The rules of the service calls (services.cpp); negative errno as libCXI returns.
int alloc_svc(Registry &r, const cxi_svc_desc &desc, cxi_svc_fail_info *fail);
int destroy_svc(Registry &r, unsigned svc_id);
int update_svc(Registry &r, const cxi_svc_desc &desc, cxi_svc_fail_info *fail);
int get_svc(const Registry &r, unsigned svc_id, Service &out);
int edit_svc(Registry &r, unsigned svc_id, bool busy_matters,
             const std::function<int(Service &)> &change);
int set_vni_range(Registry &r, unsigned svc_id, uint16_t vni_min, uint16_t vni_max);

// "PTEs"..., "DEDICATED_ACCESS"...: "(invalid)" when out of range.
const char *rsrc_name(int type);
const char *tc_name(int tc);

// Who asks: the process's uid, groups and network namespace.
struct Caller {
    uid_t uid = 0;
    std::vector<gid_t> gids;
    uint64_t netns = 0;
    static Caller self();
};
bool is_member(const Service &s, const Caller &c);
bool vni_allowed(const Service &s, uint16_t vni);
bool tc_allowed(const Service &s, cxi_traffic_class tc);
// Spec §3.2 step 2-3: the service this caller gets without asking (highest id first:
// its network namespace, then uid, then gid, then an unrestricted one), and its VNI.
bool pick_default(const std::vector<Service> &svcs, const Caller &c, uint16_t default_vni,
                  uint32_t &svc_id, uint16_t &vni);

}  // namespace softnic::cxil

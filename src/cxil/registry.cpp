// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The on-disk registry of one device's services. The file is trusted no more than
// anything else: a damaged one is reported, never half used.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>

#include "cxil/service.hpp"
#include "cxil/usage.hpp"

namespace softnic::cxil {
namespace {

constexpr char kMagic[8] = {'S', 'N', 'C', 'X', 'I', 'S', 'V', '1'};
constexpr uint32_t kMaxServices = 1024;

struct FileHeader {
    char magic[8];
    uint32_t count;
    uint32_t rsvd;
};

struct Record {
    cxi_svc_desc desc;
    uint32_t lpr;
    uint16_t vni_min, vni_max;
    uint32_t netns;
    uint8_t exclusive_cp;
    uint8_t pad[3];
};

// A descriptor as the registry may hold it. Enum and bool fields are checked as
// raw bytes: loading an out-of-range value through its own type is already undefined.
bool sane(const Record &r) {
    const cxi_svc_desc &d = r.desc;
    if (d.svc_id < 1 || d.num_vld_vnis > CXI_SVC_MAX_VNIS) return false;
    for (const auto &m : d.members) {
        int type;
        static_assert(sizeof(type) == sizeof(m.type));
        std::memcpy(&type, &m.type, sizeof(type));
        if (type < CXI_SVC_MEMBER_IGNORE || type >= CXI_SVC_MEMBER_MAX) return false;
    }
    uint8_t tcs[sizeof(d.tcs)];
    std::memcpy(tcs, d.tcs, sizeof(tcs));
    for (uint8_t b : tcs)
        if (b > 1) return false;
    return r.vni_min <= r.vni_max && r.exclusive_cp <= 1;
}

std::string path_of(const std::string &device, const char *suffix) {
    return Registry::dir() + "/" + device + suffix;
}

bool read_all(int fd, std::string &out) {
    char buf[65536];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return false;
        if (n == 0) return true;
        out.append(buf, size_t(n));
        if (out.size() > sizeof(FileHeader) + kMaxServices * sizeof(Record)) return false;
    }
}

int parse_bytes(const std::string &bytes, std::vector<Service> &out, std::string *why) {
    auto fail = [&](const char *w) {
        if (why) *why = w;
        return -EIO;
    };
    FileHeader h;
    if (bytes.size() < sizeof(h)) return fail("short header");
    std::memcpy(&h, bytes.data(), sizeof(h));
    if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0) return fail("not a service registry");
    if (h.count > kMaxServices || bytes.size() != sizeof(h) + h.count * sizeof(Record))
        return fail("size does not match its count");
    std::set<uint32_t> ids;
    for (uint32_t i = 0; i < h.count; i++) {
        Record r;
        std::memcpy(&r, bytes.data() + sizeof(h) + i * sizeof(Record), sizeof(r));
        if (!sane(r) || !ids.insert(r.desc.svc_id).second) return fail("bad service record");
        Service s;
        s.desc = r.desc;
        s.lpr = r.lpr;
        s.vni_min = r.vni_min;
        s.vni_max = r.vni_max;
        s.netns = r.netns;
        s.exclusive_cp = r.exclusive_cp;
        out.push_back(s);
    }
    return 0;
}

int store(const std::string &path, const std::vector<Service> &svcs) {
    std::string bytes(sizeof(FileHeader) + svcs.size() * sizeof(Record), '\0');
    FileHeader h{};
    std::memcpy(h.magic, kMagic, sizeof(kMagic));
    h.count = uint32_t(svcs.size());
    std::memcpy(bytes.data(), &h, sizeof(h));
    for (size_t i = 0; i < svcs.size(); i++) {
        Record r{};
        r.desc = svcs[i].desc;
        r.lpr = svcs[i].lpr;
        r.vni_min = svcs[i].vni_min;
        r.vni_max = svcs[i].vni_max;
        r.netns = svcs[i].netns;
        r.exclusive_cp = svcs[i].exclusive_cp;
        std::memcpy(bytes.data() + sizeof(h) + i * sizeof(r), &r, sizeof(r));
    }
    std::string tmp = path + ".tmp." + std::to_string(getpid());
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return -errno;
    bool ok = write(fd, bytes.data(), bytes.size()) == ssize_t(bytes.size()) && fsync(fd) == 0;
    close(fd);
    if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
        int e = errno ? errno : EIO;
        unlink(tmp.c_str());
        return -e;
    }
    return 0;
}

}  // namespace

Service default_service() {
    Service s;
    cxi_svc_desc &d = s.desc;
    d.svc_id = CXI_DEFAULT_SVC_ID;
    d.enable = 1;
    d.restricted_vnis = 1;
    d.num_vld_vnis = 2;
    d.vnis[0] = 1;
    d.vnis[1] = 10;
    d.resource_limits = 1;
    for (int t = 0; t < CXI_RSRC_TYPE_MAX; t++)
        d.limits.type[t].max = kDeviceTotals[t];
    d.limits.tles.max = d.limits.tles.res = kDefaultSvcTles;
    for (int tc = CXI_TC_DEDICATED_ACCESS; tc <= CXI_TC_BEST_EFFORT; tc++)
        d.tcs[tc] = true;
    return s;
}

Registry::Registry(std::string device) : device_(std::move(device)) {}

std::string Registry::dir() {
    const char *d = std::getenv("SOFTNIC_CXI_SERVICES");
    struct stat st;
    if (d && *d == '/' && stat(d, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 &&
        !(st.st_mode & (S_IWGRP | S_IWOTH)))
        return d;
    return "/var/lib/softnic/cxi";
}

int Registry::load(std::vector<Service> &out, std::string *why) const {
    out.clear();
    int fd = open(path_of(device_, ".services").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT) return -errno;
        out.push_back(default_service());
        return 0;
    }
    std::string bytes;
    bool ok = read_all(fd, bytes);
    close(fd);
    if (!ok) {
        if (why) *why = "unreadable or too large";
        return -EIO;
    }
    return parse_bytes(bytes, out, why);
}

int Registry::parse(const std::string &bytes, std::vector<Service> &out, std::string *why) {
    return parse_bytes(bytes, out, why);
}

int Registry::modify(const std::function<int(std::vector<Service> &)> &change) {
    if (geteuid() != 0) return -EPERM;
    std::string d = dir();
    for (size_t pos = 1; pos != std::string::npos;) {  // mkdir -p, mode 0755
        pos = d.find('/', pos + 1);
        std::string part = d.substr(0, pos);
        if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return -errno;
    }
    int lock = open(path_of(device_, ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock < 0) return -errno;
    int ret = flock(lock, LOCK_EX) == 0 ? 0 : -errno;
    std::vector<Service> svcs;
    if (!ret) ret = load(svcs);
    if (!ret) ret = change(svcs);
    if (ret >= 0) {
        int s = store(path_of(device_, ".services"), svcs);
        if (s) ret = s;
    }
    close(lock);             // releases the lock
    Usage make_it(device_);  // root creates the usage table beside the registry
    return ret;
}

}  // namespace softnic::cxil

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "cxil/devices.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

namespace softnic::cxil {
namespace {

std::vector<std::string> split(const std::string &s, char sep) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, sep))
        if (!item.empty()) out.push_back(item);
    return out;
}

unsigned if_mtu(const std::string &ifname) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) return 1500;
    ifreq req{};
    std::strncpy(req.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
    unsigned mtu = ioctl(fd, SIOCGIFMTU, &req) == 0 ? unsigned(req.ifr_mtu) : 1500;
    close(fd);
    return mtu;
}

// (interface, IPv4 in host order) pairs of the host.
std::vector<std::pair<std::string, uint32_t>> ipv4_interfaces() {
    std::vector<std::pair<std::string, uint32_t>> out;
    ifaddrs *list = nullptr;
    if (getifaddrs(&list) != 0) return out;
    for (ifaddrs *i = list; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
        auto *sin = reinterpret_cast<sockaddr_in *>(i->ifa_addr);
        out.emplace_back(i->ifa_name, ntohl(sin->sin_addr.s_addr));
    }
    freeifaddrs(list);
    return out;
}

}  // namespace

bool is_host_ipv4(uint32_t ipv4) {
    if ((ipv4 >> 24) == 127) return true;
    for (const auto &[name, ip] : ipv4_interfaces())
        if (ip == ipv4) return true;
    return false;
}

namespace {

std::string default_route_if() {
    std::ifstream f("/proc/net/route");
    std::string line;
    std::getline(f, line);  // header
    while (std::getline(f, line)) {
        std::istringstream ls(line);
        std::string ifname, dest;
        ls >> ifname >> dest;
        if (dest == "00000000") return ifname;
    }
    return "";
}

// Resolve one FI_CXI_SOFT_NICS token (an IPv4 address or an interface name).
bool resolve(const std::string &tok, std::string &ifname, uint32_t &ipv4) {
    in_addr a{};
    auto ifs = ipv4_interfaces();
    if (inet_pton(AF_INET, tok.c_str(), &a) == 1) {
        ipv4 = ntohl(a.s_addr);
        ifname = "lo";
        for (auto &[n, ip] : ifs)
            if (ip == ipv4) ifname = n;
        return true;
    }
    for (auto &[n, ip] : ifs) {
        if (n == tok) {
            ifname = n;
            ipv4 = ip;
            return true;
        }
    }
    return false;
}

bool device_allowed(const std::string &name, const std::string &filter, const Warn &warn) {
    if (filter.empty()) return true;
    auto names = split(filter, ',');
    for (auto &n : names) {  // a malformed list is ignored entirely, as upstream does
        if (n.size() < 4 || n.compare(0, 3, "cxi") ||
            n.find_first_not_of("0123456789", 3) != std::string::npos) {
            warn("ignoring malformed FI_CXI_DEVICE_NAME=" + filter);
            return true;
        }
    }
    for (auto &n : names)
        if (n == name) return true;
    return false;
}

}  // namespace

std::vector<SoftNic> discover(const std::string &soft_nics, const std::string &device_filter,
                              const Warn &warn) {
    std::vector<std::string> tokens = split(soft_nics, ',');
    if (tokens.empty()) {
        std::string dflt = default_route_if();
        tokens.push_back(dflt.empty() ? "127.0.0.1" : dflt);
    }
    std::vector<SoftNic> nics;
    for (unsigned i = 0; i < tokens.size(); i++) {
        std::string ifname;
        uint32_t ip = 0;
        if (!resolve(tokens[i], ifname, ip)) {
            warn("soft NIC " + tokens[i] + ": no such address or interface");
            continue;
        }
        SoftNic n{i, "cxi" + std::to_string(i), ifname, ip, ip & kNicAddrMask, if_mtu(ifname)};
        if (device_allowed(n.name, device_filter, warn)) nics.push_back(n);
    }
    return nics;
}

}  // namespace softnic::cxil

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "usnic/devices.hpp"

#include <arpa/inet.h>
#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>

#include "common/log.hpp"

namespace softnic::usnic {
namespace {

std::string g_filter;
bool g_filter_set = false;

std::vector<std::string> split(const std::string &s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    for (std::string t; std::getline(ss, t, ',');)
        if (!t.empty()) out.push_back(t);
    return out;
}

unsigned read_speed(const std::string &ifname) {
    std::ifstream f("/sys/class/net/" + ifname + "/speed");
    long v = 0;
    if (!(f >> v) || v <= 0) return 0;  // loopback and virtual links have none
    return static_cast<unsigned>(v);
}

struct NlCaches {
    nl_sock *sock = nullptr;
    nl_cache *links = nullptr, *addrs = nullptr;
    NlCaches() {
        sock = nl_socket_alloc();
        if (!sock || nl_connect(sock, NETLINK_ROUTE) < 0) return;
        if (rtnl_link_alloc_cache(sock, AF_UNSPEC, &links) < 0) links = nullptr;
        if (rtnl_addr_alloc_cache(sock, &addrs) < 0) addrs = nullptr;
    }
    ~NlCaches() {
        if (addrs) nl_cache_free(addrs);
        if (links) nl_cache_free(links);
        if (sock) nl_socket_free(sock);
    }
    bool ok() const { return links && addrs; }
};

// The first IPv4 address of an interface, with its prefix length.
bool ipv4_of(nl_cache *addrs, int ifindex, uint32_t &ip_be, unsigned &prefixlen) {
    for (nl_object *o = nl_cache_get_first(addrs); o; o = nl_cache_get_next(o)) {
        auto *a = reinterpret_cast<rtnl_addr *>(o);
        if (rtnl_addr_get_ifindex(a) != ifindex || rtnl_addr_get_family(a) != AF_INET) continue;
        nl_addr *local = rtnl_addr_get_local(a);
        if (!local || nl_addr_get_len(local) != 4) continue;
        std::memcpy(&ip_be, nl_addr_get_binary_addr(local), 4);
        prefixlen = static_cast<unsigned>(rtnl_addr_get_prefixlen(a));
        return true;
    }
    return false;
}

// Fill one device from its link; false when it cannot serve (down, no IPv4).
bool describe(NlCaches &nl, rtnl_link *l, Device &d) {
    d.ifname = rtnl_link_get_name(l);
    d.ifindex = rtnl_link_get_ifindex(l);
    unsigned flags = rtnl_link_get_flags(l);
    d.link_up = (flags & IFF_UP) && ((flags & IFF_RUNNING) || (flags & IFF_LOOPBACK));
    d.mtu = rtnl_link_get_mtu(l);
    if (nl_addr *hw = rtnl_link_get_addr(l); hw && nl_addr_get_len(hw) == 6)
        std::memcpy(d.mac, nl_addr_get_binary_addr(hw), 6);
    if (!ipv4_of(nl.addrs, d.ifindex, d.ip_be, d.prefixlen)) {
        SN_INFO(FI_LOG_FABRIC, "%s has no IPv4 address: not a usnic device\n", d.ifname.c_str());
        return false;
    }
    if (!(flags & IFF_UP)) {
        SN_INFO(FI_LOG_FABRIC, "%s is down: not a usnic device\n", d.ifname.c_str());
        return false;
    }
    d.netmask_be = d.prefixlen ? htonl(~0u << (32 - d.prefixlen)) : 0;
    d.speed_mbps = read_speed(d.ifname);
    return true;
}

std::vector<Device> scan() {
    std::vector<Device> out;
    NlCaches nl;
    if (!nl.ok()) {
        SN_WARN(FI_LOG_FABRIC, "netlink is not available: no usnic devices\n");
        return out;
    }
    std::vector<std::string> wanted = split(g_filter);
    auto take = [&](rtnl_link *l) {
        Device d;
        if (!describe(nl, l, d)) return;
        d.index = static_cast<unsigned>(out.size());
        d.name = "usnic_" + std::to_string(d.index);
        out.push_back(d);
    };
    if (g_filter_set) {
        for (const auto &name : wanted) {
            rtnl_link *l = rtnl_link_get_by_name(nl.links, name.c_str());
            if (!l) {
                SN_WARN(FI_LOG_FABRIC, "FI_USNIC_IFACES names %s, which does not exist\n",
                        name.c_str());
                continue;
            }
            take(l);
            rtnl_link_put(l);
        }
        return out;
    }
    for (nl_object *o = nl_cache_get_first(nl.links); o; o = nl_cache_get_next(o)) {
        auto *l = reinterpret_cast<rtnl_link *>(o);
        if (rtnl_link_get_flags(l) & IFF_LOOPBACK) continue;  // only on request
        take(l);
    }
    return out;
}

}  // namespace

std::string Device::ip_string() const {
    char b[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &ip_be, b, sizeof(b));
    return b;
}

std::string Device::cidr() const {
    uint32_t net = ip_be & netmask_be;
    char b[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &net, b, sizeof(b));
    return std::string(b) + "/" + std::to_string(prefixlen);
}

void set_iface_filter(const std::string &list) {
    g_filter = list;
    g_filter_set = true;
}

const std::vector<Device> &devices() {
    static std::once_flag once;
    static std::vector<Device> list;
    std::call_once(once, [] { list = scan(); });
    return list;
}

const Device *find_device(const char *name) {
    if (!name) return nullptr;
    for (const auto &d : devices())
        if (d.name == name || d.cidr() == name) return &d;
    return nullptr;
}

Device refresh(const Device &d) {
    NlCaches nl;
    Device now = d;
    if (!nl.ok()) return now;
    if (rtnl_link *l = rtnl_link_get(nl.links, d.ifindex)) {
        Device fresh;
        if (describe(nl, l, fresh)) {
            fresh.index = d.index;
            fresh.name = d.name;
            now = fresh;
        } else {
            now.link_up = false;
        }
        rtnl_link_put(l);
    }
    return now;
}

}  // namespace softnic::usnic

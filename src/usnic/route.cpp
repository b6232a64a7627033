// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "usnic/route.hpp"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "common/log.hpp"
#include "usnic/devices.hpp"

namespace softnic::usnic {
namespace {

struct Request {
    nlmsghdr nh;
    rtmsg rt;
    char attrs[64];
};

void add_attr(Request &r, unsigned short type, const void *data, unsigned short len) {
    auto *a =
        reinterpret_cast<rtattr *>(reinterpret_cast<char *>(&r) + NLMSG_ALIGN(r.nh.nlmsg_len));
    a->rta_type = type;
    a->rta_len = static_cast<unsigned short>(RTA_LENGTH(len));
    std::memcpy(RTA_DATA(a), data, len);
    r.nh.nlmsg_len = NLMSG_ALIGN(r.nh.nlmsg_len) + RTA_ALIGN(a->rta_len);
}

// Parse the kernel's RTM_NEWROUTE answer (bytes from the kernel: still checked).
int parse_answer(const char *buf, ssize_t n, int ifindex) {
    auto *nh = reinterpret_cast<const nlmsghdr *>(buf);
    if (n < static_cast<ssize_t>(sizeof(nlmsghdr)) || !NLMSG_OK(nh, static_cast<unsigned>(n)))
        return -1;
    if (nh->nlmsg_type != RTM_NEWROUTE) return -1;  // NLMSG_ERROR: no route
    auto *rt = static_cast<const rtmsg *>(NLMSG_DATA(nh));
    int len = static_cast<int>(nh->nlmsg_len) - static_cast<int>(NLMSG_LENGTH(sizeof(*rt)));
    if (len < 0) return -1;
    int oif = -1;
    bool gateway = false;
    for (auto *a = RTM_RTA(rt); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
        if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) >= sizeof(int))
            std::memcpy(&oif, RTA_DATA(a), sizeof(int));
        if (a->rta_type == RTA_GATEWAY) gateway = true;
    }
    if (oif != ifindex) return -1;
    return gateway ? 1 : 0;
}

int ask_kernel(const Device &dev, uint32_t dst_be) {
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0) return -1;
    timeval tv{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    Request r{};
    r.nh.nlmsg_len = NLMSG_LENGTH(sizeof(rtmsg));
    r.nh.nlmsg_type = RTM_GETROUTE;
    r.nh.nlmsg_flags = NLM_F_REQUEST;
    r.nh.nlmsg_seq = 1;
    r.rt.rtm_family = AF_INET;
    r.rt.rtm_dst_len = 32;
    r.rt.rtm_src_len = 32;
    add_attr(r, RTA_DST, &dst_be, 4);
    add_attr(r, RTA_SRC, &dev.ip_be, 4);
    int result = -1;
    if (send(fd, &r, r.nh.nlmsg_len, 0) == static_cast<ssize_t>(r.nh.nlmsg_len)) {
        char buf[4096];
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        result = parse_answer(buf, n, dev.ifindex);
    }
    close(fd);
    return result;
}

}  // namespace

int route_distance(const Device &dev, uint32_t dst_be) {
    if (dst_be == dev.ip_be) return 0;  // the device itself: software loops back (FI_LOCAL_COMM)
    using Clock = std::chrono::steady_clock;
    static std::mutex lock;
    static std::map<std::tuple<uint32_t, uint32_t, int>, std::pair<int, Clock::time_point>> cache;
    auto key = std::make_tuple(dev.ip_be, dst_be, dev.ifindex);
    auto now = Clock::now();
    {
        std::lock_guard<std::mutex> g(lock);
        auto it = cache.find(key);
        if (it != cache.end() && now - it->second.second < std::chrono::seconds(120))
            return it->second.first;
    }
    int d = ask_kernel(dev, dst_be);
    std::lock_guard<std::mutex> g(lock);
    cache[key] = {d, now};
    return d;
}

}  // namespace softnic::usnic

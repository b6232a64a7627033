// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What the network-facing harnesses share: one endpoint opened through the real
// libfabric (the plugins of this build, instrumented), a way to drive its progress, and
// a UDP socket to throw bytes at it from outside.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace fuzz {

[[noreturn]] inline void die(const char *what, int rc) {
    std::fprintf(stderr, "fuzz setup: %s: %d\n", what, rc);
    std::abort();
}

// Loads this build's plugins, quietly, with the progress thread off (deterministic).
inline void use_build_plugins() {
    setenv("FI_PROVIDER_PATH", SOFTNIC_PLUGIN_DIR, 1);
    setenv("FI_LOG_LEVEL", "none", 0);
    setenv("FI_CXI_OFFLOAD", "0", 1);
    setenv("FI_CXI_SOFT_NICS", "127.0.0.1", 1);
    setenv("FI_USNIC_IFACES", "lo", 1);
}

struct Endpoint {
    fi_info *info = nullptr;
    fid_fabric *fabric = nullptr;
    fid_domain *domain = nullptr;
    fid_av *av = nullptr;
    fid_cq *cq = nullptr;
    fid_ep *ep = nullptr;
    uint8_t name[64] = {};
    size_t name_len = sizeof(name);

    Endpoint(const char *prov, fi_ep_type type, const char *node = nullptr) {
        fi_info *hints = fi_allocinfo();
        hints->fabric_attr->prov_name = strdup(prov);
        hints->ep_attr->type = type;
        hints->caps = FI_MSG;
        hints->mode = ~0ULL;
        hints->domain_attr->mr_mode =
            FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
        int rc = fi_getinfo(FI_VERSION(1, 15), node, nullptr, 0, hints, &info);
        fi_freeinfo(hints);
        if (rc) die("fi_getinfo", rc);
        if ((rc = fi_fabric(info->fabric_attr, &fabric, nullptr))) die("fi_fabric", rc);
        if ((rc = fi_domain(fabric, info, &domain, nullptr))) die("fi_domain", rc);
        fi_av_attr aa{};
        aa.type = FI_AV_TABLE;
        if ((rc = fi_av_open(domain, &aa, &av, nullptr))) die("fi_av_open", rc);
        fi_cq_attr ca{};
        ca.format = FI_CQ_FORMAT_MSG;
        if ((rc = fi_cq_open(domain, &ca, &cq, nullptr))) die("fi_cq_open", rc);
        if ((rc = fi_endpoint(domain, info, &ep, nullptr))) die("fi_endpoint", rc);
        if ((rc = fi_ep_bind(ep, &av->fid, 0))) die("bind av", rc);
        if ((rc = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV))) die("bind cq", rc);
        if ((rc = fi_enable(ep))) die("fi_enable", rc);
        if ((rc = fi_getname(&ep->fid, name, &name_len))) die("fi_getname", rc);
    }
    ~Endpoint() {
        for (fid *f : {&ep->fid, &cq->fid, &av->fid, &domain->fid, &fabric->fid})
            fi_close(f);
        fi_freeinfo(info);
    }
    Endpoint(const Endpoint &) = delete;
    Endpoint &operator=(const Endpoint &) = delete;
    // Drives progress and empties the CQ (errors included) so that nothing builds up.
    void progress(int rounds) {
        for (int i = 0; i < rounds; i++) {
            fi_cq_msg_entry e[8];
            if (fi_cq_read(cq, e, 8) == -FI_EAVAIL) {
                fi_cq_err_entry err{};
                fi_cq_readerr(cq, &err, 0);
            }
        }
    }
};

// A UDP socket on loopback that sends raw datagrams to a port.
struct Thrower {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    Thrower() = default;
    ~Thrower() {
        if (fd >= 0) close(fd);
    }
    Thrower(const Thrower &) = delete;
    Thrower &operator=(const Thrower &) = delete;
    void to(uint16_t port, const uint8_t *data, size_t size) const {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        sendto(fd, data, size, 0, reinterpret_cast<const sockaddr *>(&a), sizeof(a));
    }
};

}  // namespace fuzz

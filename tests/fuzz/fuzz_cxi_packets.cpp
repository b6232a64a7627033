// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Bytes another process or host controls, thrown at a cxi endpoint. The first input byte
// picks the path: 0, a record in the endpoint's shared-memory receive ring; 1, a UDP
// datagram to its port, through the reliability layer; 2, scribbles on the ring segment
// itself (pairs of a 16-bit offset and a byte: control words, cell headers, anything),
// after which the endpoint is opened afresh. The endpoint must drop what is bad and
// count it, never crash or hang.
#include <algorithm>
#include <memory>
#include <string>

#include "fuzz_endpoint.hpp"
#include "transport/shm/ring.hpp"
#include "transport/shm/shm_transport.hpp"

namespace {

constexpr int kPortBase = 30720;  // FI_CXI_UDP_PORT_BASE: away from other runs' ports
constexpr unsigned kVni = 1;      // the default service's VNI

struct Target {
    fuzz::Endpoint ep{"cxi", FI_EP_RDM};
    std::unique_ptr<softnic::transport::shm::ShmLink> ring;
    fuzz::Thrower udp;
    uint16_t port = 0;
    std::string ring_name;
    Target() {
        uint32_t word = 0;
        std::memcpy(&word, ep.name, sizeof(word));
        uint32_t pid = word & 0x1ff, nic = (word >> 9) & 0xfffff;
        char name[64];
        std::snprintf(name, sizeof(name), "/softnic-cxi-%05x-%u-%u", nic, kVni, pid);
        ring_name = name;
        int err = 0;
        ring = softnic::transport::shm::ShmLink::open(name, err);
        if (!ring) fuzz::die("ShmLink::open (ring name scheme changed?)", err);
        port = uint16_t(kPortBase + (kVni % 16) * 512 + pid);
    }
};

Target *target;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    fuzz::use_build_plugins();
    setenv("FI_CXI_UDP_PORT_BASE", std::to_string(kPortBase).c_str(), 1);
    target = new Target;  // lives for the whole run
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const uint8_t *pkt = data + 1;
    size_t n = size - 1;
    if (data[0] % 3 == 1) {
        target->udp.to(target->port, pkt, n);
    } else if (data[0] % 3 == 2) {
        softnic::transport::shm::Segment seg;
        if (seg.open(target->ring_name) == 0) {
            auto *bytes = static_cast<uint8_t *>(seg.addr());
            for (size_t i = 0; i + 3 <= n; i += 3) {
                size_t off = (size_t(pkt[i]) | size_t(pkt[i + 1]) << 8) % seg.size();
                bytes[off] = pkt[i + 2];
            }
        }
        target->ep.progress(70);
        delete target;  // the ring may be wrecked for good: start over
        target = new Target;
        return 0;
    } else {
        n = std::min(n, target->ring->max_packet());
        iovec iov{const_cast<uint8_t *>(pkt), n};
        for (int tries = 0; tries < 1000 && !target->ring->send(nullptr, 0, &iov, 1, false);)
            target->ep.progress(++tries);  // ring full: let the endpoint drain it
    }
    target->ep.progress(70);  // without the helper thread, the socket is read every 64 calls
    return 0;
}

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Datagrams from anywhere on the network, thrown at usnic endpoints: the first input
// byte picks the target (even: a DGRAM endpoint, whose receives see the raw datagram
// behind the 16-byte prefix; odd: an RDM endpoint, whose reliable layer parses its own
// header first). They must drop what is bad, never crash or hang.
#include "fuzz_endpoint.hpp"

namespace {

struct Targets {
    fuzz::Endpoint dgram{"usnic", FI_EP_DGRAM, "127.0.0.1"};
    fuzz::Endpoint rdm{"usnic", FI_EP_RDM, "127.0.0.1"};
    fuzz::Thrower udp;
    char buf[2][4096];
    Targets() { repost(); }
    static uint16_t port_of(const fuzz::Endpoint &e) {
        sockaddr_in a;
        std::memcpy(&a, e.name, sizeof(a));
        return ntohs(a.sin_port);
    }
    // Keeps a receive posted on each so that well-formed datagrams are delivered too.
    void repost() {
        fi_recv(dgram.ep, buf[0], sizeof(buf[0]), nullptr, FI_ADDR_UNSPEC, nullptr);
        fi_recv(rdm.ep, buf[1], sizeof(buf[1]), nullptr, FI_ADDR_UNSPEC, nullptr);
    }
};

Targets *targets;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    fuzz::use_build_plugins();
    targets = new Targets;
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    fuzz::Endpoint &e = data[0] & 1 ? targets->rdm : targets->dgram;
    targets->udp.to(Targets::port_of(e), data + 1, size - 1);
    e.progress(8);
    targets->repost();  // refused with -FI_EAGAIN once the receive queue is full
    return 0;
}

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "usnic/params.hpp"

#include <algorithm>
#include <string>

#include "common/params.hpp"
#include "transport/udp/fault.hpp"
#include "usnic/caps.hpp"
#include "usnic/devices.hpp"

namespace softnic::usnic {
namespace {
transport::udp::FaultConfig g_faults;
uint32_t g_dead_after_ms = transport::udp::UdpConfig{}.dead_after_ms;
}  // namespace

void define_params(const fi_provider *p) {
    params::define_str(p, "ifaces",
                       "Interfaces that become usnic devices, comma separated (loopback only when "
                       "named). Default: every up interface but loopback with an IPv4 address.");
    params::define_str(p, "faults",
                       "Fault injection on the send path of MSG and RDM endpoints: "
                       "drop=P,dup=P,reorder=P,delay=P,delay_us=N,seed=N (percentages).");
    params::define_int(p, "dead_timeout",
                       "Milliseconds without a word from an RDM or MSG peer, after 20 "
                       "retransmission timeouts in a row, before it is declared dead.");
}

void load_params(const fi_provider *p) {
    std::string s;
    if (params::get_str(p, "ifaces", s)) set_iface_filter(s);
    int ms = 0;
    if (params::get_int(p, "dead_timeout", ms))
        g_dead_after_ms = uint32_t(std::clamp(ms, 0, 3600000));
    if (params::get_str(p, "faults", s)) {
        std::string err;
        transport::udp::FaultConfig f;
        if (transport::udp::parse_faults(s, f, err))
            g_faults = f;
        else
            SN_WARN(FI_LOG_CORE, "FI_USNIC_FAULTS: %s (ignored)\n", err.c_str());
    }
}

transport::udp::UdpConfig udp_config(const Device &dev) {
    transport::udp::UdpConfig c;
    c.max_datagram = std::min<size_t>(dev.mtu > 28 ? dev.mtu - 28 : 548, kMaxUdpPayload);
    c.faults = g_faults;
    c.dead_after_ms = g_dead_after_ms;
    return c;
}

}  // namespace softnic::usnic

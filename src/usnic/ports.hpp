// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Source ports named as fi_getinfo's service with FI_SOURCE are preferences, not
// demands: on one host the client of an out-of-band address exchange (fabtests' -E,
// runfabtests.sh -b) asks for the same port as its server, and its address travels out
// of band anyway. A port in an address the application built itself stays exclusive.
#pragma once

#include <cstdint>

namespace softnic::usnic {

// fi_getinfo saw `port_be` as an FI_SOURCE service in this process.
void note_service_port(uint16_t port_be);
// Whether a taken `port_be` may give way to an ephemeral port at fi_enable.
bool is_service_port(uint16_t port_be);

}  // namespace softnic::usnic

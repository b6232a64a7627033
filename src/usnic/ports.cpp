// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "usnic/ports.hpp"

#include <mutex>
#include <set>

namespace softnic::usnic {
namespace {

std::mutex g_lock;
std::set<uint16_t> g_ports;  // few: one per distinct service an application names

}  // namespace

void note_service_port(uint16_t port_be) {
    if (!port_be) return;
    std::lock_guard<std::mutex> g(g_lock);
    g_ports.insert(port_be);
}

bool is_service_port(uint16_t port_be) {
    std::lock_guard<std::mutex> g(g_lock);
    return g_ports.count(port_be) != 0;
}

}  // namespace softnic::usnic

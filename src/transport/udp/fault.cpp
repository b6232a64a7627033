// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "transport/udp/fault.hpp"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <sstream>

namespace softnic::transport::udp {

bool parse_faults(const std::string &spec, FaultConfig &out, std::string &error) {
    FaultConfig c;
    std::stringstream ss(spec);
    std::string tok;
    while (std::getline(ss, tok, ',')) {
        if (tok.empty()) continue;
        auto eq = tok.find('=');
        std::string key = tok.substr(0, eq);
        char *end = nullptr;
        unsigned long long v =
            eq == std::string::npos ? 0 : strtoull(tok.c_str() + eq + 1, &end, 0);
        if (eq == std::string::npos || !end || *end) {
            error = "bad token \"" + tok + "\"";
            return false;
        }
        bool percent = key == "drop" || key == "dup" || key == "reorder" || key == "delay";
        if (percent && v > 100) {
            error = key + " is a percentage (0-100)";
            return false;
        }
        if (key == "drop")
            c.drop = unsigned(v);
        else if (key == "dup")
            c.dup = unsigned(v);
        else if (key == "reorder")
            c.reorder = unsigned(v);
        else if (key == "delay")
            c.delay = unsigned(v);
        else if (key == "delay_us")
            c.delay_us = unsigned(v);
        else if (key == "seed")
            c.seed = v;
        else {
            error = "unknown fault \"" + key + "\"";
            return false;
        }
    }
    out = c;
    return true;
}

FaultInjector::FaultInjector(const FaultConfig &c) : c_(c) {
    rng_ = c.seed ? c.seed
                  : uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                        (uint64_t(getpid()) << 32);
    rng_ |= 1;
}

unsigned FaultInjector::roll() {  // xorshift64*: cheap and good enough for fault rates
    rng_ ^= rng_ >> 12;
    rng_ ^= rng_ << 25;
    rng_ ^= rng_ >> 27;
    return unsigned(((rng_ * 0x2545F4914F6CDD1DULL) >> 33) % 100);
}

FaultInjector::Verdict FaultInjector::decide() {
    if (c_.drop && roll() < c_.drop) {
        dropped++;
        return Verdict::kDrop;
    }
    if (c_.dup && roll() < c_.dup) {
        duplicated++;
        return Verdict::kDuplicate;
    }
    if (c_.reorder && roll() < c_.reorder) {
        reordered++;
        pending_delay_ = false;
        return Verdict::kHold;
    }
    if (c_.delay && roll() < c_.delay) {
        delayed++;
        pending_delay_ = true;
        return Verdict::kHold;
    }
    return Verdict::kSend;
}

void FaultInjector::hold(const void *to, size_t to_len, const void *buf, size_t len,
                         uint64_t now_ns) {
    Held h;
    h.to.assign(static_cast<const uint8_t *>(to), static_cast<const uint8_t *>(to) + to_len);
    h.data.assign(static_cast<const uint8_t *>(buf), static_cast<const uint8_t *>(buf) + len);
    h.due_ns = pending_delay_ ? now_ns + uint64_t(c_.delay_us) * 1000 : 0;
    held_.push_back(std::move(h));
}

void FaultInjector::take_due(uint64_t now_ns, std::vector<Held> &out) {
    for (size_t i = 0; i < held_.size();) {
        Held &h = held_[i];
        // A reordered datagram (due_ns 0) goes out after whatever is sent next.
        if (now_ns >= h.due_ns) {
            out.push_back(std::move(h));
            held_.erase(held_.begin() + long(i));
        } else {
            i++;
        }
    }
}

}  // namespace softnic::transport::udp

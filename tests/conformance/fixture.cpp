// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "fixture.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>

#ifndef CXIT_PLUGIN_DIR
#define CXIT_PLUGIN_DIR ""
#endif

namespace cxit {
namespace {

void gtest_handler(const std::string &msg, const char *file, int line, bool fatal) {
    ADD_FAILURE_AT(file, line) << msg;
    if (fatal) throw TestAbort(msg);
}

}  // namespace

void install_gtest_handler() {
    set_fail_handler(gtest_handler);
}

bool TransportTest::single_copy() const {
    const char *cma = std::getenv("FI_CXI_SHM_CMA");
    return std::string(GetParam().name) == "shm" && !(cma && std::string(cma) == "0");
}

std::string transport_name(const ::testing::TestParamInfo<TransportParam> &info) {
    return info.param.peer_domain;
}

void PrintTo(const TransportParam &p, std::ostream *os) {
    *os << p.name << " (peer domain " << p.peer_domain << ")";
}

fid_fabric *CxiTest::fabric() {
    InfoPtr info = get_info(EpOptions{}, "cxi0");
    return session_.fabric(info.get());
}

fid_domain *CxiTest::domain(const char *name, const EpOptions &o, const Loc &loc) {
    return session_.domain(name, o, loc);
}

EndpointPtr CxiTest::make_ep(const char *domain, const EpOptions &o, const Loc &loc) {
    return session_.endpoint(domain, o, loc);
}

namespace {
void check_at(long rc, const char *what, const Loc &loc) {
    if (rc < 0) fail(std::string(what) + " returned " + rc_str(rc), loc);
}
}  // namespace

RawEp CxiTest::raw_ep(const char *domain_name, const EpOptions &o, const Loc &loc) {
    RawEp r;
    r.info = get_info(o, domain_name, loc);
    fid_domain *d = domain(domain_name, o, loc);
    fi_av_attr aa{};
    aa.type = o.av_type;
    aa.flags = o.av_flags;
    check_at(fi_av_open(d, &aa, r.av.out(), nullptr), "fi_av_open", loc);
    fi_cq_attr ca{};
    ca.format = FI_CQ_FORMAT_TAGGED;
    ca.wait_obj = FI_WAIT_NONE;
    check_at(fi_cq_open(d, &ca, r.cq.out(), nullptr), "fi_cq_open", loc);
    check_at(fi_cq_open(d, &ca, r.cq2.out(), nullptr), "fi_cq_open", loc);
    check_at(fi_endpoint(d, r.info.get(), r.ep.out(), nullptr), "fi_endpoint", loc);
    return r;
}

EndpointPtr CxiTest::make_ep_at_pid(const char *domain, EpOptions o, uint32_t &pid,
                                    const Loc &loc) {
    return session_.endpoint_at_pid(domain, o, pid, loc);
}

EndpointPtr CxiTest::make_self(const char *domain, fi_addr_t &self, const EpOptions &o,
                               const Loc &loc) {
    EndpointPtr ep = make_ep(domain, o, loc);
    self = ep->insert(ep->name(), loc);
    return ep;
}

Pair TransportTest::make_pair(const EpOptions &oa, const EpOptions &ob, const Loc &loc) {
    Pair p;
    p.a = make_ep("cxi0", oa, loc);
    p.b = make_ep(peer_domain(), ob, loc);
    p.a2b = p.a->insert(p.b->name(), loc);
    p.b2a = p.b->insert(p.a->name(), loc);
    return p;
}

void guarded(const std::function<void()> &fn) {
    try {
        fn();
    } catch (const TestAbort &) {
        // already recorded
    } catch (const std::exception &e) {
        ADD_FAILURE() << "exception in thread: " << e.what();
    }
}

}  // namespace cxit

int main(int argc, char **argv) {
    // Defaults for running the binary by hand; ctest sets both explicitly.
    if (CXIT_PLUGIN_DIR[0] != '\0') setenv("FI_PROVIDER_PATH", CXIT_PLUGIN_DIR, 0);
    setenv("FI_CXI_SOFT_NICS", "127.0.0.1,127.0.0.2", 0);
    signal(SIGPIPE, SIG_IGN);
    ::testing::InitGoogleTest(&argc, argv);
    cxit::install_gtest_handler();
    return RUN_ALL_TESTS();
}

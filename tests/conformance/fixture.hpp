// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// gtest fixtures for the cxi conformance suite.
//
//  * CxiTest: one fabric per test, domains opened on demand, endpoints built
//    from EpOptions (see common.hpp). Helpers fail the test through the cxit
//    failure handler, which records a gtest failure and aborts the test.
//  * TransportTest: parameterized by transport. Endpoint "a" lives on cxi0
//    and endpoint "b" on the transport's peer domain.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>

#include "common.hpp"
#include "rc_assert.hpp"  // EXPECT_RC, ASSERT_RC

namespace cxit {

// Thrown (after the gtest failure was recorded) to abort the current test.
struct TestAbort : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Installs the gtest failure handler; called from main().
void install_gtest_handler();

struct TransportParam {
    const char *name;         // transport under test ("shm", later "udp")
    const char *peer_domain;  // domain of endpoint "b"
};

std::string transport_name(const ::testing::TestParamInfo<TransportParam> &info);
void PrintTo(const TransportParam &p, std::ostream *os);

// Two connected endpoints: a2b is b's address in a's AV and vice versa.
struct Pair {
    EndpointPtr a;
    EndpointPtr b;
    fi_addr_t a2b = FI_ADDR_NOTAVAIL;
    fi_addr_t b2a = FI_ADDR_NOTAVAIL;
};

// Endpoint pieces opened but not bound, for tests of bind/enable rules.
struct RawEp {
    InfoPtr info;
    Fid<fid_av> av;
    Fid<fid_cq> cq;   // FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE
    Fid<fid_cq> cq2;  // a second CQ of the same kind
    Fid<fid_ep> ep;
};

class CxiTest : public ::testing::Test {
  protected:
    // Opens an AV, two CQs and an endpoint on `domain`; binds nothing.
    RawEp raw_ep(const char *domain_name, const EpOptions &o = {}, const Loc &loc = Loc::current());
    EndpointPtr make_ep(const char *domain, const EpOptions &o = {},
                        const Loc &loc = Loc::current());
    fid_domain *domain(const char *name, const EpOptions &o = {}, const Loc &loc = Loc::current());
    fid_fabric *fabric();
    // Endpoint bound (FI_SOURCE node/service) to a specific PID: Session::endpoint_at_pid.
    EndpointPtr make_ep_at_pid(const char *domain, EpOptions o, uint32_t &pid,
                               const Loc &loc = Loc::current());
    // Self-connected endpoint: returns its own fi_addr in `self`.
    EndpointPtr make_self(const char *domain, fi_addr_t &self, const EpOptions &o = {},
                          const Loc &loc = Loc::current());

  private:
    Session session_;
};

class TransportTest : public CxiTest, public ::testing::WithParamInterface<TransportParam> {
  protected:
    const char *peer_domain() const { return GetParam().peer_domain; }
    // Peers on one host with single-copy access on (FI_CXI_SHM_CMA=0 turns it off).
    bool single_copy() const;
    Pair make_pair(const EpOptions &oa = {}, const EpOptions &ob = {},
                   const Loc &loc = Loc::current());
};

// Runs `fn` and converts a TestAbort into a recorded failure; for use as the
// body of std::jthread in multi-threaded tests.
void guarded(const std::function<void()> &fn);

}  // namespace cxit

// The one place listing the transports: the peer endpoint on the same soft NIC (shared
// memory) or on the other one (cxi1, another IPv4 address: UDP).
#define CXIT_INSTANTIATE_ONE(suite, tname, peer)                                      \
    INSTANTIATE_TEST_SUITE_P(tname, suite,                                            \
                             ::testing::Values(::cxit::TransportParam{#tname, peer}), \
                             ::cxit::transport_name)
#define CXIT_INSTANTIATE_TRANSPORTS(suite)    \
    CXIT_INSTANTIATE_ONE(suite, shm, "cxi0"); \
    CXIT_INSTANTIATE_ONE(suite, udp, "cxi1")

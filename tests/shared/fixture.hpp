// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The provider-agnostic conformance suite: what both providers offer alike (CQ, EQ, AV,
// reliable messaging between two endpoints), written once against the public API and
// instantiated over every flavour that has it: cxi over shared memory (both endpoints
// on cxi0), cxi over UDP (cxi0 to cxi1) and usnic RDM (usnic_0 on loopback).
#pragma once

#include <gtest/gtest.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "fid_holder.hpp"
#include "rc_assert.hpp"

namespace shared_test {

struct Flavour {
    const char *name;   // the instantiation's name
    const char *prov;   // provider name
    const char *dom_a;  // domain of endpoint a (null: the provider's first)
    const char *dom_b;  // domain of endpoint b
};

struct CloseReport {
    void operator()(int rc) const {
        ADD_FAILURE() << "fi_close in destructor: " << softnic_test::rc_str(rc);
    }
};
template <typename T>
using Fid = testutil::Fid<T, CloseReport>;

struct InfoDeleter {
    void operator()(fi_info *i) const { fi_freeinfo(i); }
};

// One endpoint with everything it needs, on its own fabric and domain.
struct Side {
    std::unique_ptr<fi_info, InfoDeleter> info;
    Fid<fid_fabric> fabric;
    Fid<fid_domain> domain;
    Fid<fid_av> av;
    Fid<fid_cq> cq;
    Fid<fid_ep> ep;
    std::vector<uint8_t> name;  // fi_getname
    fi_addr_t peer = FI_ADDR_UNSPEC;
    bool local_mr = false;              // the provider wants registered buffers (FI_MR_LOCAL)
    std::deque<fi_cq_msg_entry> stash;  // entries read while waiting on the other side
};

// A registered (if the provider asks for it) buffer.
struct Buffer {
    std::vector<uint8_t> bytes;
    Fid<fid_mr> mr;
    void *desc() const { return mr ? fi_mr_desc(mr.get()) : nullptr; }
};

class SharedTest : public ::testing::TestWithParam<Flavour> {
  protected:
    void SetUp() override;
    // The hints every test starts from: RDM, FI_MSG, the flavour's provider and domain.
    fi_info *hints(const char *domain) const;
    void open_side(Side &s, const char *domain);
    void connect_sides();  // each side's AV holds the other's address
    Buffer buffer(Side &s, size_t len);
    // Polls s's CQ until one entry or an error arrives (bounded); returns fi_cq_read's rc.
    // `peer` (by default the fixture's other side) is progressed too.
    ssize_t wait_cq(Side &s, fi_cq_msg_entry &e, fi_cq_err_entry *err = nullptr,
                    Side *peer = nullptr);

    Side a_, b_;
    fi_threading threading_ = FI_THREAD_UNSPEC;  // asked for in hints() unless unspecified
};

std::string flavour_name(const ::testing::TestParamInfo<Flavour> &info);

}  // namespace shared_test

// The one list of flavours: every suite here runs over each.
#define SHARED_INSTANTIATE(suite)                                                          \
    INSTANTIATE_TEST_SUITE_P(                                                              \
        , suite,                                                                           \
        ::testing::Values(::shared_test::Flavour{"cxi_shm", "cxi", "cxi0", "cxi0"},        \
                          ::shared_test::Flavour{"cxi_udp", "cxi", "cxi0", "cxi1"},        \
                          ::shared_test::Flavour{"usnic_rdm", "usnic", nullptr, nullptr}), \
        ::shared_test::flavour_name)

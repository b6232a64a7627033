// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// gtest fixtures of the usnic conformance suite.
//
//  * UsnicTest: one fabric and domain on usnic_0 (127.0.0.1 with
//    FI_USNIC_IFACES=lo) per test, plus helpers that open CQs, EQs, AVs and
//    endpoints of any type, and read CM events.
//  * PairTest: parameterised by endpoint type (dgram, msg, rdm); builds two
//    endpoints in this process that can talk to each other ("a" and "b"),
//    and drives progress on both while a test waits for completions.
#pragma once

#include <deque>
#include <memory>
#include <source_location>
#include <stdexcept>
#include <string>
#include <vector>

#include "util.hpp"

namespace usnict {

enum class Kind { dgram, msg, rdm };
fi_ep_type ep_type(Kind k);
const char *kind_name(Kind k);
std::string kind_param_name(const ::testing::TestParamInfo<Kind> &info);
void PrintTo(Kind k, std::ostream *os);

// Thrown by helpers after recording a failure, to end the current test.
struct TestAbort : std::runtime_error {
    using std::runtime_error::runtime_error;
};
[[noreturn]] void fatal(const std::string &msg,
                        const std::source_location &loc = std::source_location::current());
// Fails the test (fatally) unless rc == 0.
void require_ok(long rc, const char *what,
                const std::source_location &loc = std::source_location::current());
#define USNICT_REQUIRE_OK(expr) ::usnict::require_ok((expr), #expr)

struct EpOpts {
    uint64_t mode = FI_LOCAL_MR;  // hints->mode (add FI_MSG_PREFIX for prefix mode)
    fi_cq_format format = FI_CQ_FORMAT_MSG;
    uint64_t tx_bind = FI_TRANSMIT;      // bind flags of the send CQ
    bool av = true;                      // DGRAM/RDM: open and bind an AV
    bool shared_cq = false;              // one CQ bound FI_TRANSMIT | FI_RECV
    fi_wait_obj rx_wait = FI_WAIT_NONE;  // wait object of the receive CQ
    bool enable = true;
};

// One completion, error or not.
struct Entry {
    void *ctx = nullptr;
    uint64_t flags = 0;
    size_t len = 0;
    int err = 0;
    int prov_errno = 0;
};

struct Endpoint {
    Kind kind = Kind::dgram;
    InfoPtr info;
    fi_cq_format format = FI_CQ_FORMAT_MSG;
    Fid<fid_eq> eq;  // MSG only
    Fid<fid_av> av;  // DGRAM/RDM only
    Fid<fid_cq> tx_cq;
    Fid<fid_cq> rx_cq;  // empty when the CQ is shared
    Fid<fid_ep> ep;
    fi_addr_t peer = FI_ADDR_UNSPEC;  // the other endpoint (AV handle)
    std::deque<Entry> tx_done;
    std::deque<Entry> rx_done;

    size_t prefix() const { return info->ep_attr->msg_prefix_size; }
    fid_cq *rxq() const { return rx_cq ? rx_cq.get() : tx_cq.get(); }
};

// A CM event read from an EQ (an error entry when rc == -FI_EAVAIL).
struct CmEvent {
    long rc = 0;
    uint32_t event = 0;
    fid_t fid = nullptr;
    InfoPtr info;
    std::vector<uint8_t> data;  // private data after the fi_eq_cm_entry
    fi_eq_err_entry err{};
    std::vector<uint8_t> err_data;
};

class UsnicTest : public ::testing::Test {
  protected:
    // A copy of the first usnic info of `type` on usnic_0, found with hints
    // of that type and mode.
    InfoPtr info_of(fi_ep_type type, uint64_t mode = FI_LOCAL_MR);
    // Opens the fabric and domain from `info` (once per test).
    void open_domain(const fi_info *info);
    fid_fabric *fabric() const { return fabric_.get(); }
    fid_domain *domain() const { return domain_.get(); }

    Fid<fid_cq> open_cq(fi_cq_format format, fi_wait_obj wait = FI_WAIT_NONE, size_t size = 0);
    Fid<fid_eq> open_eq(fi_wait_obj wait = FI_WAIT_UNSPEC, uint64_t flags = 0);
    Fid<fid_av> open_av(uint64_t flags = 0);

    // An endpoint of `kind`, with its CQs (and AV or EQ) bound, enabled
    // unless opts say otherwise. MSG endpoints are not connected. `from` is
    // the info to use (a CONNREQ's info); by default info_of(kind).
    std::unique_ptr<Endpoint> endpoint(Kind kind, const EpOpts &opts = {},
                                       const fi_info *from = nullptr);
    // An endpoint of `kind` opened on the domain with nothing bound.
    std::unique_ptr<Endpoint> bare_endpoint(Kind kind, uint64_t mode = FI_LOCAL_MR);
    // fi_getname of an endpoint or PEP as a sockaddr_in.
    sockaddr_in getname(fid_t fid);
    // Inserts one sockaddr_in into `av` synchronously; returns the handle.
    fi_addr_t av_insert(fid_av *av, const sockaddr_in &addr);
    // Waits for one event on `eq` (fails the test after kTimeoutMs).
    CmEvent read_cm(fid_eq *eq);

    Fid<fid_fabric> fabric_;
    Fid<fid_domain> domain_;
};

// Two endpoints of one type in this process, and progress for both.
class PairBase : public UsnicTest {
  protected:
    Kind kind() const { return kind_; }
    // Builds a_ and b_: an AV pair (DGRAM/RDM) or a connection (MSG, a is the
    // client and b the server's accepted endpoint).
    void make_pair(const EpOpts &oa = {}, const EpOpts &ob = {});
    // Reads every CQ of a_ and b_ once and keeps the completions.
    void progress();
    // The same for one endpoint.
    void progress(Endpoint &e) { drain(e); }
    Entry wait_tx(Endpoint &e);
    Entry wait_rx(Endpoint &e);
    // Posts, retrying (with progress) while the provider says -FI_EAGAIN.
    void send(Endpoint &from, const void *buf, size_t len, void *ctx);
    void recv(Endpoint &to, void *buf, size_t len, void *ctx);
    // Largest message of this endpoint type used by the tests.
    size_t max_msg() const;

    Kind kind_ = Kind::dgram;
    Fid<fid_eq> pep_eq_;
    Fid<fid_pep> pep_;
    std::unique_ptr<Endpoint> a_;
    std::unique_ptr<Endpoint> b_;

  private:
    void connect_msg(const EpOpts &oa, const EpOpts &ob);
    void drain(Endpoint &e);
};

// PairBase parameterised by endpoint type (UCX-gtest style: one body per type).
class PairTest : public PairBase, public ::testing::WithParamInterface<Kind> {
  protected:
    PairTest() { kind_ = GetParam(); }
};

// Reads at most one batch from `cq`; appends to `out`; returns fi_cq_read's
// (or, for an error entry, fi_cq_readerr's) result.
long read_batch(fid_cq *cq, fi_cq_format format, std::vector<Entry> &out);

}  // namespace usnict

#define USNICT_ALL_KINDS \
    ::testing::Values(::usnict::Kind::dgram, ::usnict::Kind::msg, ::usnict::Kind::rdm)
#define USNICT_RELIABLE_KINDS ::testing::Values(::usnict::Kind::msg, ::usnict::Kind::rdm)

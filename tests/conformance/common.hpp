// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Shared, gtest-free helpers for the cxi conformance suite and its peer
// program: RAII fid wrappers, endpoint bundles, CQ stashing with global
// progress, deadline-bounded waits, payload patterns and CXI address helpers.
//
// Only the public libfabric API is used here.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_cxi_ext.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

#include "fid_holder.hpp"
#include "rc.hpp"

namespace cxit {

// API version requested from fi_getinfo: 1.15 on a 1.x libfabric (below the library's
// own, so a provider built for any 1.15+ level is found), 1.20 on 2.x. The cxi address
// follows it: 4 bytes (PID and NIC) for applications before 1.20, 8 (struct cxip_addr,
// with the VNI) from 1.20.
inline constexpr uint32_t kApiVersion =
    FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION) >= FI_VERSION(1, 20) ? FI_VERSION(1, 20)
                                                                        : FI_VERSION(1, 15);
inline constexpr size_t kAddrLen = kApiVersion >= FI_VERSION(1, 20) ? 8 : 4;
inline constexpr size_t kInjectSize = 192;  // tx_attr->inject_size
inline constexpr uint64_t kTagBits = 48;    // FI_PROTO_CXI tag width
inline constexpr uint64_t kMaxTag = (1ULL << kTagBits) - 1;
inline constexpr uint32_t kPidAny = 511;           // C_PID_ANY
inline constexpr size_t kEagerMax = 16384 + 2049;  // THRESHOLD + GET_MIN (HEAD)
inline constexpr size_t kRdzvSize = 65536;         // rendezvous in every env variant
inline constexpr std::chrono::milliseconds kTimeout{10000};
inline constexpr std::chrono::milliseconds kQuietWindow{150};

// ---------------------------------------------------------------------------
// Failure reporting. The gtest fixture installs a handler that records a test
// failure (and throws when fatal); the peer program prints and exits.
using FailHandler = void (*)(const std::string &msg, const char *file, int line, bool fatal);
void set_fail_handler(FailHandler handler);
using Loc = std::source_location;
[[noreturn]] void fail(const std::string &msg, const char *file, int line);
[[noreturn]] void fail(const std::string &msg, const Loc &loc);
void report(const std::string &msg, const char *file, int line);  // non-fatal
using softnic_test::rc_str;                                       // tests/common/rc.hpp
long check_rc(long rc, const char *expr, const char *file, int line);

#define CXIT_CHECK(expr) ::cxit::check_rc((expr), #expr, __FILE__, __LINE__)
#define CXIT_FAIL(msg) ::cxit::fail((msg), __FILE__, __LINE__)
#define CXIT_REQUIRE(cond, msg)                                                             \
    do {                                                                                    \
        if (!(cond))                                                                        \
            ::cxit::fail(std::string("requirement `" #cond "` failed: ") + (msg), __FILE__, \
                         __LINE__);                                                         \
    } while (0)

// ---------------------------------------------------------------------------
// RAII holder for any fid_* object (tests/common/fid_holder.hpp).
struct CloseReport {
    void operator()(int rc) const {
        report("fi_close failed in destructor: " + rc_str(rc), __FILE__, __LINE__);
    }
};
template <typename T>
using Fid = testutil::Fid<T, CloseReport>;

// Runs `open(&p)` and keeps p only when the call returned 0: a provider may
// leave garbage in the output pointer of a failed open. Use through
// CXIT_OPEN(fid, fi_xxx(..., OUT, ...)).
template <typename T, typename F>
long try_open(Fid<T> &f, F &&open) {
    T *p = nullptr;
    const long rc = static_cast<long>(open(&p));
    f = Fid<T>(rc == 0 ? p : nullptr);
    return rc;
}
#define CXIT_OPEN(fid, ...) ::cxit::try_open((fid), [&](auto **OUT) { return (__VA_ARGS__); })

struct InfoDeleter {
    void operator()(fi_info *i) const { fi_freeinfo(i); }
};
using InfoPtr = std::unique_ptr<fi_info, InfoDeleter>;

// ---------------------------------------------------------------------------
// Completion queue with a stash: every poll moves all available entries (and
// error entries) into local queues, so that polling one side for progress
// never loses the other side's completions. Only FI_CQ_FORMAT_TAGGED.
struct Comp {
    fi_cq_tagged_entry e{};
    fi_addr_t src = FI_ADDR_NOTAVAIL;
};

struct ErrComp {
    fi_cq_err_entry e{};
    std::vector<uint8_t> err_data;  // copy of the provider's err_data
};

class Cq {
  public:
    Cq(fid_domain *domain, const fi_cq_attr &attr, bool readfrom);
    ~Cq();
    Cq(const Cq &) = delete;
    Cq &operator=(const Cq &) = delete;

    fid_cq *get() const { return cq_.get(); }
    size_t poll();  // moves everything available into the stash
    std::optional<Comp> take(const void *ctx);
    std::optional<Comp> take_any();
    std::optional<ErrComp> take_err(const void *ctx);
    std::optional<ErrComp> take_err_any();
    size_t ok_count() const;
    size_t err_count() const;
    std::string describe_errors() const;

  private:
    Fid<fid_cq> cq_;
    bool readfrom_;
    mutable std::mutex mu_;
    std::deque<Comp> ok_;
    std::deque<ErrComp> err_;
};

// Polls every live Cq once (drives provider progress in manual mode).
void progress_all();

// Deadline helpers. `poll_until` returns the final predicate value; the
// `wait_*` forms fail (fatally) when the deadline passes.
// Failures are reported at the caller's source location.
bool poll_until(const std::function<bool()> &pred, std::chrono::milliseconds timeout = kTimeout);
void wait_until(const std::function<bool()> &pred, const std::string &what,
                std::chrono::milliseconds timeout = kTimeout, const Loc &loc = Loc::current());
Comp wait_comp(Cq &cq, const void *ctx, const std::string &what, const Loc &loc = Loc::current());
ErrComp wait_err(Cq &cq, const void *ctx, const std::string &what, const Loc &loc = Loc::current());
Comp wait_any(Cq &cq, const std::string &what, const Loc &loc = Loc::current());
void progress_for(std::chrono::milliseconds window);
// Polls everything for `window`; fails if `cq` produced any entry.
void expect_quiet(Cq &cq, const std::string &what, std::chrono::milliseconds window = kQuietWindow,
                  const Loc &loc = Loc::current());
// Runs `op` until it stops returning -FI_EAGAIN (driving progress in between);
// fails on any other negative result.
void post(const std::function<ssize_t()> &op, const std::string &what,
          const Loc &loc = Loc::current());

// ---------------------------------------------------------------------------
// Endpoint configuration and bundles.
struct EpOptions {
    uint64_t caps = FI_MSG | FI_TAGGED;
    bool prov_key = true;  // FI_MR_PROV_KEY info flavour
    fi_threading threading = FI_THREAD_UNSPEC;
    fi_av_type av_type = FI_AV_TABLE;
    uint64_t av_flags = 0;  // e.g. FI_SYMMETRIC
    int rx_ctx_bits = 0;
    const char *av_name = nullptr;  // named (shared) AV
    size_t cq_size = 0;
    fi_wait_obj cq_wait = FI_WAIT_NONE;  // wait object of both CQs
    uint64_t tx_cq_flags = FI_TRANSMIT;  // may add FI_SELECTIVE_COMPLETION
    uint64_t rx_cq_flags = FI_RECV;
    bool shared_cq = false;  // one CQ bound for both directions
    bool counters = false;   // send/recv counters
    size_t tx_size = 0;      // hints tx_attr->size (0 = provider default)
    size_t rx_size = 0;
    uint64_t tx_op_flags = 0;  // applied to the info before fi_endpoint
    uint64_t rx_op_flags = 0;
    const char *src_service = nullptr;  // FI_SOURCE: node=<domain>, service=<pid>
    const char *src_node = nullptr;     // with src_service: node instead of <domain>
    int mr_mode = -1;                   // hints mr_mode instead of the default below
    bool enable = true;
    std::optional<cxi_auth_key> auth_key;  // hints ep_attr->auth_key (the domain gets it too)
    uint32_t protocol = FI_PROTO_UNSPEC;   // hints ep_attr->protocol (FI_PROTO_CXI_RNR)
};

// Builds hints for prov "cxi", FI_EP_RDM, FI_MR_ENDPOINT|ALLOCATED[|PROV_KEY].
InfoPtr make_hints(const EpOptions &o, const char *domain);
// fi_getinfo with those hints; fails if nothing comes back.
InfoPtr get_info(const EpOptions &o, const char *domain, const Loc &loc = Loc::current());

class Endpoint {
  public:
    Endpoint(fid_domain *domain, const fi_info *info, const EpOptions &o);
    ~Endpoint();
    Endpoint(const Endpoint &) = delete;
    Endpoint &operator=(const Endpoint &) = delete;

    fid_ep *ep() const { return ep_.get(); }
    fid_av *av() const { return av_.get(); }
    fid_domain *domain() const { return domain_; }
    Cq &tx() const { return *tx_; }
    Cq &rx() const { return rx_ ? *rx_ : *tx_; }
    fid_cntr *send_cntr() const { return scntr_.get(); }
    fid_cntr *recv_cntr() const { return rcntr_.get(); }
    const fi_info *info() const { return info_.get(); }
    const std::vector<uint8_t> &name() const { return name_; }
    void enable();       // when EpOptions::enable was false
    void enable_done();  // the test called fi_enable itself: fetch the name
    fi_addr_t insert(const std::vector<uint8_t> &addr, const Loc &loc = Loc::current());
    // Closes the EP explicitly (e.g. to check the result); returns fi_close rc.
    int close_ep() { return ep_.close(); }

  private:
    fid_domain *domain_;
    InfoPtr info_;
    Fid<fid_av> av_;
    std::unique_ptr<Cq> tx_;
    std::unique_ptr<Cq> rx_;
    Fid<fid_cntr> scntr_;
    Fid<fid_cntr> rcntr_;
    Fid<fid_ep> ep_;
    std::vector<uint8_t> name_;
};

using EndpointPtr = std::unique_ptr<Endpoint>;

// Posts a receive on `dst` (tagged when `tagged`), sends `len` bytes of
// pattern `seed` from `src` to `dest`, waits for both completions and checks
// the received payload and length.
void ping(Endpoint &src, fi_addr_t dest, Endpoint &dst, size_t len, uint32_t seed,
          bool tagged = false, uint64_t tag = 0, const Loc &loc = Loc::current());

// Polls until `ep` holds at least `n` unexpected messages (the ep_get_unexp_msgs
// extension): how a test makes messages unexpected without guessing a delay.
void wait_unexpected(const Endpoint &ep, size_t n, const Loc &loc = Loc::current());

std::vector<uint8_t> get_name(fid_t fid);
void wait_cntr(fid_cntr *c, uint64_t value, const std::string &what,
               const Loc &loc = Loc::current());

// A fabric plus the domains opened in it, keyed by name and MR key flavour.
// Endpoints created from a Session must be destroyed before it.
class Session {
  public:
    Session() = default;
    ~Session();
    Session(const Session &) = delete;
    Session &operator=(const Session &) = delete;

    fid_fabric *fabric(const fi_info *info);
    fid_domain *domain(const char *name, const EpOptions &o, const Loc &loc = Loc::current());
    EndpointPtr endpoint(const char *domain_name, const EpOptions &o,
                         const Loc &loc = Loc::current());
    // Endpoint bound (FI_SOURCE node/service) to a PID of this process's choosing: the
    // first of candidate_pids() that no other process holds; `pid` says which.
    EndpointPtr endpoint_at_pid(const char *domain_name, EpOptions o, uint32_t &pid,
                                const Loc &loc = Loc::current());

  private:
    Fid<fid_fabric> fabric_;
    std::map<std::string, Fid<fid_domain>> domains_;
};

// ---------------------------------------------------------------------------
// Payload patterns: byte i of a buffer filled with `seed`.
uint8_t pattern_byte(size_t i, uint32_t seed);
void fill(void *buf, size_t len, uint32_t seed);
// Offset of the first mismatch, or SIZE_MAX when the whole buffer matches.
size_t mismatch(const void *buf, size_t len, uint32_t seed);
std::vector<uint8_t> pattern(size_t len, uint32_t seed);

// Registers CUDA device memory (device 0) on `domain` with fi_mr_regattr; the MR is
// bound to `ep` and enabled when `ep` is given (FI_MR_ENDPOINT). Returns the fi_* rc.
int reg_cuda(fid_domain *domain, void *buf, size_t len, uint64_t access, fid_ep *ep,
             Fid<fid_mr> &mr);
// Message sizes of the FI_HMEM tests: eager, one packet and more, rendezvous, 64 MiB.
std::vector<size_t> hmem_sizes();

// CXI address (HEAD layout): word0 = pid[0:8] | nic[9:28]; vni in bytes 4-5.
struct CxiAddr {
    uint32_t nic = 0;
    uint32_t pid = 0;
};
CxiAddr decode_addr(const void *addr);
std::vector<uint8_t> encode_addr(uint32_t nic, uint32_t pid);

// Sizes used by the pingpong tests: 0, powers of two up to 4 MiB, plus odd
// sizes around every protocol boundary.
std::vector<size_t> pingpong_sizes();

// Candidate PIDs for addresses a test process chooses itself (FI_SOURCE), spread by
// process id and above those kPidAny hands out first; `span` PIDs from each.
std::vector<uint32_t> candidate_pids(uint32_t span = 1);

// A collective group joined by one endpoint: an EQ bound to it, the AV set of the members
// in rank order, the mc. Closing (or destroying) it leaves the group.
struct CollGroup {
    Fid<fid_eq> eq;
    Fid<fid_av_set> set;
    fid_mc *mc = nullptr;
    fi_addr_t addr() const { return fi_mc_addr(mc); }
    void close();
    ~CollGroup() { close(); }
};
// Joins `members` (fi_addrs of ep's AV, in rank order) and checks the FI_JOIN_COMPLETE
// event on the EQ (its fid is the mc, its context `context`). The join names the set by
// its fi_av_set_addr, or by FI_ADDR_NOTAVAIL when `by_set_addr` is false.
void join_group(CollGroup &g, fid_fabric *fabric, Endpoint &ep,
                const std::vector<fi_addr_t> &members, void *context = nullptr,
                bool by_set_addr = true, const Loc &loc = Loc::current());
// fi_allreduce of one INT64 SUM over `g` from ep, waited for; returns the sum.
int64_t allreduce_sum(Endpoint &ep, const CollGroup &g, int64_t mine, const std::string &what,
                      const Loc &loc = Loc::current());

}  // namespace cxit

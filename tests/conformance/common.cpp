// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "common.hpp"

#include <rdma/fi_collective.h>
#include <rdma/fi_eq.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

namespace cxit {
namespace {

void default_handler(const std::string &msg, const char *file, int line, bool fatal) {
    std::fprintf(stderr, "%s:%d: %s\n", file, line, msg.c_str());
    if (fatal) std::abort();
}

FailHandler g_handler = default_handler;

std::mutex &registry_mutex() {
    static std::mutex m;
    return m;
}

std::vector<Cq *> &registry() {
    static std::vector<Cq *> v;
    return v;
}

using Clock = std::chrono::steady_clock;

}  // namespace

void set_fail_handler(FailHandler handler) {
    g_handler = handler ? handler : default_handler;
}

void fail(const std::string &msg, const char *file, int line) {
    g_handler(msg, file, line, true);
    std::abort();  // handlers for fatal failures never return
}

void fail(const std::string &msg, const Loc &loc) {
    fail(msg, loc.file_name(), static_cast<int>(loc.line()));
}

void report(const std::string &msg, const char *file, int line) {
    g_handler(msg, file, line, false);
}

long check_rc(long rc, const char *expr, const char *file, int line) {
    if (rc < 0) fail(std::string(expr) + " returned " + rc_str(rc), file, line);
    return rc;
}

// ---------------------------------------------------------------------------
Cq::Cq(fid_domain *domain, const fi_cq_attr &attr, bool readfrom) : readfrom_(readfrom) {
    CXIT_REQUIRE(attr.format == FI_CQ_FORMAT_TAGGED, "stashing Cq needs FI_CQ_FORMAT_TAGGED");
    fi_cq_attr a = attr;
    // A context of its own: fi_poll and wait sets report members by context.
    CXIT_CHECK(fi_cq_open(domain, &a, cq_.out(), this));
    std::lock_guard<std::mutex> lk(registry_mutex());
    registry().push_back(this);
}

Cq::~Cq() {
    std::lock_guard<std::mutex> lk(registry_mutex());
    auto &r = registry();
    r.erase(std::remove(r.begin(), r.end(), this), r.end());
}

size_t Cq::poll() {
    std::lock_guard<std::mutex> lk(mu_);
    size_t moved = 0;
    for (;;) {
        fi_cq_tagged_entry ents[16];
        fi_addr_t srcs[16];
        ssize_t rc =
            readfrom_ ? fi_cq_readfrom(cq_.get(), ents, 16, srcs) : fi_cq_read(cq_.get(), ents, 16);
        if (rc > 0) {
            for (ssize_t i = 0; i < rc; i++)
                ok_.push_back(Comp{ents[i], readfrom_ ? srcs[i] : FI_ADDR_NOTAVAIL});
            moved += static_cast<size_t>(rc);
            continue;
        }
        if (rc == -FI_EAGAIN) break;
        if (rc != -FI_EAVAIL) fail("fi_cq_read returned " + rc_str(rc), __FILE__, __LINE__);
        uint8_t buf[256] = {};
        ErrComp ec;
        ec.e.err_data = buf;
        ec.e.err_data_size = sizeof(buf);
        ssize_t r = fi_cq_readerr(cq_.get(), &ec.e, 0);
        if (r == -FI_EAGAIN) break;
        if (r != 1) fail("fi_cq_readerr returned " + rc_str(r), __FILE__, __LINE__);
        if (ec.e.err_data && ec.e.err_data_size) {
            const uint8_t *p = static_cast<const uint8_t *>(ec.e.err_data);
            ec.err_data.assign(p, p + std::min(ec.e.err_data_size, sizeof(buf)));
        }
        ec.e.err_data = nullptr;
        err_.push_back(std::move(ec));
        moved++;
    }
    return moved;
}

std::optional<Comp> Cq::take(const void *ctx) {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto it = ok_.begin(); it != ok_.end(); ++it) {
        if (it->e.op_context == ctx) {
            Comp c = *it;
            ok_.erase(it);
            return c;
        }
    }
    return std::nullopt;
}

std::optional<Comp> Cq::take_any() {
    std::lock_guard<std::mutex> lk(mu_);
    if (ok_.empty()) return std::nullopt;
    Comp c = ok_.front();
    ok_.pop_front();
    return c;
}

std::optional<ErrComp> Cq::take_err(const void *ctx) {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto it = err_.begin(); it != err_.end(); ++it) {
        if (it->e.op_context == ctx) {
            ErrComp c = std::move(*it);
            err_.erase(it);
            return c;
        }
    }
    return std::nullopt;
}

std::optional<ErrComp> Cq::take_err_any() {
    std::lock_guard<std::mutex> lk(mu_);
    if (err_.empty()) return std::nullopt;
    ErrComp c = std::move(err_.front());
    err_.pop_front();
    return c;
}

size_t Cq::ok_count() const {
    std::lock_guard<std::mutex> lk(mu_);
    return ok_.size();
}

size_t Cq::err_count() const {
    std::lock_guard<std::mutex> lk(mu_);
    return err_.size();
}

std::string Cq::describe_errors() const {
    std::lock_guard<std::mutex> lk(mu_);
    std::ostringstream os;
    for (const auto &e : err_)
        os << " [ctx=" << e.e.op_context << " err=" << e.e.err << " (" << fi_strerror(e.e.err)
           << ") prov_errno=" << e.e.prov_errno << "]";
    return os.str();
}

void progress_all() {
    std::lock_guard<std::mutex> lk(registry_mutex());
    for (Cq *cq : registry())
        cq->poll();
}

// ---------------------------------------------------------------------------
bool poll_until(const std::function<bool()> &pred, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (unsigned spin = 0;; spin++) {
        if (pred()) return true;
        if (Clock::now() > deadline) return pred();
        progress_all();
        if (spin > 1000) std::this_thread::yield();
    }
}

void wait_until(const std::function<bool()> &pred, const std::string &what,
                std::chrono::milliseconds timeout, const Loc &loc) {
    if (!poll_until(pred, timeout))
        fail("timed out after " + std::to_string(timeout.count()) + " ms waiting for " + what, loc);
}

Comp wait_comp(Cq &cq, const void *ctx, const std::string &what, const Loc &loc) {
    std::optional<Comp> c;
    std::optional<ErrComp> e;
    wait_until(
        [&] {
            c = cq.take(ctx);
            if (!c) e = cq.take_err(ctx);
            return c.has_value() || e.has_value();
        },
        "completion of " + what, kTimeout, loc);
    if (e) {
        std::ostringstream os;
        os << "expected a successful completion of " << what << " but got error err=" << e->e.err
           << " (" << fi_strerror(e->e.err) << ") prov_errno=" << e->e.prov_errno
           << " len=" << e->e.len << " olen=" << e->e.olen;
        fail(os.str(), loc);
    }
    return *c;
}

ErrComp wait_err(Cq &cq, const void *ctx, const std::string &what, const Loc &loc) {
    std::optional<Comp> c;
    std::optional<ErrComp> e;
    wait_until(
        [&] {
            e = cq.take_err(ctx);
            if (!e) c = cq.take(ctx);
            return c.has_value() || e.has_value();
        },
        "error completion of " + what, kTimeout, loc);
    if (c) fail("expected an error completion of " + what + " but it succeeded", loc);
    return std::move(*e);
}

Comp wait_any(Cq &cq, const std::string &what, const Loc &loc) {
    std::optional<Comp> c;
    wait_until(
        [&] {
            c = cq.take_any();
            if (!c && cq.err_count())
                fail("unexpected error completion while waiting for " + what + ":" +
                         cq.describe_errors(),
                     loc);
            return c.has_value();
        },
        "any completion: " + what, kTimeout, loc);
    return *c;
}

void progress_for(std::chrono::milliseconds window) {
    const auto end = Clock::now() + window;
    while (Clock::now() < end) {
        progress_all();
        std::this_thread::yield();
    }
}

void wait_unexpected(const Endpoint &ep, size_t n, const Loc &loc) {
    fi_cxi_dom_ops *ops = nullptr;
    long rc = fi_open_ops(&ep.domain()->fid, FI_CXI_DOM_OPS_3, 0, reinterpret_cast<void **>(&ops),
                          nullptr);
    if (rc) fail("fi_open_ops(FI_CXI_DOM_OPS_3) returned " + rc_str(rc), loc);
    size_t have = 0;
    wait_until(
        [&] {
            progress_all();
            have = 0;
            ops->ep_get_unexp_msgs(ep.ep(), nullptr, 0, nullptr, &have);
            return have >= n;
        },
        std::to_string(n) + " unexpected messages", kTimeout, loc);
}

void expect_quiet(Cq &cq, const std::string &what, std::chrono::milliseconds window,
                  const Loc &loc) {
    progress_for(window);
    if (cq.ok_count() || cq.err_count())
        fail(what + ": expected no completion but found " + std::to_string(cq.ok_count()) +
                 " completions and " + std::to_string(cq.err_count()) +
                 " error completions:" + cq.describe_errors(),
             loc);
}

void post(const std::function<ssize_t()> &op, const std::string &what, const Loc &loc) {
    const auto deadline = Clock::now() + kTimeout;
    for (;;) {
        ssize_t rc = op();
        if (rc >= 0) return;
        if (rc != -FI_EAGAIN) fail(what + " returned " + rc_str(rc), loc);
        if (Clock::now() > deadline) fail(what + " kept returning -FI_EAGAIN for 10 s", loc);
        progress_all();
    }
}

// ---------------------------------------------------------------------------
InfoPtr make_hints(const EpOptions &o, const char *domain) {
    InfoPtr h(fi_allocinfo());
    CXIT_REQUIRE(h != nullptr, "fi_allocinfo");
    h->fabric_attr->prov_name = strdup("cxi");
    h->ep_attr->type = FI_EP_RDM;
    h->caps = o.caps;
    h->mode = 0;
    h->domain_attr->mr_mode = FI_MR_ENDPOINT | FI_MR_ALLOCATED | (o.prov_key ? FI_MR_PROV_KEY : 0);
    if (o.mr_mode >= 0) h->domain_attr->mr_mode = o.mr_mode;
    h->domain_attr->threading = o.threading;
    // CXIT_THREADING=domain or completion: the suites once more as an application that
    // serialises its calls into a domain, or into each completion group (the provider's
    // lock-free data path, common/serial.hpp).
    if (o.threading == FI_THREAD_UNSPEC) {
        const char *t = getenv("CXIT_THREADING");
        if (t && !strcmp(t, "domain")) h->domain_attr->threading = FI_THREAD_DOMAIN;
        if (t && !strcmp(t, "completion")) h->domain_attr->threading = FI_THREAD_COMPLETION;
    }
    if (domain) h->domain_attr->name = strdup(domain);
    h->tx_attr->size = o.tx_size;
    h->rx_attr->size = o.rx_size;
    h->ep_attr->protocol = o.protocol;
    if (o.auth_key) {
        h->ep_attr->auth_key = static_cast<uint8_t *>(malloc(sizeof(cxi_auth_key)));
        CXIT_REQUIRE(h->ep_attr->auth_key != nullptr, "malloc");
        memcpy(h->ep_attr->auth_key, &*o.auth_key, sizeof(cxi_auth_key));
        h->ep_attr->auth_key_size = sizeof(cxi_auth_key);
    }
    return h;
}

InfoPtr get_info(const EpOptions &o, const char *domain, const Loc &loc) {
    InfoPtr hints = make_hints(o, domain);
    fi_info *out = nullptr;
    const char *node = o.src_service ? (o.src_node ? o.src_node : domain) : nullptr;
    uint64_t flags = o.src_service ? FI_SOURCE : 0;
    long rc = fi_getinfo(kApiVersion, node, o.src_service, flags, hints.get(), &out);
    if (rc != 0)
        fail(std::string("fi_getinfo(prov cxi, domain ") + (domain ? domain : "any") +
                 ") returned " + rc_str(rc),
             loc);
    if (!out) fail("fi_getinfo returned success but no info", loc);
    return InfoPtr(out);
}

std::vector<uint8_t> get_name(fid_t fid) {
    std::vector<uint8_t> buf(64);
    size_t len = buf.size();
    CXIT_CHECK(fi_getname(fid, buf.data(), &len));
    CXIT_REQUIRE(len > 0 && len <= 64, "fi_getname length " + std::to_string(len));
    buf.resize(len);
    return buf;
}

Endpoint::Endpoint(fid_domain *domain, const fi_info *info, const EpOptions &o)
    : domain_(domain), info_(fi_dupinfo(info)) {
    CXIT_REQUIRE(info_ != nullptr, "fi_dupinfo");
    info_->next = nullptr;
    if (o.tx_op_flags) info_->tx_attr->op_flags = o.tx_op_flags;
    if (o.rx_op_flags) info_->rx_attr->op_flags = o.rx_op_flags;

    fi_av_attr aa{};
    aa.type = o.av_type;
    aa.flags = o.av_flags;
    aa.rx_ctx_bits = o.rx_ctx_bits;
    aa.name = o.av_name;
    CXIT_CHECK(fi_av_open(domain, &aa, av_.out(), nullptr));

    fi_cq_attr ca{};
    ca.format = FI_CQ_FORMAT_TAGGED;
    ca.size = o.cq_size;
    ca.wait_obj = o.cq_wait;
    const bool readfrom = (info_->caps & FI_SOURCE) != 0;
    tx_ = std::make_unique<Cq>(domain, ca, readfrom);
    if (!o.shared_cq) rx_ = std::make_unique<Cq>(domain, ca, readfrom);

    if (o.counters) {
        fi_cntr_attr cattr{};
        cattr.events = FI_CNTR_EVENTS_COMP;
        cattr.wait_obj = FI_WAIT_UNSPEC;
        CXIT_CHECK(fi_cntr_open(domain, &cattr, scntr_.out(), &scntr_));
        CXIT_CHECK(fi_cntr_open(domain, &cattr, rcntr_.out(), &rcntr_));
    }

    CXIT_CHECK(fi_endpoint(domain, info_.get(), ep_.out(), nullptr));
    CXIT_CHECK(fi_ep_bind(ep_.get(), &av_->fid, 0));
    if (o.shared_cq) {
        CXIT_CHECK(fi_ep_bind(ep_.get(), &tx_->get()->fid, o.tx_cq_flags | o.rx_cq_flags));
    } else {
        CXIT_CHECK(fi_ep_bind(ep_.get(), &tx_->get()->fid, o.tx_cq_flags));
        CXIT_CHECK(fi_ep_bind(ep_.get(), &rx_->get()->fid, o.rx_cq_flags));
    }
    if (o.counters) {
        CXIT_CHECK(fi_ep_bind(ep_.get(), &scntr_->fid, FI_SEND));
        CXIT_CHECK(fi_ep_bind(ep_.get(), &rcntr_->fid, FI_RECV));
    }
    if (o.enable) enable();
}

Endpoint::~Endpoint() = default;

void Endpoint::enable() {
    CXIT_CHECK(fi_enable(ep_.get()));
    enable_done();
}

void Endpoint::enable_done() {
    name_ = get_name(&ep_->fid);
}

fi_addr_t Endpoint::insert(const std::vector<uint8_t> &addr, const Loc &loc) {
    fi_addr_t fa = FI_ADDR_NOTAVAIL;
    long rc = fi_av_insert(av_.get(), addr.data(), 1, &fa, 0, nullptr);
    if (rc != 1) fail("fi_av_insert returned " + rc_str(rc) + ", expected 1", loc);
    if (fa == FI_ADDR_NOTAVAIL) fail("fi_av_insert gave FI_ADDR_NOTAVAIL", loc);
    return fa;
}

void ping(Endpoint &src, fi_addr_t dest, Endpoint &dst, size_t len, uint32_t seed, bool tagged,
          uint64_t tag, const Loc &loc) {
    std::vector<uint8_t> out = pattern(len, seed), in(len + 1, 0);
    int rctx = 0, sctx = 0;
    if (tagged) {
        post(
            [&] {
                return fi_trecv(dst.ep(), in.data(), len, nullptr, FI_ADDR_UNSPEC, tag, 0, &rctx);
            },
            "fi_trecv", loc);
        post([&] { return fi_tsend(src.ep(), out.data(), len, nullptr, dest, tag, &sctx); },
             "fi_tsend", loc);
    } else {
        post([&] { return fi_recv(dst.ep(), in.data(), len, nullptr, FI_ADDR_UNSPEC, &rctx); },
             "fi_recv", loc);
        post([&] { return fi_send(src.ep(), out.data(), len, nullptr, dest, &sctx); }, "fi_send",
             loc);
    }
    wait_comp(src.tx(), &sctx, "ping send", loc);
    Comp rc = wait_comp(dst.rx(), &rctx, "ping receive", loc);
    if (rc.e.len != len)
        fail("received " + std::to_string(rc.e.len) + " bytes, sent " + std::to_string(len), loc);
    size_t bad = mismatch(in.data(), len, seed);
    if (bad != SIZE_MAX) fail("payload differs at offset " + std::to_string(bad), loc);
    if (in[len] != 0) fail("receive wrote past the message length", loc);
}

void wait_cntr(fid_cntr *c, uint64_t value, const std::string &what, const Loc &loc) {
    wait_until([&] { return fi_cntr_read(c) >= value; },
               what + " counter to reach " + std::to_string(value), kTimeout, loc);
}

// ---------------------------------------------------------------------------
Session::~Session() {
    domains_.clear();
    fabric_.reset();
}

fid_fabric *Session::fabric(const fi_info *info) {
    if (!fabric_) CXIT_CHECK(fi_fabric(info->fabric_attr, fabric_.out(), nullptr));
    return fabric_.get();
}

fid_domain *Session::domain(const char *name, const EpOptions &o, const Loc &loc) {
    std::string key = std::string(name) + (o.prov_key ? "/prov" : "/client") + "/" +
                      std::to_string(static_cast<int>(o.threading)) + "/mr" +
                      std::to_string(o.mr_mode) +
                      (o.auth_key ? "/svc" + std::to_string(o.auth_key->svc_id) + "/vni" +
                                        std::to_string(o.auth_key->vni)
                                  : "");
    auto it = domains_.find(key);
    if (it != domains_.end()) return it->second.get();
    EpOptions dopts = o;
    dopts.src_service = nullptr;
    InfoPtr info = get_info(dopts, name, loc);
    Fid<fid_domain> d;
    long rc = fi_domain(fabric(info.get()), info.get(), d.out(), nullptr);
    if (rc) fail(std::string("fi_domain(") + name + ") returned " + rc_str(rc), loc);
    fid_domain *raw = d.get();
    domains_.emplace(key, std::move(d));
    return raw;
}

EndpointPtr Session::endpoint(const char *domain_name, const EpOptions &o, const Loc &loc) {
    InfoPtr info = get_info(o, domain_name, loc);
    fid_domain *dom = domain(domain_name, o, loc);
    return std::make_unique<Endpoint>(dom, info.get(), o);
}

EndpointPtr Session::endpoint_at_pid(const char *domain_name, EpOptions o, uint32_t &pid,
                                     const Loc &loc) {
    for (uint32_t cand : candidate_pids()) {
        const std::string svc = std::to_string(cand);
        o.src_service = svc.c_str();
        o.enable = false;
        EndpointPtr ep = endpoint(domain_name, o, loc);
        const long rc = fi_enable(ep->ep());
        if (rc == -FI_ENOSPC) continue;  // another process holds it
        if (rc < 0) fail("fi_enable (FI_SOURCE pid) returned " + rc_str(rc), loc);
        ep->enable_done();
        pid = cand;
        return ep;
    }
    fail("no free PID among the candidates", loc);
}

// ---------------------------------------------------------------------------
uint8_t pattern_byte(size_t i, uint32_t seed) {
    uint32_t x = static_cast<uint32_t>(i) + seed * 0x9E3779B9u;
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 12;
    return static_cast<uint8_t>(x ^ (i >> 16));
}

void fill(void *buf, size_t len, uint32_t seed) {
    uint8_t *p = static_cast<uint8_t *>(buf);
    for (size_t i = 0; i < len; i++)
        p[i] = pattern_byte(i, seed);
}

size_t mismatch(const void *buf, size_t len, uint32_t seed) {
    const uint8_t *p = static_cast<const uint8_t *>(buf);
    for (size_t i = 0; i < len; i++)
        if (p[i] != pattern_byte(i, seed)) return i;
    return SIZE_MAX;
}

std::vector<uint8_t> pattern(size_t len, uint32_t seed) {
    std::vector<uint8_t> v(len);
    fill(v.data(), len, seed);
    return v;
}

CxiAddr decode_addr(const void *addr) {
    uint32_t w;
    std::memcpy(&w, addr, sizeof(w));
    return CxiAddr{(w >> 9) & 0xFFFFFu, w & 0x1FFu};
}

std::vector<uint8_t> encode_addr(uint32_t nic, uint32_t pid) {
    std::vector<uint8_t> v(kAddrLen, 0);
    uint32_t w = (pid & 0x1FFu) | ((nic & 0xFFFFFu) << 9);
    std::memcpy(v.data(), &w, sizeof(w));
    return v;
}

std::vector<uint32_t> candidate_pids(uint32_t span) {
    std::vector<uint32_t> v;
    const uint32_t base = 100 + static_cast<uint32_t>(getpid() % 300);
    for (uint32_t k = 0; k < 24; k++) {
        uint32_t pid = 100 + (base - 100 + k * 37) % 380;
        if (pid + span <= kPidAny) v.push_back(pid);
    }
    return v;
}

std::vector<size_t> pingpong_sizes() {
    std::vector<size_t> v{0,     3,     191,   193,   2047,    2049,   16383,
                          16385, 18433, 18434, 65537, 1048579, 4194303};
    for (size_t s = 1; s <= 4u * 1024 * 1024; s <<= 1)
        v.push_back(s);
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
}

void CollGroup::close() {
    if (mc) fi_close(&mc->fid);
    mc = nullptr;
    set.reset();
}

void join_group(CollGroup &g, fid_fabric *fabric, Endpoint &ep,
                const std::vector<fi_addr_t> &members, void *context, bool by_set_addr,
                const Loc &loc) {
    auto check = [&](long rc, const char *what) {
        if (rc) fail(std::string(what) + " returned " + rc_str(rc), loc);
    };
    fi_eq_attr ea{};
    check(try_open(g.eq, [&](auto **out) { return fi_eq_open(fabric, &ea, out, nullptr); }),
          "fi_eq_open");
    check(fi_ep_bind(ep.ep(), &g.eq.get()->fid, 0), "fi_ep_bind(eq)");
    fi_av_set_attr sa{};
    sa.start_addr = FI_ADDR_NOTAVAIL;
    check(try_open(g.set, [&](auto **out) { return fi_av_set(ep.av(), &sa, out, nullptr); }),
          "fi_av_set");
    for (fi_addr_t a : members)
        check(fi_av_set_insert(g.set.get(), a), "fi_av_set_insert");
    fi_addr_t coll = FI_ADDR_NOTAVAIL;
    if (by_set_addr) check(fi_av_set_addr(g.set.get(), &coll), "fi_av_set_addr");
    check(fi_join_collective(ep.ep(), coll, g.set.get(), 0, &g.mc, context), "fi_join_collective");
    uint32_t event = 0;
    fi_eq_entry ev{};
    if (fi_eq_read(g.eq.get(), &event, &ev, sizeof(ev), 0) != ssize_t(sizeof(ev)))
        fail("no event on the EQ after fi_join_collective", loc);
    if (event != FI_JOIN_COMPLETE || ev.fid != &g.mc->fid || ev.context != context)
        fail("the join's event is not FI_JOIN_COMPLETE for its mc and context", loc);
}

int64_t allreduce_sum(Endpoint &ep, const CollGroup &g, int64_t mine, const std::string &what,
                      const Loc &loc) {
    int64_t sum = 0;
    int ctx = 0;
    post(
        [&] {
            return fi_allreduce(ep.ep(), &mine, 1, nullptr, &sum, nullptr, g.addr(), FI_INT64,
                                FI_SUM, 0, &ctx);
        },
        what, loc);
    wait_comp(ep.tx(), &ctx, what, loc);
    return sum;
}

int reg_cuda(fid_domain *domain, void *buf, size_t len, uint64_t access, fid_ep *ep,
             Fid<fid_mr> &mr) {
    iovec iov{buf, len};
    fi_mr_attr attr{};
    attr.mr_iov = &iov;
    attr.iov_count = 1;
    attr.access = access;
    attr.iface = FI_HMEM_CUDA;
    attr.device.cuda = 0;
    int rc = try_open(mr, [&](fid_mr **out) { return fi_mr_regattr(domain, &attr, 0, out); });
    if (rc || !ep) return rc;
    if ((rc = fi_mr_bind(mr.get(), &ep->fid, 0))) return rc;
    return fi_mr_enable(mr.get());
}

std::vector<size_t> hmem_sizes() {
    return {8, 4096, 65537, (size_t{1} << 20) + 3, size_t{16} << 20, size_t{64} << 20};
}

}  // namespace cxit

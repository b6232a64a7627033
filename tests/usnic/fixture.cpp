// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// gtest fixtures of the usnic conformance suite (see fixture.hpp) and main().
#include "fixture.hpp"

#include <csignal>
#include <cstdlib>
#include <cstring>

#ifndef USNICT_PLUGIN_DIR
#define USNICT_PLUGIN_DIR ""
#endif

namespace usnict {

fi_ep_type ep_type(Kind k) {
    switch (k) {
        case Kind::dgram:
            return FI_EP_DGRAM;
        case Kind::msg:
            return FI_EP_MSG;
        case Kind::rdm:
            return FI_EP_RDM;
    }
    return FI_EP_UNSPEC;
}

const char *kind_name(Kind k) {
    switch (k) {
        case Kind::dgram:
            return "dgram";
        case Kind::msg:
            return "msg";
        case Kind::rdm:
            return "rdm";
    }
    return "?";
}

std::string kind_param_name(const ::testing::TestParamInfo<Kind> &info) {
    return kind_name(info.param);
}

void PrintTo(Kind k, std::ostream *os) {
    *os << kind_name(k);
}

void fatal(const std::string &msg, const std::source_location &loc) {
    ADD_FAILURE_AT(loc.file_name(), static_cast<int>(loc.line())) << msg;
    throw TestAbort(msg);
}

void require_ok(long rc, const char *what, const std::source_location &loc) {
    if (rc != 0) fatal(std::string(what) + " returned " + rc_str(rc), loc);
}

// ---------------------------------------------------------------------------
// UsnicTest

InfoPtr UsnicTest::info_of(fi_ep_type type, uint64_t mode) {
    InfoPtr hints = usnic_hints(type, mode);
    GetinfoResult r = getinfo(hints.get());
    if (r.rc != 0) fatal("fi_getinfo(usnic) returned " + rc_str(r.rc));
    for (const fi_info *i : r.usnic) {
        if (i->ep_attr->type != type || !i->domain_attr->name) continue;
        if (std::strcmp(i->domain_attr->name, "usnic_0") != 0) continue;
        fi_info *copy = fi_dupinfo(i);
        if (!copy) fatal("fi_dupinfo failed");
        return InfoPtr(copy);
    }
    fatal("no usnic info of the requested type on usnic_0");
}

void UsnicTest::open_domain(const fi_info *info) {
    if (!fabric_)
        USNICT_REQUIRE_OK(USNICT_OPEN(fabric_, fi_fabric(info->fabric_attr, OUT, nullptr)));
    if (!domain_)
        USNICT_REQUIRE_OK(USNICT_OPEN(
            domain_, fi_domain(fabric_.get(), const_cast<fi_info *>(info), OUT, nullptr)));
}

Fid<fid_cq> UsnicTest::open_cq(fi_cq_format format, fi_wait_obj wait, size_t size) {
    fi_cq_attr attr{};
    attr.format = format;
    attr.wait_obj = wait;
    attr.size = size;
    Fid<fid_cq> cq;
    USNICT_REQUIRE_OK(USNICT_OPEN(cq, fi_cq_open(domain(), &attr, OUT, nullptr)));
    return cq;
}

Fid<fid_eq> UsnicTest::open_eq(fi_wait_obj wait, uint64_t flags) {
    fi_eq_attr attr{};
    attr.wait_obj = wait;
    attr.flags = flags;
    Fid<fid_eq> eq;
    USNICT_REQUIRE_OK(USNICT_OPEN(eq, fi_eq_open(fabric(), &attr, OUT, nullptr)));
    return eq;
}

Fid<fid_av> UsnicTest::open_av(uint64_t flags) {
    fi_av_attr attr{};
    attr.type = FI_AV_MAP;
    attr.flags = flags;
    Fid<fid_av> av;
    USNICT_REQUIRE_OK(USNICT_OPEN(av, fi_av_open(domain(), &attr, OUT, nullptr)));
    return av;
}

std::unique_ptr<Endpoint> UsnicTest::endpoint(Kind kind, const EpOpts &opts, const fi_info *from) {
    auto e = std::make_unique<Endpoint>();
    e->kind = kind;
    e->format = opts.format;
    if (from) {
        e->info.reset(fi_dupinfo(from));
        if (!e->info) fatal("fi_dupinfo failed");
    } else {
        e->info = info_of(ep_type(kind), opts.mode);
    }
    open_domain(e->info.get());
    USNICT_REQUIRE_OK(USNICT_OPEN(e->ep, fi_endpoint(domain(), e->info.get(), OUT, nullptr)));
    e->tx_cq = open_cq(opts.format);
    if (opts.shared_cq) {
        USNICT_REQUIRE_OK(fi_ep_bind(e->ep.get(), e->tx_cq.fid(), opts.tx_bind | FI_RECV));
    } else {
        e->rx_cq = open_cq(opts.format, opts.rx_wait);
        USNICT_REQUIRE_OK(fi_ep_bind(e->ep.get(), e->tx_cq.fid(), opts.tx_bind));
        USNICT_REQUIRE_OK(fi_ep_bind(e->ep.get(), e->rx_cq.fid(), FI_RECV));
    }
    if (kind == Kind::msg) {
        e->eq = open_eq();
        USNICT_REQUIRE_OK(fi_ep_bind(e->ep.get(), e->eq.fid(), 0));
    } else if (opts.av) {
        e->av = open_av();
        USNICT_REQUIRE_OK(fi_ep_bind(e->ep.get(), e->av.fid(), 0));
    }
    if (opts.enable) USNICT_REQUIRE_OK(fi_enable(e->ep.get()));
    return e;
}

std::unique_ptr<Endpoint> UsnicTest::bare_endpoint(Kind kind, uint64_t mode) {
    auto e = std::make_unique<Endpoint>();
    e->kind = kind;
    e->info = info_of(ep_type(kind), mode);
    open_domain(e->info.get());
    USNICT_REQUIRE_OK(USNICT_OPEN(e->ep, fi_endpoint(domain(), e->info.get(), OUT, nullptr)));
    return e;
}

sockaddr_in UsnicTest::getname(fid_t fid) {
    sockaddr_in sin{};
    size_t len = sizeof(sin);
    USNICT_REQUIRE_OK(fi_getname(fid, &sin, &len));
    if (len != sizeof(sin)) fatal("fi_getname length " + std::to_string(len));
    return sin;
}

fi_addr_t UsnicTest::av_insert(fid_av *av, const sockaddr_in &addr) {
    fi_addr_t fa = FI_ADDR_NOTAVAIL;
    const int rc = fi_av_insert(av, &addr, 1, &fa, 0, nullptr);
    if (rc != 1) fatal("fi_av_insert(" + sin_str(addr) + ") returned " + rc_str(rc));
    if (fa == FI_ADDR_NOTAVAIL) fatal("fi_av_insert gave FI_ADDR_NOTAVAIL");
    return fa;
}

CmEvent UsnicTest::read_cm(fid_eq *eq) {
    CmEvent ev;
    alignas(fi_eq_cm_entry) uint8_t buf[sizeof(fi_eq_cm_entry) + 1024] = {};
    Deadline d;
    for (;;) {
        ev.rc = fi_eq_sread(eq, &ev.event, buf, sizeof(buf), 100, 0);
        if (ev.rc != -FI_EAGAIN) break;
        if (d.expired()) fatal("no event on the EQ");
    }
    if (ev.rc == -FI_EAVAIL) {
        const long n = fi_eq_readerr(eq, &ev.err, 0);
        if (n != static_cast<long>(sizeof(fi_eq_err_entry)))
            fatal("fi_eq_readerr returned " + rc_str(n));
        const auto *p = static_cast<const uint8_t *>(ev.err.err_data);
        if (p) ev.err_data.assign(p, p + ev.err.err_data_size);
        ev.fid = ev.err.fid;
        return ev;
    }
    if (ev.rc < 0) fatal("fi_eq_sread returned " + rc_str(ev.rc));
    const bool cm = ev.event == FI_CONNREQ || ev.event == FI_CONNECTED || ev.event == FI_SHUTDOWN;
    if (cm && static_cast<size_t>(ev.rc) >= sizeof(fi_eq_cm_entry)) {
        const auto *cm = reinterpret_cast<const fi_eq_cm_entry *>(buf);
        ev.fid = cm->fid;
        ev.info.reset(cm->info);
        ev.data.assign(buf + sizeof(fi_eq_cm_entry), buf + ev.rc);
    } else if (static_cast<size_t>(ev.rc) >= sizeof(fi_eq_entry)) {
        ev.fid = reinterpret_cast<const fi_eq_entry *>(buf)->fid;
    }
    return ev;
}

// ---------------------------------------------------------------------------
// PairBase

void PairBase::make_pair(const EpOpts &oa, const EpOpts &ob) {
    if (kind() == Kind::msg) return connect_msg(oa, ob);
    a_ = endpoint(kind(), oa);
    b_ = endpoint(kind(), ob);
    a_->peer = av_insert(a_->av.get(), getname(b_->ep.fid()));
    b_->peer = av_insert(b_->av.get(), getname(a_->ep.fid()));
}

void PairBase::connect_msg(const EpOpts &oa, const EpOpts &ob) {
    InfoPtr info = info_of(FI_EP_MSG, oa.mode);
    open_domain(info.get());
    pep_eq_ = open_eq();
    USNICT_REQUIRE_OK(USNICT_OPEN(pep_, fi_passive_ep(fabric(), info.get(), OUT, nullptr)));
    USNICT_REQUIRE_OK(fi_pep_bind(pep_.get(), pep_eq_.fid(), 0));
    USNICT_REQUIRE_OK(fi_listen(pep_.get()));
    const sockaddr_in srv = getname(pep_.fid());
    a_ = endpoint(Kind::msg, oa);
    USNICT_REQUIRE_OK(fi_connect(a_->ep.get(), &srv, nullptr, 0));
    CmEvent req = read_cm(pep_eq_.get());
    if (req.rc < 0 || req.event != FI_CONNREQ || !req.info)
        fatal("expected FI_CONNREQ, got " + rc_str(req.rc) + " event " + std::to_string(req.event));
    b_ = endpoint(Kind::msg, ob, req.info.get());
    USNICT_REQUIRE_OK(fi_accept(b_->ep.get(), nullptr, 0));
    for (Endpoint *e : {b_.get(), a_.get()}) {
        CmEvent c = read_cm(e->eq.get());
        if (c.rc < 0 || c.event != FI_CONNECTED)
            fatal("expected FI_CONNECTED, got " + rc_str(c.rc) + " event " +
                  std::to_string(c.event));
    }
}

long read_batch(fid_cq *cq, fi_cq_format format, std::vector<Entry> &out) {
    fi_cq_data_entry buf[8];
    long n = fi_cq_read(cq, buf, 8);
    if (n == -FI_EAVAIL) {
        fi_cq_err_entry err{};
        n = fi_cq_readerr(cq, &err, 0);
        if (n == 1)
            out.push_back(Entry{err.op_context, err.flags, err.len, err.err, err.prov_errno});
        return n;
    }
    for (long i = 0; i < n; i++) {
        Entry e;
        if (format == FI_CQ_FORMAT_CONTEXT) {
            e.ctx = reinterpret_cast<fi_cq_entry *>(buf)[i].op_context;
        } else if (format == FI_CQ_FORMAT_MSG) {
            const fi_cq_msg_entry &m = reinterpret_cast<fi_cq_msg_entry *>(buf)[i];
            e = Entry{m.op_context, m.flags, m.len, 0, 0};
        } else {
            e = Entry{buf[i].op_context, buf[i].flags, buf[i].len, 0, 0};
        }
        out.push_back(e);
    }
    return n;
}

void PairBase::drain(Endpoint &e) {
    for (fid_cq *cq : {e.tx_cq.get(), e.rx_cq.get()}) {
        if (!cq) continue;
        std::vector<Entry> got;
        long n;
        while ((n = read_batch(cq, e.format, got)) > 0) {
        }
        if (n != -FI_EAGAIN)
            fatal(std::string("CQ read on ") + kind_name(e.kind) + ": " + rc_str(n));
        for (const Entry &x : got) {
            const bool rx = e.rx_cq ? cq == e.rx_cq.get() : (x.flags & FI_RECV) != 0;
            (rx ? e.rx_done : e.tx_done).push_back(x);
        }
    }
}

void PairBase::progress() {
    if (a_) drain(*a_);
    if (b_) drain(*b_);
}

Entry PairBase::wait_tx(Endpoint &e) {
    Deadline d;
    while (e.tx_done.empty()) {
        if (d.expired()) fatal("no send completion");
        progress();
    }
    Entry x = e.tx_done.front();
    e.tx_done.pop_front();
    return x;
}

Entry PairBase::wait_rx(Endpoint &e) {
    Deadline d;
    while (e.rx_done.empty()) {
        if (d.expired()) fatal("no receive completion");
        progress();
    }
    Entry x = e.rx_done.front();
    e.rx_done.pop_front();
    return x;
}

void PairBase::send(Endpoint &from, const void *buf, size_t len, void *ctx) {
    Deadline d;
    for (;;) {
        const long rc = fi_send(from.ep.get(), buf, len, nullptr, from.peer, ctx);
        if (rc == 0) return;
        if (rc != -FI_EAGAIN) fatal("fi_send(" + std::to_string(len) + ") returned " + rc_str(rc));
        if (d.expired()) fatal("fi_send kept returning -FI_EAGAIN");
        progress();
    }
}

void PairBase::recv(Endpoint &to, void *buf, size_t len, void *ctx) {
    Deadline d;
    for (;;) {
        const long rc = fi_recv(to.ep.get(), buf, len, nullptr, FI_ADDR_UNSPEC, ctx);
        if (rc == 0) return;
        if (rc != -FI_EAGAIN) fatal("fi_recv(" + std::to_string(len) + ") returned " + rc_str(rc));
        if (d.expired()) fatal("fi_recv kept returning -FI_EAGAIN");
        progress();
    }
}

size_t PairBase::max_msg() const {
    return kind() == Kind::dgram ? dgram_max_payload("lo") : size_t{200000};
}

}  // namespace usnict

int main(int argc, char **argv) {
    // Defaults for running the binary by hand; ctest sets both explicitly.
    if (USNICT_PLUGIN_DIR[0] != '\0') setenv("FI_PROVIDER_PATH", USNICT_PLUGIN_DIR, 0);
    setenv("FI_USNIC_IFACES", "lo", 0);
    signal(SIGPIPE, SIG_IGN);
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}

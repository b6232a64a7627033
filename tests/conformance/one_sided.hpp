// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The fixture of the one-sided suites (RMA, atomics): a pair of endpoints, a target
// buffer on endpoint b exposed through an MR, and helpers for error completions.
// Endpoint a (cxi0) is the initiator; b lives on the transport's peer domain.
#pragma once

#include <rdma/fi_cxi_ext.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_ext.h>
#include <rdma/fi_rma.h>

#include <functional>
#include <string>
#include <vector>

#include "fixture.hpp"

namespace cxit {

constexpr uint64_t kRemote = FI_REMOTE_READ | FI_REMOTE_WRITE;

class OneSidedTest : public TransportTest {
  protected:
    virtual uint64_t caps() const { return FI_MSG | FI_RMA; }
    EpOptions opts(bool prov_key = true) {
        EpOptions o;
        o.caps = caps();
        o.prov_key = prov_key;
        return o;
    }
    // Registers target_ (len bytes, filled with 0xEE) on b for `access`; returns the key.
    uint64_t expose(Pair &p, size_t len, uint64_t access = kRemote, bool prov_key = true,
                    uint64_t client_key = 7) {
        target_.assign(len, 0xEE);
        fid_domain *d = domain(peer_domain(), opts(prov_key));
        EXPECT_OK(CXIT_OPEN(
            mr_, fi_mr_reg(d, target_.data(), len, access, 0, client_key, 0, OUT, nullptr)));
        EXPECT_OK(fi_mr_bind(mr_.get(), &p.b->ep()->fid, 0));
        EXPECT_OK(fi_mr_enable(mr_.get()));
        return fi_mr_key(mr_.get());
    }
    // The operation `op` (posted with context &ctx) fails at the target with FI_EIO.
    void expect_eio(Pair &p, const std::function<ssize_t(void *)> &op, const char *what) {
        int ctx = 0;
        post([&] { return op(&ctx); }, what);
        ErrComp e = wait_err(p.a->tx(), &ctx, what);
        EXPECT_EQ(FI_EIO, e.e.err) << what;
    }
    // A write or read from a to b's MR, waited for.
    Comp write(Pair &p, const std::vector<uint8_t> &src, uint64_t off, uint64_t key) {
        int ctx = 0;
        post(
            [&] {
                return fi_write(p.a->ep(), src.data(), src.size(), nullptr, p.a2b, off, key, &ctx);
            },
            "fi_write");
        return wait_comp(p.a->tx(), &ctx, "write of " + std::to_string(src.size()));
    }
    Comp read(Pair &p, std::vector<uint8_t> &dst, uint64_t off, uint64_t key) {
        int ctx = 0;
        post(
            [&] {
                return fi_read(p.a->ep(), dst.data(), dst.size(), nullptr, p.a2b, off, key, &ctx);
            },
            "fi_read");
        return wait_comp(p.a->tx(), &ctx, "read of " + std::to_string(dst.size()));
    }
    // The emulated hardware counter `id` of domain d (cntr_read extension).
    uint64_t hw(fid_domain *d, unsigned id) {
        fi_cxi_dom_ops *ops = nullptr;
        EXPECT_OK(
            fi_open_ops(&d->fid, FI_CXI_DOM_OPS_6, 0, reinterpret_cast<void **>(&ops), nullptr));
        uint64_t v = 0;
        EXPECT_OK(ops->cntr_read(&d->fid, id, &v, nullptr));
        return v;
    }
    // Both sides of the test; the MR (declared after) is closed before the endpoints.
    Pair &pair(const EpOptions &o) { return p_ = make_pair(o, o); }
    Pair p_;
    std::vector<uint8_t> target_;
    Fid<fid_mr> mr_;
};

}  // namespace cxit

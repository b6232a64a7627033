// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Walks a provider's operation tables. libfabric's inline wrappers (fi_barrier,
// fi_tsend, fi_cq_read...) call through them without looking, so every member within a
// table's `size` must be a function: a NULL one is a crash in the application. Shared by
// the cxi and usnic suites; the findings are names such as "ep.collective[1]".
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace testutil {

class OpsWalk {
  public:
    // Every operation table starts with its size in bytes, then function pointers.
    // `optional_from`: members from that index on are ones libfabric checks before calling.
    void table(const std::string &what, const void *t, size_t optional_from = SIZE_MAX) {
        if (!t) {
            bad_.push_back(what + " (no table)");
            return;
        }
        size_t size;
        std::memcpy(&size, t, sizeof(size));
        using Fn = void (*)();
        if (size < sizeof(size_t) || size > sizeof(size_t) + 64 * sizeof(Fn) ||
            (size - sizeof(size_t)) % sizeof(Fn)) {
            bad_.push_back(what + " (size " + std::to_string(size) + ")");
            return;
        }
        for (size_t i = 0; i < std::min((size - sizeof(size_t)) / sizeof(Fn), optional_from); i++) {
            Fn f;
            std::memcpy(&f, static_cast<const char *>(t) + sizeof(size_t) + i * sizeof(Fn),
                        sizeof(f));
            if (!f) bad_.push_back(what + "[" + std::to_string(i) + "]");
        }
    }
    // fi_ops' tostr and ops_set are called only through FI_CHECK_OP, which tests for NULL.
    void fid(const std::string &what, const struct fid *f) {
        table(what + ".fid", f->ops, offsetof(fi_ops, tostr) / sizeof(void (*)()) - 1);
    }
    void fabric(fid_fabric *f) {
        fid("fabric", &f->fid);
        table("fabric.ops", f->ops);
    }
    void domain(fid_domain *d) {
        fid("domain", &d->fid);
        table("domain.ops", d->ops);
        table("domain.mr", d->mr);
    }
    // Endpoints, scalable endpoints and their contexts: all seven tables.
    void ep(const std::string &what, fid_ep *e) {
        fid(what, &e->fid);
        table(what + ".ops", e->ops);
        table(what + ".cm", e->cm);
        table(what + ".msg", e->msg);
        table(what + ".rma", e->rma);
        table(what + ".tagged", e->tagged);
        table(what + ".atomic", e->atomic);
        table(what + ".collective", e->collective);
    }
    void pep(fid_pep *p) {
        fid("pep", &p->fid);
        table("pep.ops", p->ops);
        table("pep.cm", p->cm);
    }
    void cq(fid_cq *c) {
        fid("cq", &c->fid);
        table("cq.ops", c->ops);
    }
    void cntr(fid_cntr *c) {
        fid("cntr", &c->fid);
        table("cntr.ops", c->ops);
    }
    void eq(fid_eq *e) {
        fid("eq", &e->fid);
        table("eq.ops", e->ops);
    }
    void av(fid_av *a) {
        fid("av", &a->fid);
        table("av.ops", a->ops);
    }
    void mr(fid_mr *m) { fid("mr", &m->fid); }
    void wait(fid_wait *w) {
        fid("wait", &w->fid);
        table("wait.ops", w->ops);
    }
    void poll(fid_poll *p) {
        fid("poll", &p->fid);
        table("poll.ops", p->ops);
    }

    const std::vector<std::string> &null_members() const { return bad_; }
    std::string report() const {
        std::string s;
        for (const std::string &b : bad_)
            s += " " + b;
        return s;
    }

  private:
    std::vector<std::string> bad_;
};

}  // namespace testutil

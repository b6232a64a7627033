// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "fixture.hpp"

#include <chrono>
#include <cstring>

namespace shared_test {

std::string flavour_name(const ::testing::TestParamInfo<Flavour> &info) {
    return info.param.name;
}

fi_info *SharedTest::hints(const char *domain) const {
    fi_info *h = fi_allocinfo();
    h->caps = FI_MSG;
    h->ep_attr->type = FI_EP_RDM;
    h->mode = FI_CONTEXT;  // every operation below passes an fi_context of its own
    h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
    h->fabric_attr->prov_name = strdup(GetParam().prov);
    if (domain) h->domain_attr->name = strdup(domain);
    if (threading_ != FI_THREAD_UNSPEC) h->domain_attr->threading = threading_;
    return h;
}

void SharedTest::SetUp() {
    fi_info *h = hints(GetParam().dom_a);
    fi_info *out = nullptr;
    int rc = fi_getinfo(FI_VERSION(1, 15), nullptr, nullptr, 0, h, &out);
    fi_freeinfo(h);
    if (rc == -FI_ENODATA) GTEST_SKIP() << GetParam().prov << " is not available here";
    ASSERT_OK(rc);
    fi_freeinfo(out);
    open_side(a_, GetParam().dom_a);
    open_side(b_, GetParam().dom_b);
}

void SharedTest::open_side(Side &s, const char *domain) {
    fi_info *h = hints(domain);
    fi_info *out = nullptr;
    int rc = fi_getinfo(FI_VERSION(1, 15), nullptr, nullptr, 0, h, &out);
    fi_freeinfo(h);
    ASSERT_OK(rc);
    s.info.reset(out);
    s.local_mr = (out->domain_attr->mr_mode & FI_MR_LOCAL) != 0;
    ASSERT_OK(fi_fabric(out->fabric_attr, s.fabric.out(), nullptr));
    ASSERT_OK(fi_domain(s.fabric.get(), out, s.domain.out(), nullptr));
    fi_av_attr av{};
    av.type = FI_AV_UNSPEC;
    ASSERT_OK(fi_av_open(s.domain.get(), &av, s.av.out(), nullptr));
    fi_cq_attr cq{};
    cq.format = FI_CQ_FORMAT_MSG;
    cq.wait_obj = FI_WAIT_NONE;
    ASSERT_OK(fi_cq_open(s.domain.get(), &cq, s.cq.out(), nullptr));
    ASSERT_OK(fi_endpoint(s.domain.get(), out, s.ep.out(), nullptr));
    ASSERT_OK(fi_ep_bind(s.ep.get(), &s.av->fid, 0));
    ASSERT_OK(fi_ep_bind(s.ep.get(), &s.cq->fid, FI_TRANSMIT | FI_RECV));
    ASSERT_OK(fi_enable(s.ep.get()));
    size_t len = 0;
    ASSERT_RC(-FI_ETOOSMALL, fi_getname(&s.ep->fid, nullptr, &len));
    s.name.resize(len);
    ASSERT_OK(fi_getname(&s.ep->fid, s.name.data(), &len));
}

void SharedTest::connect_sides() {
    ASSERT_EQ(1, fi_av_insert(a_.av.get(), b_.name.data(), 1, &a_.peer, 0, nullptr));
    ASSERT_EQ(1, fi_av_insert(b_.av.get(), a_.name.data(), 1, &b_.peer, 0, nullptr));
}

Buffer SharedTest::buffer(Side &s, size_t len) {
    Buffer b;
    b.bytes.assign(len ? len : 1, 0);
    if (s.local_mr) {
        int rc = fi_mr_reg(s.domain.get(), b.bytes.data(), b.bytes.size(), FI_SEND | FI_RECV, 0, 0,
                           0, b.mr.out(), nullptr);
        b.mr.drop_on_error(rc);
        EXPECT_OK(rc) << "fi_mr_reg";
    }
    return b;
}

ssize_t SharedTest::wait_cq(Side &s, fi_cq_msg_entry &e, fi_cq_err_entry *err, Side *peer) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    Side &other = peer ? *peer : &s == &a_ ? b_ : a_;
    for (;;) {
        if (!s.stash.empty()) {
            e = s.stash.front();
            s.stash.pop_front();
            return 1;
        }
        ssize_t rc = fi_cq_read(s.cq.get(), &e, 1);
        if (rc == -FI_EAVAIL && err) {
            *err = fi_cq_err_entry{};
            EXPECT_EQ(1, fi_cq_readerr(s.cq.get(), err, 0));
            return rc;
        }
        if (rc != -FI_EAGAIN) return rc;
        // Progress is manual (on CQ reads) with both providers, and this side's entry
        // may wait for the other side to answer: read its CQ too, keeping what it holds.
        fi_cq_msg_entry o;
        if (fi_cq_read(other.cq.get(), &o, 1) == 1) other.stash.push_back(o);
        if (std::chrono::steady_clock::now() > until) return -FI_ETIMEDOUT;
    }
}

}  // namespace shared_test

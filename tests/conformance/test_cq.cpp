// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Completion queues (spec §9 "Completion queue", §5.5): attributes, every
// entry format with fi_cq_read/fi_cq_readfrom, the error queue.
#include <cstring>
#include <thread>

#include "fixture.hpp"

using namespace cxit;

namespace {

size_t entry_size(fi_cq_format f) {
    switch (f) {
        case FI_CQ_FORMAT_UNSPEC:
        case FI_CQ_FORMAT_CONTEXT:
            return sizeof(fi_cq_entry);
        case FI_CQ_FORMAT_MSG:
            return sizeof(fi_cq_msg_entry);
        case FI_CQ_FORMAT_DATA:
            return sizeof(fi_cq_data_entry);
        case FI_CQ_FORMAT_TAGGED:
            return sizeof(fi_cq_tagged_entry);
    }
    return 0;
}

// An endpoint whose TX and RX completions both go to one CQ of format `fmt`.
struct FmtEp {
    Fid<fid_av> av;
    Fid<fid_cq> cq;
    Fid<fid_ep> ep;
    fi_addr_t self = FI_ADDR_NOTAVAIL;
};

class CqTest : public CxiTest {
  protected:
    void open_fmt_ep(FmtEp &f, const fi_cq_attr *attr, uint64_t caps) {
        EpOptions o;
        o.caps = caps;
        InfoPtr info = get_info(o, "cxi0");
        fid_domain *d = domain("cxi0", o);
        fi_av_attr aa{};
        aa.type = FI_AV_TABLE;
        CXIT_CHECK(fi_av_open(d, &aa, f.av.out(), nullptr));
        fi_cq_attr ca = attr ? *attr : fi_cq_attr{};
        CXIT_CHECK(fi_cq_open(d, attr ? &ca : nullptr, f.cq.out(), nullptr));
        CXIT_CHECK(fi_endpoint(d, info.get(), f.ep.out(), nullptr));
        CXIT_CHECK(fi_ep_bind(f.ep.get(), &f.av->fid, 0));
        CXIT_CHECK(fi_ep_bind(f.ep.get(), &f.cq->fid, FI_TRANSMIT | FI_RECV));
        CXIT_CHECK(fi_enable(f.ep.get()));
        std::vector<uint8_t> name = get_name(&f.ep->fid);
        CXIT_CHECK(fi_av_insert(f.av.get(), name.data(), 1, &f.self, 0, nullptr));
    }

    // Reads `want` entries of format `fmt` (raw bytes, in CQ order) with
    // fi_cq_readfrom, `count` at a time.
    static std::vector<uint8_t> read_raw(fid_cq *cq, fi_cq_format fmt, size_t want,
                                         std::vector<fi_addr_t> &src) {
        const size_t sz = entry_size(fmt);
        std::vector<uint8_t> out;
        wait_until(
            [&] {
                uint8_t buf[4 * sizeof(fi_cq_tagged_entry)];
                fi_addr_t s[4];
                ssize_t rc = fi_cq_readfrom(cq, buf, 4, s);
                if (rc == -FI_EAGAIN) return false;
                if (rc < 0) CXIT_FAIL("fi_cq_readfrom returned " + rc_str(rc));
                out.insert(out.end(), buf, buf + rc * sz);
                src.insert(src.end(), s, s + rc);
                return out.size() >= want * sz;
            },
            "raw CQ entries");
        return out;
    }
};

TEST_F(CqTest, OpenWithNullAttrGivesContextFormat) {
    FmtEp f;
    open_fmt_ep(f, nullptr, FI_MSG);
    char msg[4] = "abc", in[4] = {};
    int rctx = 0;
    ASSERT_OK(fi_recv(f.ep.get(), in, sizeof(in), nullptr, FI_ADDR_UNSPEC, &rctx));
    ASSERT_OK(fi_inject(f.ep.get(), msg, sizeof(msg), f.self));
    uint8_t buf[sizeof(fi_cq_tagged_entry)];
    std::memset(buf, 0xA5, sizeof(buf));
    wait_until(
        [&] {
            ssize_t rc = fi_cq_read(f.cq.get(), buf, 1);
            if (rc < 0 && rc != -FI_EAGAIN) CXIT_FAIL("fi_cq_read: " + rc_str(rc));
            return rc == 1;
        },
        "receive completion");
    fi_cq_entry e;
    std::memcpy(&e, buf, sizeof(e));
    EXPECT_EQ(&rctx, e.op_context);
    for (size_t i = sizeof(fi_cq_entry); i < sizeof(buf); i++)
        ASSERT_EQ(0xA5, buf[i]) << "wrote beyond a fi_cq_entry at byte " << i;
    EXPECT_STREQ("abc", in);
}

TEST_F(CqTest, OpenEveryFormatAndRejectUnknown) {
    fid_domain *d = domain("cxi0");
    for (fi_cq_format f : {FI_CQ_FORMAT_UNSPEC, FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG,
                           FI_CQ_FORMAT_DATA, FI_CQ_FORMAT_TAGGED}) {
        fi_cq_attr a{};
        a.format = f;
        Fid<fid_cq> cq;
        EXPECT_OK(CXIT_OPEN(cq, fi_cq_open(d, &a, OUT, nullptr))) << "format " << f;
    }
    fi_cq_attr a{};
    a.format = static_cast<fi_cq_format>(42);
    Fid<fid_cq> cq;
    EXPECT_RC(-FI_ENOSYS, CXIT_OPEN(cq, fi_cq_open(d, &a, OUT, nullptr)));
}

TEST_F(CqTest, UnsupportedWaitObjects_ENOSYS) {
    fid_domain *d = domain("cxi0");
    // (FI_WAIT_SET is avoided: it would also need attr->wait_set.)
    for (fi_wait_obj w : {FI_WAIT_MUTEX_COND, FI_WAIT_YIELD}) {
        fi_cq_attr a{};
        a.format = FI_CQ_FORMAT_TAGGED;
        a.wait_obj = w;
        Fid<fid_cq> cq;
        EXPECT_RC(-FI_ENOSYS, CXIT_OPEN(cq, fi_cq_open(d, &a, OUT, nullptr))) << "wait_obj " << w;
    }
}

TEST_F(CqTest, EmptyQueueReads_EAGAIN) {
    fi_cq_attr a{};
    a.format = FI_CQ_FORMAT_TAGGED;
    Fid<fid_cq> cq;
    ASSERT_OK(fi_cq_open(domain("cxi0"), &a, cq.out(), nullptr));
    fi_cq_tagged_entry e;
    fi_addr_t src;
    EXPECT_RC(-FI_EAGAIN, fi_cq_read(cq.get(), &e, 1));
    EXPECT_RC(-FI_EAGAIN, fi_cq_readfrom(cq.get(), &e, 1, &src));
    fi_cq_err_entry err{};
    EXPECT_RC(-FI_EAGAIN, fi_cq_readerr(cq.get(), &err, 0));
}

// readfrom names a received message's sender when the endpoint asks for sources
// (FI_SOURCE, or FI_DIRECTED_RECV, whose matching looks the sender up anyway); without,
// the sender is not looked up and the source is FI_ADDR_NOTAVAIL, as upstream's without
// FI_SOURCE. A message to self into a posted receive, then one that waits unexpected.
TEST_F(CqTest, ReadfromNamesTheSenderWhenTheEndpointAsks) {
    const struct {
        uint64_t caps;
        bool named;
    } cases[] = {
        {FI_TAGGED, false}, {FI_TAGGED | FI_SOURCE, true}, {FI_TAGGED | FI_DIRECTED_RECV, true}};
    for (const auto &c : cases) {
        SCOPED_TRACE(fi_tostr(&c.caps, FI_TYPE_CAPS));
        fi_cq_attr a{};
        a.format = FI_CQ_FORMAT_TAGGED;
        FmtEp f;
        open_fmt_ep(f, &a, c.caps);
        uint64_t out = 7, in[2] = {};
        int sctx[2], rctx[2];
        std::vector<fi_addr_t> src;
        std::vector<uint8_t> raw;
        auto read = [&](size_t n) {
            std::vector<uint8_t> r = read_raw(f.cq.get(), FI_CQ_FORMAT_TAGGED, n, src);
            raw.insert(raw.end(), r.begin(), r.end());
        };
        ASSERT_OK(fi_trecv(f.ep.get(), &in[0], 8, nullptr, FI_ADDR_UNSPEC, 1, 0, &rctx[0]));
        ASSERT_OK(fi_tsend(f.ep.get(), &out, 8, nullptr, f.self, 1, &sctx[0]));
        read(2);
        ASSERT_OK(fi_tsend(f.ep.get(), &out, 8, nullptr, f.self, 2, &sctx[1]));
        read(1);
        fi_cq_tagged_entry e;
        ASSERT_RC(-FI_EAGAIN, fi_cq_read(f.cq.get(), &e, 1));  // a pass: it waits unexpected
        ASSERT_OK(fi_trecv(f.ep.get(), &in[1], 8, nullptr, FI_ADDR_UNSPEC, 2, 0, &rctx[1]));
        read(1);
        ASSERT_EQ(4 * sizeof(fi_cq_tagged_entry), raw.size());
        int received = 0;
        for (size_t k = 0; k < 4; k++) {
            std::memcpy(&e, &raw[k * sizeof(e)], sizeof(e));
            if (e.op_context != &rctx[0] && e.op_context != &rctx[1]) continue;
            received++;
            EXPECT_EQ(c.named ? f.self : FI_ADDR_NOTAVAIL, src[k]) << "receive " << k;
        }
        EXPECT_EQ(2, received);
        EXPECT_EQ(out, in[0]);
        EXPECT_EQ(out, in[1]);
    }
}

class CqFormatTest : public CqTest, public ::testing::WithParamInterface<fi_cq_format> {};

// Tagged send with remote CQ data to self, twice; checks the prefix of the
// entry that the format carries, the entry stride, and readfrom's source.
TEST_P(CqFormatTest, EntriesCarryFormatFields) {
    const fi_cq_format fmt = GetParam();
    fi_cq_attr a{};
    a.format = fmt;
    FmtEp f;
    open_fmt_ep(f, &a, FI_TAGGED | FI_SOURCE);
    uint64_t out[2] = {0x1111, 0x2222}, in[2] = {};
    int sctx[2], rctx[2];
    for (int i = 0; i < 2; i++) {
        ASSERT_OK(fi_trecv(f.ep.get(), &in[i], 8, nullptr, FI_ADDR_UNSPEC, 40 + i, 0, &rctx[i]));
        ASSERT_OK(
            fi_tsenddata(f.ep.get(), &out[i], 8, nullptr, 0xD0 + i, f.self, 40 + i, &sctx[i]));
    }
    std::vector<fi_addr_t> src;
    std::vector<uint8_t> raw = read_raw(f.cq.get(), fmt, 4, src);
    const size_t sz = entry_size(fmt);
    ASSERT_EQ(4 * sz, raw.size());
    int seen = 0;
    for (size_t k = 0; k < 4; k++) {
        fi_cq_tagged_entry e{};
        std::memcpy(&e, &raw[k * sz], sz);
        for (int i = 0; i < 2; i++) {
            if (e.op_context == &rctx[i]) {
                seen |= 1 << i;
                EXPECT_EQ(f.self, src[k]) << "readfrom source";
                if (fmt == FI_CQ_FORMAT_CONTEXT) continue;
                EXPECT_EQ(FI_TAGGED | FI_RECV | FI_REMOTE_CQ_DATA, e.flags);
                EXPECT_EQ(8u, e.len);
                if (fmt == FI_CQ_FORMAT_MSG) continue;
                EXPECT_EQ(nullptr, e.buf);
                EXPECT_EQ(0xD0u + i, e.data);
                if (fmt == FI_CQ_FORMAT_TAGGED) {
                    EXPECT_EQ(40u + i, e.tag);
                }
            } else if (e.op_context == &sctx[i]) {
                seen |= 4 << i;
                if (fmt != FI_CQ_FORMAT_CONTEXT) {
                    EXPECT_EQ(FI_TAGGED | FI_SEND, e.flags);
                }
            }
        }
    }
    EXPECT_EQ(0xF, seen) << "each op_context exactly where expected";
    EXPECT_EQ(out[0], in[0]);
    EXPECT_EQ(out[1], in[1]);
}

std::string format_name(const ::testing::TestParamInfo<fi_cq_format> &i) {
    static const char *const names[] = {"unspec", "context", "msg", "data", "tagged"};
    return names[i.param];
}

INSTANTIATE_TEST_SUITE_P(Formats, CqFormatTest,
                         ::testing::Values(FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG,
                                           FI_CQ_FORMAT_DATA, FI_CQ_FORMAT_TAGGED),
                         format_name);

// A read hands its own progress's completions straight to the caller while the CQ holds
// nothing older (cq.cpp); the rest wait in the CQ. Reads of 1, 4 and 3 entries, with
// receives posted between them, must still see the completions in the order the
// messages matched.
TEST_F(CqTest, ReadsOfAnySizeKeepCompletionOrder) {
    fi_cq_attr a{};
    a.format = FI_CQ_FORMAT_TAGGED;
    FmtEp f;
    open_fmt_ep(f, &a, FI_MSG);
    constexpr int kMsgs = 10;
    uint64_t in[kMsgs] = {};
    int rctx[kMsgs];
    auto post_and_send = [&](int from, int to) {
        for (int i = from; i < to; i++)
            ASSERT_OK(fi_recv(f.ep.get(), &in[i], 8, nullptr, FI_ADDR_UNSPEC, &rctx[i]));
        for (uint64_t v = from; v < uint64_t(to); v++)
            ASSERT_OK(fi_inject(f.ep.get(), &v, 8, f.self));
    };
    std::vector<void *> order;
    auto read_up_to = [&](size_t count, size_t until) {
        wait_until(
            [&] {
                fi_cq_tagged_entry e[4];
                ssize_t rc = fi_cq_read(f.cq.get(), e, count);
                if (rc == -FI_EAGAIN) return false;
                if (rc < 1 || size_t(rc) > count) CXIT_FAIL("fi_cq_read: " + rc_str(rc));
                for (ssize_t k = 0; k < rc; k++)
                    order.push_back(e[k].op_context);
                return order.size() >= until;
            },
            "receive completions");
    };
    post_and_send(0, 6);
    read_up_to(1, 1);  // one entry: the other five wait in the CQ
    post_and_send(6, kMsgs);
    read_up_to(4, 5);
    read_up_to(3, kMsgs);
    ASSERT_EQ(size_t(kMsgs), order.size());
    for (int i = 0; i < kMsgs; i++) {
        EXPECT_EQ(&rctx[i], order[i]) << "completion " << i;
        EXPECT_EQ(uint64_t(i), in[i]) << "payload " << i;
    }
    fi_cq_tagged_entry e;
    EXPECT_RC(-FI_EAGAIN, fi_cq_read(f.cq.get(), &e, 1));
}

TEST_F(CqTest, CancelledReceiveReportsErrorEntry) {
    fi_cq_attr a{};
    a.format = FI_CQ_FORMAT_TAGGED;
    FmtEp f;
    open_fmt_ep(f, &a, FI_MSG);
    char buf[32];
    int ctx = 0;
    ASSERT_OK(fi_recv(f.ep.get(), buf, sizeof(buf), nullptr, FI_ADDR_UNSPEC, &ctx));
    ASSERT_OK(fi_cancel(&f.ep->fid, &ctx));
    fi_cq_tagged_entry e;
    wait_until(
        [&] {
            ssize_t rc = fi_cq_read(f.cq.get(), &e, 1);
            if (rc == 1) CXIT_FAIL("a cancelled receive completed successfully");
            if (rc != -FI_EAGAIN && rc != -FI_EAVAIL) CXIT_FAIL("fi_cq_read: " + rc_str(rc));
            return rc == -FI_EAVAIL;
        },
        "-FI_EAVAIL from fi_cq_read");
    fi_cq_err_entry err{};
    ASSERT_EQ(1, fi_cq_readerr(f.cq.get(), &err, 0));
    EXPECT_EQ(FI_ECANCELED, err.err);
    EXPECT_EQ(0, err.prov_errno);
    EXPECT_EQ(&ctx, err.op_context);
    EXPECT_EQ(FI_RECV, err.flags & FI_RECV);
    EXPECT_RC(-FI_EAGAIN, fi_cq_readerr(f.cq.get(), &err, 0)) << "error queue drained";
    EXPECT_RC(-FI_EAGAIN, fi_cq_read(f.cq.get(), &e, 1));
}

TEST_F(CqTest, ErrorEntryBlocksReadUntilTaken) {
    fi_cq_attr a{};
    a.format = FI_CQ_FORMAT_TAGGED;
    FmtEp f;
    open_fmt_ep(f, &a, FI_MSG);
    char big[100], small[10];
    std::memset(big, 'x', sizeof(big));
    int r1 = 0;
    ASSERT_OK(fi_recv(f.ep.get(), small, sizeof(small), nullptr, FI_ADDR_UNSPEC, &r1));
    ASSERT_OK(fi_inject(f.ep.get(), big, sizeof(big), f.self));
    fi_cq_tagged_entry e;
    wait_until([&] { return fi_cq_read(f.cq.get(), &e, 1) == -FI_EAVAIL; }, "truncation error");
    EXPECT_RC(-FI_EAVAIL, fi_cq_read(f.cq.get(), &e, 1)) << "still pending";
    fi_cq_err_entry err{};
    ASSERT_EQ(1, fi_cq_readerr(f.cq.get(), &err, 0));
    EXPECT_EQ(FI_ETRUNC, err.err);
    EXPECT_EQ(&r1, err.op_context);
    EXPECT_EQ(sizeof(small), err.len);
    EXPECT_EQ(sizeof(big) - sizeof(small), err.olen);
    char text[128];
    const char *s = fi_cq_strerror(f.cq.get(), err.prov_errno, err.err_data, text, sizeof(text));
    EXPECT_NE(nullptr, s) << "fi_cq_strerror renders provider errors";
}

}  // namespace

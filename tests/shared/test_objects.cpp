// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Objects both providers share: completion queues, event queues, address vectors.
#include <cstring>

#include "fixture.hpp"

namespace shared_test {
namespace {

TEST_P(SharedTest, EmptyCqReadsEagain) {
    fi_cq_msg_entry e;
    EXPECT_RC(-FI_EAGAIN, fi_cq_read(a_.cq.get(), &e, 1));
    fi_cq_err_entry err{};
    EXPECT_RC(-FI_EAGAIN, fi_cq_readerr(a_.cq.get(), &err, 0));
}

TEST_P(SharedTest, EmptyEqReadsEagain) {
    fi_eq_attr attr{};
    attr.wait_obj = FI_WAIT_NONE;
    Fid<fid_eq> eq;
    int rc = fi_eq_open(a_.fabric.get(), &attr, eq.out(), nullptr);
    eq.drop_on_error(rc);
    ASSERT_OK(rc);
    uint32_t event = 0;
    fi_eq_entry entry{};
    EXPECT_RC(-FI_EAGAIN, fi_eq_read(eq.get(), &event, &entry, sizeof(entry), 0));
}

TEST_P(SharedTest, AvLookupGivesBackTheInsertedAddress) {
    connect_sides();
    std::vector<uint8_t> got(b_.name.size() + 16);
    size_t len = got.size();
    ASSERT_OK(fi_av_lookup(a_.av.get(), a_.peer, got.data(), &len));
    ASSERT_EQ(b_.name.size(), len);
    EXPECT_EQ(0, std::memcmp(got.data(), b_.name.data(), len));
    char text[128];
    size_t tlen = sizeof(text);
    EXPECT_NE(nullptr, fi_av_straddr(a_.av.get(), b_.name.data(), text, &tlen));
    EXPECT_GT(tlen, 1u);
}

TEST_P(SharedTest, AvRemovedAddressIsGone) {
    connect_sides();
    ASSERT_OK(fi_av_remove(a_.av.get(), &a_.peer, 1, 0));
    std::vector<uint8_t> got(b_.name.size());
    size_t len = got.size();
    EXPECT_LT(fi_av_lookup(a_.av.get(), a_.peer, got.data(), &len), 0)
        << "a removed address must not be found";
}

TEST_P(SharedTest, SendToAnAddressNotInTheAvFails) {
    Buffer buf = buffer(a_, 8);
    fi_context2 ctx;
    // Nothing was inserted: index 5 names no peer.
    ssize_t rc = fi_send(a_.ep.get(), buf.bytes.data(), 8, buf.desc(), 5, &ctx);
    EXPECT_LT(rc, 0) << "sending to an unknown address must be refused";
    EXPECT_NE(rc, -FI_EAGAIN);
}

SHARED_INSTANTIATE(SharedTest);

}  // namespace
}  // namespace shared_test

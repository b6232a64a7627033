// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// DGRAM endpoints are plain UDP: a usnic endpoint and an AF_INET/SOCK_DGRAM
// socket on 127.0.0.1 exchange datagrams in both directions, with and
// without the message prefix (which never goes on the wire). Datagrams that
// arrive before a receive is posted wait for it.
#include <cstring>
#include <vector>

#include "fixture.hpp"

using namespace usnict;

namespace {

class UdpInteropTest : public PairBase, public ::testing::WithParamInterface<bool> {
  protected:
    // A single usnic DGRAM endpoint (a_), in prefix mode when the parameter
    // says so, with the socket in its AV.
    void SetUp() override {
        EpOpts o;
        if (prefixed()) o.mode = FI_LOCAL_MR | FI_MSG_PREFIX;
        a_ = endpoint(Kind::dgram, o);
        ASSERT_EQ(a_->prefix(), prefixed() ? kPrefix : 0u);
        a_->peer = av_insert(a_->av.get(), sock_.addr());
    }
    bool prefixed() const { return GetParam(); }
    size_t pre() const { return a_->prefix(); }

    UdpSocket sock_;
};

TEST_P(UdpInteropTest, UsnicToSocket) {
    ASSERT_GE(sock_.fd(), 0);
    const sockaddr_in me = getname(a_->ep.fid());
    for (size_t len : {size_t{0}, size_t{1}, size_t{500}, kDgramInject + 1, size_t{9000}}) {
        SCOPED_TRACE(len);
        std::vector<uint8_t> out(pre() + len, 0xee), in(len + 100);
        fill_pattern(out.data() + pre(), len, len);
        int ctx = 0;
        send(*a_, out.data(), out.size(), &ctx);
        EXPECT_EQ(wait_tx(*a_).ctx, &ctx);
        sockaddr_in from{};
        const ssize_t got = sock_.recv_from(in.data(), in.size(), &from);
        ASSERT_EQ(got, static_cast<ssize_t>(len)) << "the wire carries exactly the payload";
        EXPECT_EQ(check_pattern(in.data(), len, len), len);
        EXPECT_EQ(ip_of(from), kLoopback);
        EXPECT_EQ(port_of(from), port_of(me)) << "sent from the endpoint's own port";
    }
}

TEST_P(UdpInteropTest, InjectToSocket) {
    std::vector<uint8_t> out(pre() + 100), in(200);
    fill_pattern(out.data() + pre(), 100, 9);
    ASSERT_OK(fi_inject(a_->ep.get(), out.data(), out.size(), a_->peer));
    const ssize_t got = sock_.recv_from(in.data(), in.size(), nullptr);
    ASSERT_EQ(got, 100);
    EXPECT_EQ(check_pattern(in.data(), 100, 9), 100u);
}

TEST_P(UdpInteropTest, SocketToUsnic) {
    const sockaddr_in me = getname(a_->ep.fid());
    for (size_t len : {size_t{0}, size_t{1}, size_t{777}, size_t{9000}}) {
        SCOPED_TRACE(len);
        std::vector<uint8_t> out(len), in(pre() + 10000, 0);
        fill_pattern(out.data(), len, len + 1);
        int ctx = 0;
        recv(*a_, in.data(), in.size(), &ctx);
        ASSERT_EQ(sock_.send_to(me, out.data(), len), static_cast<ssize_t>(len));
        const Entry rx = wait_rx(*a_);
        EXPECT_EQ(rx.ctx, &ctx);
        EXPECT_EQ(rx.err, 0);
        EXPECT_EQ(rx.flags, FI_MSG | FI_RECV);
        EXPECT_EQ(rx.len, pre() + len);
        EXPECT_EQ(check_pattern(in.data() + pre(), len, len + 1), len);
    }
}

TEST_P(UdpInteropTest, DatagramsWaitForReceives) {
    const sockaddr_in me = getname(a_->ep.fid());
    constexpr size_t kN = 6;
    for (size_t i = 0; i < kN; i++) {
        std::vector<uint8_t> out(200 + i);
        fill_pattern(out.data(), out.size(), i);
        ASSERT_EQ(sock_.send_to(me, out.data(), out.size()), static_cast<ssize_t>(out.size()));
    }
    // Progress with no receive posted: nothing may complete or be lost.
    for (int i = 0; i < 100; i++)
        progress();
    EXPECT_TRUE(a_->rx_done.empty());
    std::vector<std::vector<uint8_t>> bufs(kN, std::vector<uint8_t>(pre() + 1000));
    int ctx[kN];
    for (size_t i = 0; i < kN; i++)
        recv(*a_, bufs[i].data(), bufs[i].size(), &ctx[i]);
    for (size_t i = 0; i < kN; i++) {
        const Entry rx = wait_rx(*a_);
        EXPECT_EQ(rx.ctx, &ctx[i]);
        EXPECT_EQ(rx.len, pre() + 200 + i);
        EXPECT_EQ(check_pattern(bufs[i].data() + pre(), 200 + i, i), 200 + i);
    }
}

std::string prefix_name(const ::testing::TestParamInfo<bool> &info) {
    return info.param ? "prefix" : "plain";
}

INSTANTIATE_TEST_SUITE_P(, UdpInteropTest, ::testing::Bool(), prefix_name);

}  // namespace

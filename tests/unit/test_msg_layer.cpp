// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The message layer over links (transport/msg), the part of both providers' protocols
// they share: written once, run over every transport as the Transport contract is.
// A message spread over uneven buffers is cut into packets, checked and placed back
// into differently shaped buffers on the other side, completes only once the link
// acknowledged it, and fails with every other operation of a link that died. Then the
// pieces alone with hostile numbers, and the offload hook.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <vector>

#include "common/lock.hpp"
#include "transport/msg/ack_queue.hpp"
#include "transport/msg/segments.hpp"
#include "transport/offload.hpp"
#include "transport_paths.hpp"

namespace softnic::transport {
namespace {

using msg::AckQueue;

// The test's framing: which message, how long, where this packet's bytes go.
struct Frame {
    uint32_t id, len, offset, rsvd;
};

uint8_t byte_of(uint32_t id, size_t i) {
    return uint8_t(id * 131 + i * 7 + (i >> 8));
}

// A message's bytes in `pieces` buffers of uneven sizes.
struct Spread {
    std::vector<std::vector<uint8_t>> bufs;
    std::vector<iovec> iov;
    Spread(size_t len, size_t pieces) {
        size_t left = len;
        for (size_t p = 0; p < pieces; p++) {
            size_t n = p + 1 == pieces ? left : std::min(left, left / 2 + p * 3);
            bufs.emplace_back(n);
            left -= n;
        }
        for (auto &b : bufs)
            iov.push_back(iovec{b.data(), b.size()});
    }
};

struct TxMsg {
    uint32_t id;
    Spread data;
    size_t sent = 0;
    bool completed = false;
};

// Puts messages back together, one at a time, into buffers shaped unlike the sender's.
struct Receiver : PacketSink {
    msg::Reassembly r;
    Spread *into = nullptr;
    uint32_t id = 0;
    std::vector<uint32_t> done;
    uint64_t bad = 0, dropped = 0;
    std::deque<Spread> storage;  // stays in place as it grows
    bool deliver(const uint8_t *pkt, size_t len) override {
        Frame f;
        if (len < sizeof(f)) return ++dropped, true;
        std::memcpy(&f, pkt, sizeof(f));
        const size_t n = len - sizeof(f);
        if (!r.active()) {
            if (f.offset != 0) return ++dropped, true;
            storage.emplace_back(f.len, 3);
            into = &storage.back();
            id = f.id;
            r.begin(f.len);
        }
        if (!r.accept(f.offset, n, f.len)) return ++dropped, true;
        msg::scatter(into->iov.data(), into->iov.size(), f.offset, pkt + sizeof(f), n);
        if (!r.finish()) return true;
        size_t i = 0;
        for (auto &b : into->bufs)
            for (uint8_t c : b)
                bad += c != byte_of(id, i++);
        done.push_back(id);
        return true;
    }
};

class MsgLayer : public ::testing::TestWithParam<TransportParam> {
  protected:
    void SetUp() override { path_ = GetParam().make(); }
    // Queues what the link takes of `m`; true once all of it is queued.
    bool pump(TxMsg &m) {
        Link &link = path_->link();
        const size_t room = link.max_packet() - sizeof(Frame);
        const size_t len = total(m);
        auto packet = [&](size_t off, size_t n, bool more) {
            Frame f{m.id, uint32_t(len), uint32_t(off), 0};
            iovec parts[8];
            size_t np = msg::gather(m.data.iov.data(), m.data.iov.size(), off, n, parts);
            return link.send(&f, sizeof(f), parts, np, more);
        };
        bool done = len == 0 ? packet(0, 0, false) : msg::cut(m.sent, len, room, packet);
        link.flush();
        return done;
    }
    static size_t total(const TxMsg &m) {
        size_t t = 0;
        for (auto &v : m.data.iov)
            t += v.iov_len;
        return t;
    }
    void turn(Receiver &rx) {
        path_->rx().poll(rx, 64);
        path_->progress();
    }
    std::unique_ptr<Path> path_;
};

TEST_P(MsgLayer, MessagesOfEveryShapeArriveWholeAndCompleteOnAcknowledgement) {
    const size_t room = path_->link().max_packet() - sizeof(Frame);
    const std::vector<size_t> sizes = {0,      1, room - 1, room, room + 1, 3 * room, 17 + 5 * room,
                                       200000, 8, 4096};
    std::vector<TxMsg> msgs;
    msgs.reserve(sizes.size());
    for (size_t i = 0; i < sizes.size(); i++) {
        msgs.push_back(TxMsg{uint32_t(i + 1), Spread(sizes[i], 1 + i % 8)});
        size_t k = 0;
        for (auto &b : msgs.back().data.bufs)
            for (auto &c : b)
                c = byte_of(uint32_t(i + 1), k++);
    }
    AckQueue<TxMsg> unacked;
    Receiver rx;
    size_t next = 0;
    std::vector<uint32_t> completed;
    for (uint64_t spins = 0; completed.size() < msgs.size(); spins++) {
        // In order and whole: the next message starts only once this one is queued.
        while (next < msgs.size() && pump(msgs[next])) {
            unacked.wait(&msgs[next], &path_->link(), path_->link().last_token());
            next++;
        }
        unacked.reap([&](TxMsg *m) {
            EXPECT_FALSE(m->completed) << "completed twice";
            m->completed = true;
            // Over a network nothing completes before the receiver has it all.
            if (path_->link().completes_on_ack()) {
                EXPECT_GE(rx.done.size(), m->id);
            }
            completed.push_back(m->id);
        });
        turn(rx);
        ASSERT_LT(spins, 5000000u) << "stuck at " << completed.size();
    }
    ASSERT_EQ(msgs.size(), rx.done.size());
    for (size_t i = 0; i < msgs.size(); i++) {
        EXPECT_EQ(i + 1, rx.done[i]) << "in order, once";
        EXPECT_EQ(i + 1, completed[i]) << "completions in the order queued";
    }
    EXPECT_EQ(0u, rx.bad) << "every byte checked";
    EXPECT_EQ(0u, rx.dropped);
    EXPECT_TRUE(unacked.empty());
}

TEST_P(MsgLayer, AFailedLinkFailsEveryOperationWaitingOnIt) {
    std::vector<TxMsg> msgs;
    msgs.reserve(5);
    AckQueue<TxMsg> unacked;
    for (uint32_t i = 0; i < 5; i++) {
        msgs.push_back(TxMsg{i + 1, Spread(100, 2)});
        ASSERT_TRUE(pump(msgs.back()));
        unacked.wait(&msgs.back(), &path_->link(), path_->link().last_token());
    }
    unacked.drop(nullptr);  // another link's failure leaves them
    EXPECT_EQ(5u, unacked.size());
    path_->close_rx();
    std::vector<uint32_t> failed;
    unacked.fail(&path_->link(), [&](TxMsg *m) { failed.push_back(m->id); });
    EXPECT_EQ((std::vector<uint32_t>{1, 2, 3, 4, 5}), failed) << "each once, in order";
    EXPECT_TRUE(unacked.empty());
}

TEST_P(MsgLayer, AnUnacknowledgedOperationWaitsOverANetwork) {
    TxMsg m{1, Spread(64, 1)};
    ASSERT_TRUE(pump(m));
    AckQueue<TxMsg> unacked;
    unacked.wait(&m, &path_->link(), path_->link().last_token());
    int done = 0;
    unacked.reap([&](TxMsg *) { done++; });
    // Shared memory is complete once queued; a retransmitting link is not until acked.
    EXPECT_EQ(path_->link().completes_on_ack() ? 0 : 1, done);
    Receiver rx;
    for (int i = 0; i < 1000000 && !done; i++) {
        turn(rx);
        unacked.reap([&](TxMsg *) { done++; });
    }
    EXPECT_EQ(1, done);
}

INSTANTIATE_TEST_SUITE_P(, MsgLayer, ::testing::ValuesIn(every_transport()),
                         [](const ::testing::TestParamInfo<TransportParam> &i) {
                             return std::string(i.param.name);
                         });

TEST(MsgSegments, WithinHoldsForHostileNumbers) {
    constexpr size_t kMax = std::numeric_limits<size_t>::max();
    EXPECT_TRUE(msg::within(0, 0, 0));
    EXPECT_TRUE(msg::within(10, 5, 15));
    EXPECT_FALSE(msg::within(10, 6, 15));
    EXPECT_FALSE(msg::within(16, 0, 15));
    EXPECT_FALSE(msg::within(8, kMax - 4, 15)) << "a sum that wraps is still out";
    EXPECT_FALSE(msg::within(kMax, 2, 15));
}

TEST(MsgSegments, CutStopsWhereTheLinkRefusesAndResumes) {
    size_t pos = 0;
    std::vector<std::pair<size_t, size_t>> got;
    int budget = 2;
    auto send = [&](size_t off, size_t n, bool more) {
        if (budget-- <= 0) return false;
        got.emplace_back(off, n);
        EXPECT_EQ(off + n < 25, more);
        return true;
    };
    EXPECT_FALSE(msg::cut(pos, 25, 10, send));
    EXPECT_EQ(20u, pos);
    budget = 5;
    EXPECT_TRUE(msg::cut(pos, 25, 10, send));
    EXPECT_EQ((std::vector<std::pair<size_t, size_t>>{{0, 10}, {10, 10}, {20, 5}}), got);
}

TEST(MsgSegments, ScatterTruncatesAndGatherFollowsThePieces) {
    uint8_t a[3], b[4];
    iovec iov[2] = {{a, 3}, {b, 4}};
    const uint8_t src[6] = {1, 2, 3, 4, 5, 6};
    EXPECT_EQ(5u, msg::scatter(iov, 2, 2, src, 6)) << "two bytes fall beyond the buffers";
    EXPECT_EQ(1, a[2]);
    EXPECT_EQ(5, b[3]);
    iovec parts[2];
    ASSERT_EQ(2u, msg::gather(iov, 2, 2, 3, parts));
    EXPECT_EQ(a + 2, parts[0].iov_base);
    EXPECT_EQ(1u, parts[0].iov_len);
    EXPECT_EQ(b, parts[1].iov_base);
    EXPECT_EQ(2u, parts[1].iov_len);
    EXPECT_EQ(0u, msg::gather(iov, 2, 7, 0, parts));
}

TEST(MsgSegments, ReassemblyTakesOnlyTheNextBytesOfTheSameMessage) {
    msg::Reassembly r;
    EXPECT_FALSE(r.accept(0, 1, 1)) << "nothing begun";
    r.begin(100);
    EXPECT_FALSE(r.accept(10, 10, 100)) << "a gap";
    EXPECT_TRUE(r.accept(0, 40, 100));
    EXPECT_FALSE(r.accept(40, 10, 99)) << "another length";
    EXPECT_FALSE(r.accept(40, 61, 100)) << "beyond the end";
    EXPECT_FALSE(r.finish());
    EXPECT_TRUE(r.accept(40, 60, 100));
    EXPECT_TRUE(r.finish());
    EXPECT_FALSE(r.active());
    EXPECT_FALSE(r.finish()) << "once";
}

// The offload hook both providers use: application calls are counted, and progress
// is skipped, not waited for, while another thread holds the client.
struct Client : OffloadClient {
    SpinLock lock;
    int runs = 0;
    int offload_fd() override { return -1; }
    bool offload_watch() override { return false; }
    bool offload_wanted() override { return false; }
    bool offload_progress(bool) override {
        return helper_progress(lock, [this] { runs++; });
    }
    void progress() {
        app_progress(lock, [this] { runs++; });
    }
};

TEST(OffloadHook, AppCallsCountAndABusyClientIsSkipped) {
    Client c;
    c.progress();
    EXPECT_EQ(1, c.runs);
    EXPECT_EQ(1u, c.app_calls());
    c.lock.lock();
    c.progress();
    EXPECT_FALSE(c.offload_progress(false));
    c.lock.unlock();
    EXPECT_EQ(1, c.runs) << "skipped while held";
    EXPECT_EQ(2u, c.app_calls()) << "counted all the same";
    EXPECT_TRUE(c.offload_progress(true));
    EXPECT_EQ(2, c.runs);
    EXPECT_EQ(2u, c.app_calls()) << "the helper does not count as the application";
}

}  // namespace
}  // namespace softnic::transport

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// FI_THREAD_SAFE on MSG and RDM endpoints: threads post sends and receives and read
// the CQs of one endpoint pair at the same time; every message arrives exactly once
// and intact and every send completes once. Also fi_enable racing with itself.
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fixture.hpp"

using namespace usnict;

namespace {

constexpr int kSenders = 4;
constexpr int kPerSender = 250;
constexpr int kTotal = kSenders * kPerSender;
constexpr size_t kMaxLen = 3000;
constexpr size_t kRxWindow = 64;

// fi_tx/rx_size_left are deprecated in the headers but still part of the API.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
ssize_t tx_left(fid_ep *ep) {
    return fi_tx_size_left(ep);
}
ssize_t rx_left(fid_ep *ep) {
    return fi_rx_size_left(ep);
}
#pragma GCC diagnostic pop

// Message `id` carries its id in its first 4 bytes, then a pattern.
size_t len_of(int id) {
    return 4 + static_cast<size_t>(id * 37) % (kMaxLen - 4);
}

class ThreadSafeTest : public PairTest {
  protected:
    // Sender `t`: its messages, retried on -FI_EAGAIN; it also reads the send CQ,
    // which all senders share.
    void sender(int t) {
        for (int j = 0; j < kPerSender && !stop_; j++) {
            const int id = t * kPerSender + j;
            std::vector<uint8_t> &m = out_[id];
            m.resize(len_of(id));
            fill_pattern(m.data(), m.size(), static_cast<size_t>(id));
            std::memcpy(m.data(), &id, 4);
            for (;;) {
                const long rc = fi_send(a_->ep.get(), m.data(), m.size(), nullptr, a_->peer, &m);
                if (rc == 0) break;
                if (rc != -FI_EAGAIN) return fail("fi_send", rc);
                read_tx();
                if (stop_) return;
            }
            read_tx();
        }
        while (tx_done_ < kTotal && !stop_)
            read_tx();
    }
    void read_tx() {
        fi_cq_msg_entry e[8];
        const long n = fi_cq_read(a_->tx_cq.get(), e, 8);
        if (n == -FI_EAGAIN) return;
        if (n < 0) return fail("fi_cq_read (send)", n);
        for (long i = 0; i < n; i++)
            if (e[i].flags != (FI_MSG | FI_SEND)) fail("send completion flags", 0);
        tx_done_ += static_cast<int>(n);
    }
    // Receivers share the posting of receives and the reading of the receive CQ.
    void receiver() {
        while (rx_done_ < kTotal && !stop_) {
            post_one();
            fi_cq_msg_entry e[8];
            const long n = fi_cq_read(b_->rx_cq.get(), e, 8);
            if (n == -FI_EAGAIN) continue;
            if (n < 0) return fail("fi_cq_read (receive)", n);
            for (long i = 0; i < n; i++)
                check(e[i]);
            rx_done_ += static_cast<int>(n);
        }
    }
    void post_one() {
        std::lock_guard<std::mutex> g(post_lock_);  // one index per posted receive
        if (posted_ >= kTotal || posted_ - rx_done_ >= static_cast<int>(kRxWindow)) return;
        std::vector<uint8_t> &b = in_[posted_];
        b.assign(kMaxLen, 0);
        const long rc = fi_recv(b_->ep.get(), b.data(), b.size(), nullptr, FI_ADDR_UNSPEC, &b);
        if (rc == 0)
            posted_++;
        else if (rc != -FI_EAGAIN)
            fail("fi_recv", rc);
    }
    void check(const fi_cq_msg_entry &e) {
        const auto *b = static_cast<const std::vector<uint8_t> *>(e.op_context);
        int id = -1;
        if (e.len >= 4) std::memcpy(&id, b->data(), 4);
        if (id < 0 || id >= kTotal || e.len != len_of(id)) return fail("message length or id", 0);
        std::vector<uint8_t> expect(e.len);
        fill_pattern(expect.data(), expect.size(), static_cast<size_t>(id));
        if (std::memcmp(expect.data() + 4, b->data() + 4, e.len - 4) != 0)
            return fail("message content", id);
        if (seen_[id].fetch_add(1) != 0) fail("message arrived twice", id);
    }
    // Meanwhile: calls that read endpoint state.
    void bystander() {
        while ((rx_done_ < kTotal || tx_done_ < kTotal) && !stop_) {
            if (tx_left(a_->ep.get()) < 0) fail("fi_tx_size_left", 0);
            if (rx_left(b_->ep.get()) < 0) fail("fi_rx_size_left", 0);
            sockaddr_in sin{};
            size_t len = sizeof(sin);
            if (fi_getname(&a_->ep->fid, &sin, &len)) fail("fi_getname", 0);
            std::this_thread::yield();
        }
    }
    void fail(const char *what, long rc) {
        std::lock_guard<std::mutex> g(error_lock_);
        if (!error_.empty()) return;
        error_ = std::string(what) + " " + std::to_string(rc);
        stop_ = true;
    }

    std::vector<std::vector<uint8_t>> out_ = std::vector<std::vector<uint8_t>>(kTotal);
    std::vector<std::vector<uint8_t>> in_ = std::vector<std::vector<uint8_t>>(kTotal);
    std::vector<std::atomic<int>> seen_ = std::vector<std::atomic<int>>(kTotal);
    std::atomic<int> tx_done_{0}, rx_done_{0};
    std::atomic<bool> stop_{false};
    std::mutex post_lock_, error_lock_;
    int posted_ = 0;
    std::string error_;
};

TEST_P(ThreadSafeTest, ConcurrentSendersReceiversAndReaders) {
    make_pair();
    std::vector<std::thread> threads;
    for (int t = 0; t < kSenders; t++)
        threads.emplace_back([this, t] { sender(t); });
    for (int r = 0; r < 2; r++)
        threads.emplace_back([this] { receiver(); });
    threads.emplace_back([this] { bystander(); });
    std::thread watchdog([this] {
        for (Deadline d(30000); !d.expired() && (rx_done_ < kTotal || tx_done_ < kTotal);)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (rx_done_ < kTotal || tx_done_ < kTotal) fail("timed out", rx_done_ + tx_done_);
    });
    for (auto &t : threads)
        t.join();
    watchdog.join();
    ASSERT_EQ(error_, "");
    EXPECT_EQ(rx_done_, kTotal);
    EXPECT_EQ(tx_done_, kTotal);
    for (int id = 0; id < kTotal; id++)
        EXPECT_EQ(seen_[id].load(), 1) << "message " << id;
}

// fi_enable from several threads at once: one socket, every call returns 0.
TEST_P(ThreadSafeTest, EnableRacesWithItself) {
    EpOpts o;
    o.enable = false;
    auto e = endpoint(kind(), o);
    std::atomic<int> bad{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++)
        threads.emplace_back([&] {
            if (fi_enable(e->ep.get()) != 0) bad++;
        });
    for (auto &t : threads)
        t.join();
    EXPECT_EQ(bad.load(), 0);
    EXPECT_EQ(tx_left(e->ep.get()), static_cast<ssize_t>(e->info->tx_attr->size));
}

INSTANTIATE_TEST_SUITE_P(, ThreadSafeTest, USNICT_RELIABLE_KINDS, kind_param_name);

}  // namespace

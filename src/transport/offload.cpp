// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "transport/offload.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "common/wait.hpp"

namespace softnic::transport {
namespace {

constexpr int kTickMs = 1;    // how soon a quiet application is noticed
constexpr int kIdleMs = 100;  // nothing to watch: a safety-net wake-up
// While every application keeps calling in (and none sleeps on a wait object), the tick
// that looks for one going quiet doubles up to this. Each tick wakes this thread, and
// where the application's threads busy-poll on every CPU a wake-up preempts one of them:
// at 1 ms, fi_pingpong between two namespaces of a 2-vCPU machine took 1.5x as long as
// without the helper. The price: an application that stops calling in is noticed up
// to this late (until then its peers wait).
constexpr int kActiveTickMaxMs = 8;

class Helper {
  public:
    void add(OffloadClient *c) {
        std::lock_guard<std::mutex> g(mu_);
        clients_.push_back({c, c->app_calls()});
        if (!thread_.joinable()) {
            // A thread of its own generation, with an eventfd of its own: a remove()
            // still joining the previous thread closes only that thread's descriptor,
            // and its stop cannot be undone by this start.
            wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
            int fd = wake_fd_;
            uint64_t gen = generation_;
            thread_ = std::thread([this, fd, gen] { run(fd, gen); });
        }
        kick();
    }

    void remove(OffloadClient *c) {
        std::thread done;
        int done_fd = -1;
        {
            std::lock_guard<std::mutex> g(mu_);  // the helper is not inside any client now
            auto it = std::find_if(clients_.begin(), clients_.end(),
                                   [c](const Entry &e) { return e.client == c; });
            if (it != clients_.end()) clients_.erase(it);
            if (clients_.empty() && thread_.joinable()) {
                generation_++;  // the running thread's generation is over
                kick();
                done = std::move(thread_);
                done_fd = std::exchange(wake_fd_, -1);
            }
        }
        if (done.joinable()) {
            done.join();
            close(done_fd);
        }
    }

  private:
    struct Entry {
        OffloadClient *client;
        uint64_t seen_calls;
        bool quiet = false;
    };

    void kick() {
        uint64_t one = 1;
        if (wake_fd_ >= 0 && write(wake_fd_, &one, sizeof(one)) < 0) {
            // the counter is saturated: the helper is awake anyway
        }
    }

    // One pass over the clients; fills the descriptors to sleep on. Returns the timeout.
    int scan(int wake_fd, uint64_t gen, std::vector<pollfd> &fds,
             std::vector<OffloadClient *> &owners) {
        std::lock_guard<std::mutex> g(mu_);
        if (gen != generation_) return -2;
        fds.assign(1, pollfd{wake_fd, POLLIN, 0});
        owners.assign(1, nullptr);
        bool ticking = false, helping = false, active = false;
        for (Entry &e : clients_) {
            uint64_t calls = e.client->app_calls();
            e.quiet = calls == e.seen_calls;
            e.seen_calls = calls;
            bool wanted = e.client->offload_wanted();
            if (e.quiet && wanted) e.client->offload_progress(false);
            int fd = e.client->offload_fd();
            if (fd >= 0 && (e.quiet || e.client->offload_watch())) {  // packets wake us
                fds.push_back(pollfd{fd, POLLIN, 0});
                owners.push_back(e.client);
            }
            ticking |= !e.quiet || wanted;
            helping |= e.quiet && wanted;
            active |= !e.quiet;
        }
        if (active && !helping && !WaitFd::armed_anywhere())
            active_tick_ = std::min(active_tick_ * 2, kActiveTickMaxMs);
        else
            active_tick_ = kTickMs;
        return ticking ? active_tick_ : kIdleMs;
    }

    void serve_readable(const std::vector<pollfd> &fds,
                        const std::vector<OffloadClient *> &owners) {
        std::lock_guard<std::mutex> g(mu_);
        for (size_t i = 1; i < fds.size(); i++) {
            if (!(fds[i].revents & POLLIN)) continue;
            bool present = std::any_of(clients_.begin(), clients_.end(),
                                       [&](const Entry &e) { return e.client == owners[i]; });
            if (present) owners[i]->offload_progress(true);
        }
    }

    void run(int wake_fd, uint64_t gen) {
        std::vector<pollfd> fds;
        std::vector<OffloadClient *> owners;
        for (;;) {
            int timeout = scan(wake_fd, gen, fds, owners);
            if (timeout == -2) return;
            int n = ::poll(fds.data(), fds.size(), timeout);
            if (n <= 0) continue;
            if (fds[0].revents & POLLIN) {
                uint64_t v;
                if (read(wake_fd, &v, sizeof(v)) < 0) {
                    // spurious: nothing to consume
                }
            }
            serve_readable(fds, owners);
            // A client that could not be progressed (its application holds it) would
            // keep the descriptor readable: give the application a moment.
            std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
    }

    std::mutex mu_;
    std::vector<Entry> clients_;
    std::thread thread_;
    int wake_fd_ = -1;         // the current thread's; written and kicked under mu_
    uint64_t generation_ = 0;  // bumped to stop the current thread
    int active_tick_ = kTickMs;
};

Helper &helper() {
    static Helper *h = new Helper;  // never destroyed: clients may outlive static teardown
    return *h;
}

}  // namespace

void offload_register(OffloadClient *c) {
    helper().add(c);
}

void offload_unregister(OffloadClient *c) {
    helper().remove(c);
}

}  // namespace softnic::transport

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The fabric's control thread: control progress is automatic in usnic (connection
// management, as upstream's per-fabric progress thread). Sockets register a callback
// that runs on this thread when they become ready.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace softnic::usnic {

class Poller {
  public:
    using Handler = std::function<void(short revents)>;
    Poller();
    ~Poller();
    Poller(const Poller &) = delete;
    Poller &operator=(const Poller &) = delete;
    // Watch fd for `events` (POLLIN / POLLOUT); replaces an earlier registration.
    void add(int fd, short events, Handler h);
    // Stop watching fd. Returns once no handler of fd runs any more (a handler may
    // remove its own fd).
    void remove(int fd);
    // Returns once no handler runs (one may have been running when called).
    void sync();

  private:
    void run();
    void wake();
    std::recursive_mutex lock_;  // held while handlers run
    std::map<int, std::pair<short, Handler>> fds_;
    int wake_fd_;
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace softnic::usnic

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "usnic/poller.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <new>
#include <vector>

namespace softnic::usnic {

Poller::Poller() : wake_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (wake_fd_ < 0) throw std::bad_alloc();
    thread_ = std::thread([this] { run(); });
}

Poller::~Poller() {
    {
        std::lock_guard<std::recursive_mutex> g(lock_);
        stop_ = true;
    }
    wake();
    thread_.join();
    close(wake_fd_);
}

void Poller::wake() {
    uint64_t one = 1;
    ssize_t r = write(wake_fd_, &one, sizeof(one));
    (void)r;
}

void Poller::add(int fd, short events, Handler h) {
    {
        std::lock_guard<std::recursive_mutex> g(lock_);
        fds_[fd] = {events, std::move(h)};
    }
    wake();
}

void Poller::remove(int fd) {
    {
        std::lock_guard<std::recursive_mutex> g(lock_);
        fds_.erase(fd);
    }
    wake();
}

void Poller::sync() {
    std::lock_guard<std::recursive_mutex> g(lock_);
}

void Poller::run() {
    std::vector<pollfd> set;
    for (;;) {
        {
            std::lock_guard<std::recursive_mutex> g(lock_);
            if (stop_) return;
            set.assign(1, pollfd{wake_fd_, POLLIN, 0});
            for (auto &[fd, e] : fds_)
                set.push_back(pollfd{fd, e.first, 0});
        }
        if (::poll(set.data(), set.size(), 1000) <= 0) continue;
        if (set[0].revents) {
            uint64_t v;
            ssize_t r = read(wake_fd_, &v, sizeof(v));
            (void)r;
        }
        std::lock_guard<std::recursive_mutex> g(lock_);
        for (size_t i = 1; i < set.size(); i++) {
            if (!set[i].revents) continue;
            auto it = fds_.find(set[i].fd);
            if (it == fds_.end() || it->second.first == 0) continue;  // removed meanwhile
            Handler h = it->second.second;  // a copy: the handler may remove itself
            h(set[i].revents);
        }
    }
}

}  // namespace softnic::usnic

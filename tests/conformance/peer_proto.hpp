// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Process helpers shared by the multi-process tests and the cxi_peer program:
// length-prefixed messages over a socketpair (waiting while driving libfabric
// progress), and spawning/reaping the peer with fork + execve.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common.hpp"

namespace cxit::proc {

// Message sizes of the "unexpected" scenario (both processes use this list):
// even indexes travel tagged (tag 100 + i), odd ones untagged; payload seed
// is 1000 + i.
inline std::vector<size_t> unexpected_sizes() {
    return {0, 1, 100, 192, 4096, 18433, kRdzvSize, size_t{1} << 20};
}

// Environment of the software matching / software rendezvous variant.
inline std::vector<std::string> sw_match_env() {
    return {"FI_CXI_MSG_OFFLOAD=0", "FI_CXI_RDZV_OFFLOAD=0", "FI_CXI_RDZV_THRESHOLD=2048"};
}

void send_blob(int fd, const void *data, size_t len);
void send_blob(int fd, const std::vector<uint8_t> &v);
void send_str(int fd, const std::string &s);
// Receives one message; keeps calling progress_all() while waiting. Fails on
// EOF or when the deadline passes.
std::vector<uint8_t> recv_blob(int fd, std::chrono::milliseconds timeout = kTimeout);
std::string recv_str(int fd, std::chrono::milliseconds timeout = kTimeout);
// Receives a string and fails unless it equals `expected`.
void expect_str(int fd, const std::string &expected, std::chrono::milliseconds timeout = kTimeout);
// As expect_str, but without calling into libfabric while waiting.
void expect_str_idle(int fd, const std::string &expected,
                     std::chrono::milliseconds timeout = kTimeout);

// A spawned peer process and our end of its socketpair. The destructor kills
// (SIGKILL) and reaps a peer that is still running.
class Child {
  public:
    Child() = default;
    Child(pid_t pid, int fd) : pid_(pid), fd_(fd) {}
    Child(Child &&o) noexcept;
    Child &operator=(Child &&o) noexcept;
    Child(const Child &) = delete;
    Child &operator=(const Child &) = delete;
    ~Child();

    pid_t pid() const { return pid_; }
    int fd() const { return fd_; }
    // Waits for exit while driving progress; returns the exit code, or
    // 128 + signal number. Kills the child and fails on timeout.
    int wait_exit(std::chrono::milliseconds timeout = kTimeout);
    // SIGKILL + reap; returns when the process is gone.
    void kill_now();

  private:
    void cleanup();
    pid_t pid_ = -1;
    int fd_ = -1;
};

// Runs `path fd mode domain args...` with the current environment plus
// `extra_env` entries ("NAME=value", overriding existing ones).
Child spawn(const std::string &path, const std::string &mode, const std::string &domain,
            const std::vector<std::string> &args = {},
            const std::vector<std::string> &extra_env = {});

}  // namespace cxit::proc

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "peer_proto.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

extern char **environ;

namespace cxit::proc {
namespace {

using Clock = std::chrono::steady_clock;

void write_all(int fd, const void *data, size_t len) {
    const uint8_t *p = static_cast<const uint8_t *>(data);
    while (len > 0) {
        ssize_t n = ::send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) CXIT_FAIL(std::string("socket send failed: ") + std::strerror(errno));
        p += n;
        len -= static_cast<size_t>(n);
    }
}

void read_all(int fd, void *data, size_t len, Clock::time_point deadline, bool drive = true) {
    uint8_t *p = static_cast<uint8_t *>(data);
    while (len > 0) {
        pollfd pfd{fd, POLLIN, 0};
        int pr = ::poll(&pfd, 1, 1);
        if (pr < 0 && errno != EINTR) CXIT_FAIL(std::string("poll: ") + std::strerror(errno));
        if (pr <= 0) {
            if (Clock::now() > deadline) CXIT_FAIL("timed out waiting for the peer socket");
            if (drive) progress_all();
            continue;
        }
        ssize_t n = ::recv(fd, p, len, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) CXIT_FAIL("peer closed its socket (peer exited early?)");
        if (n < 0) CXIT_FAIL(std::string("socket recv failed: ") + std::strerror(errno));
        p += n;
        len -= static_cast<size_t>(n);
    }
}

}  // namespace

void send_blob(int fd, const void *data, size_t len) {
    uint32_t n = static_cast<uint32_t>(len);
    write_all(fd, &n, sizeof(n));
    if (len) write_all(fd, data, len);
}

void send_blob(int fd, const std::vector<uint8_t> &v) {
    send_blob(fd, v.data(), v.size());
}

void send_str(int fd, const std::string &s) {
    send_blob(fd, s.data(), s.size());
}

namespace {
std::vector<uint8_t> recv_blob(int fd, std::chrono::milliseconds timeout, bool drive) {
    const auto deadline = Clock::now() + timeout;
    uint32_t n = 0;
    read_all(fd, &n, sizeof(n), deadline, drive);
    CXIT_REQUIRE(n <= (1u << 20), "oversized control message");
    std::vector<uint8_t> v(n);
    if (n) read_all(fd, v.data(), n, deadline, drive);
    return v;
}
}  // namespace

std::vector<uint8_t> recv_blob(int fd, std::chrono::milliseconds timeout) {
    return recv_blob(fd, timeout, true);
}

std::string recv_str(int fd, std::chrono::milliseconds timeout) {
    auto v = recv_blob(fd, timeout);
    return std::string(v.begin(), v.end());
}

void expect_str(int fd, const std::string &expected, std::chrono::milliseconds timeout) {
    std::string got = recv_str(fd, timeout);
    if (got != expected) CXIT_FAIL("peer said '" + got + "' but '" + expected + "' was expected");
}

void expect_str_idle(int fd, const std::string &expected, std::chrono::milliseconds timeout) {
    auto v = recv_blob(fd, timeout, false);
    std::string got(v.begin(), v.end());
    if (got != expected) CXIT_FAIL("peer said '" + got + "' but '" + expected + "' was expected");
}

Child::Child(Child &&o) noexcept : pid_(std::exchange(o.pid_, -1)), fd_(std::exchange(o.fd_, -1)) {}

Child &Child::operator=(Child &&o) noexcept {
    if (this != &o) {
        cleanup();
        pid_ = std::exchange(o.pid_, -1);
        fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
}

Child::~Child() {
    cleanup();
}

void Child::cleanup() {
    if (pid_ > 0) kill_now();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

void Child::kill_now() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
}

int Child::wait_exit(std::chrono::milliseconds timeout) {
    CXIT_REQUIRE(pid_ > 0, "no child to wait for");
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        int status = 0;
        pid_t r = ::waitpid(pid_, &status, WNOHANG);
        if (r == pid_) {
            pid_ = -1;
            if (WIFEXITED(status)) return WEXITSTATUS(status);
            if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
            return 255;
        }
        if (r < 0 && errno != EINTR) CXIT_FAIL(std::string("waitpid: ") + std::strerror(errno));
        if (Clock::now() > deadline) {
            kill_now();
            CXIT_FAIL("peer process did not exit in time (killed)");
        }
        progress_all();
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
}

Child spawn(const std::string &path, const std::string &mode, const std::string &domain,
            const std::vector<std::string> &args, const std::vector<std::string> &extra_env) {
    int sv[2];
    CXIT_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0,
                 std::strerror(errno));

    std::vector<std::string> argv_s{path, std::to_string(sv[1]), mode, domain};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<std::string> env_s;
    for (char **e = environ; *e; e++) {
        std::string kv(*e);
        std::string key = kv.substr(0, kv.find('='));
        bool overridden = false;
        for (const auto &x : extra_env)
            if (x.substr(0, x.find('=')) == key) overridden = true;
        if (!overridden) env_s.push_back(kv);
    }
    env_s.insert(env_s.end(), extra_env.begin(), extra_env.end());

    std::vector<char *> argv_p, env_p;
    for (auto &s : argv_s)
        argv_p.push_back(s.data());
    argv_p.push_back(nullptr);
    for (auto &s : env_s)
        env_p.push_back(s.data());
    env_p.push_back(nullptr);

    pid_t pid = ::fork();
    CXIT_REQUIRE(pid >= 0, std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
        // Only async-signal-safe calls between fork and exec.
        ::close(sv[0]);
        ::fcntl(sv[1], F_SETFD, 0);
        ::execve(path.c_str(), argv_p.data(), env_p.data());
        ::_exit(127);
    }
    ::close(sv[1]);
    return Child(pid, sv[0]);
}

}  // namespace cxit::proc

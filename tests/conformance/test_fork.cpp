// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// fi_cxi(7) "Fork": on the hardware, a child forked while registered buffers are pinned
// can break the parent's transfers (copy-on-write gives the parent new pages behind the
// NIC's back) unless CXI_FORK_SAFE / CXI_FORK_SAFE_HP keep those buffers out of the
// child. A soft NIC pins nothing: whatever the child does with its copies, the parent's
// transfers stay correct, with the variables set (the fork_safe. registration) or not.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "one_sided.hpp"

using namespace cxit;

// The child leaves the ordinary way (exit handlers, libfabric's own cleanup) so that the
// parent's transfers are seen to survive it, except under AddressSanitizer: GCC 12's
// runtime takes no allocator locks around fork(), so a child forked while the offload
// helper was allocating can deadlock in the frees its exit handlers make.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kChildRunsExitHandlers = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kChildRunsExitHandlers = false;
#else
constexpr bool kChildRunsExitHandlers = true;
#endif
#else
constexpr bool kChildRunsExitHandlers = true;
#endif

namespace {

// waitpid with a limit: a child stuck in its exit is killed and reported, not waited on.
bool reap_within(pid_t child, int seconds, int &status) {
    for (int i = 0; i < seconds * 100; i++) {
        pid_t r = waitpid(child, &status, WNOHANG);
        if (r == child) return true;
        if (r < 0) return false;
        usleep(10000);
    }
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    return false;
}

class ForkTest : public OneSidedTest {};

TEST_P(ForkTest, ChildTouchingRegisteredBuffersLeavesTheParentsTransfersIntact) {
    Pair &p = pair(opts());
    constexpr size_t kLen = 64 * 1024;
    uint64_t key = expose(p, kLen);
    std::vector<uint8_t> src(kLen), back(kLen);
    pid_t child = -1;
    for (int round = 0; round < 8; round++) {
        for (size_t i = 0; i < kLen; i++)
            src[i] = uint8_t(i * 7 + round);
        int ctx = 0;
        post([&] { return fi_write(p.a->ep(), src.data(), kLen, nullptr, p.a2b, 0, key, &ctx); },
             "fi_write");
        if (round == 4) {  // a write in flight when the child is made
            child = fork();
            ASSERT_GE(child, 0);
            if (child == 0) {  // scribble over its copies, then leave
                std::memset(src.data(), 0xAB, kLen);
                std::memset(target_.data(), 0xCD, kLen);
                if (kChildRunsExitHandlers) std::exit(0);
                _exit(0);
            }
        }
        wait_comp(p.a->tx(), &ctx, "write");
        EXPECT_EQ(0, std::memcmp(target_.data(), src.data(), kLen)) << "round " << round;
        std::fill(back.begin(), back.end(), 0);
        read(p, back, 0, key);
        EXPECT_EQ(0, std::memcmp(back.data(), src.data(), kLen)) << "round " << round;
    }
    int status = 0;
    ASSERT_TRUE(reap_within(child, 20, status)) << "the child did not leave within 20 s";
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
    // The child's exit (libfabric's cleanup ran in it) took nothing from the parent.
    std::fill(src.begin(), src.end(), 0x5A);
    write(p, src, 0, key);
    read(p, back, 0, key);
    EXPECT_EQ(0, std::memcmp(back.data(), src.data(), kLen));
}

CXIT_INSTANTIATE_TRANSPORTS(ForkTest);

}  // namespace

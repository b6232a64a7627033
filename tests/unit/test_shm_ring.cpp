// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The shared-memory ring on its own: order, back-pressure, hostile producers, and the
// reclaiming of rings whose owner died.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "transport/shm/shm_transport.hpp"

namespace softnic::transport::shm {
namespace {

std::string unique_name(const char *what) {
    static int seq = 0;
    return "/softnic-unit-" + std::string(what) + "-" + std::to_string(getpid()) + "-" +
           std::to_string(seq++);
}

// Collects packets; can refuse them to exercise back-pressure.
struct Collector : PacketSink {
    std::vector<std::string> got;
    bool accept = true;
    bool deliver(const uint8_t *pkt, size_t len) override {
        if (!accept) return false;
        got.emplace_back(reinterpret_cast<const char *>(pkt), len);
        return true;
    }
};

struct Ring {
    std::string name = unique_name("ring");
    std::unique_ptr<ShmRxQueue> rx;
    std::unique_ptr<ShmLink> tx;
    explicit Ring(RingGeometry g = {256, 16}) {
        int err = 0;
        rx = ShmRxQueue::create(name, g, err);
        EXPECT_EQ(0, err);
        tx = ShmLink::open(name, err);
        EXPECT_EQ(0, err);
    }
    bool send(const std::string &s) {
        iovec iov{const_cast<char *>(s.data()), s.size()};
        return tx->send("H", 1, &iov, 1, false);
    }
    int fill(const std::string &s) {  // sends until the ring refuses; how many went in
        int sent = 0;
        while (send(s))
            sent++;
        return sent;
    }
};

TEST(ShmRing, DeliversInOrder) {
    Ring r;
    for (int i = 0; i < 10; i++)
        ASSERT_TRUE(r.send("packet" + std::to_string(i)));
    Collector c;
    EXPECT_EQ(10u, r.rx->poll(c, 100));
    ASSERT_EQ(10u, c.got.size());
    for (int i = 0; i < 10; i++)
        EXPECT_EQ("Hpacket" + std::to_string(i), c.got[i]);
}

TEST(ShmRing, FullRingRefusesUntilDrained) {
    Ring r({256, 16});
    EXPECT_EQ(16, r.fill("x"));
    Collector c;
    EXPECT_EQ(16u, r.rx->poll(c, 100));
    EXPECT_TRUE(r.send("again"));
}

// What a partial poll consumed is free at once, and no more than that.
TEST(ShmRing, SpaceComesBackAsThePollsConsume) {
    Ring r({256, 16});
    ASSERT_EQ(16, r.fill("x"));
    Collector c;
    EXPECT_EQ(5u, r.rx->poll(c, 5));
    for (int i = 0; i < 5; i++)
        EXPECT_TRUE(r.send("y")) << i;
    EXPECT_FALSE(r.send("z")) << "only the 5 consumed cells were free";
    c.accept = false;
    EXPECT_EQ(0u, r.rx->poll(c, 100));
    EXPECT_FALSE(r.send("z")) << "a refused packet frees nothing";
    c.accept = true;
    EXPECT_EQ(16u, r.rx->poll(c, 100));
    ASSERT_EQ(21u, c.got.size());
    EXPECT_EQ("Hx", c.got[15]);
    EXPECT_EQ("Hy", c.got[16]);
    EXPECT_EQ("Hy", c.got[20]);
}

// A second producer that has not sent for three laps finds the ring where the first
// left it: all free, and full after one lap of its own.
TEST(ShmRing, AProducerIdleForLapsFindsTheRingFree) {
    Ring r({256, 16});
    int err = 0;
    auto other = ShmLink::open(r.name, err);
    ASSERT_TRUE(other) << err;
    Collector c;
    for (int lap = 0; lap < 3; lap++) {
        for (int i = 0; i < 16; i++)
            ASSERT_TRUE(r.send("a")) << lap << " " << i;
        ASSERT_EQ(16u, r.rx->poll(c, 100));
    }
    iovec iov{const_cast<char *>("b"), 1};
    for (int i = 0; i < 16; i++)
        ASSERT_TRUE(other->send("H", 1, &iov, 1, false)) << i;
    EXPECT_FALSE(other->send("H", 1, &iov, 1, false));
    EXPECT_EQ(16u, r.rx->poll(c, 100));
    EXPECT_EQ("Hb", c.got.back());
}

// Two producers race through many laps of a small ring while the consumer drains it:
// every packet arrives once, each producer's in its order.
TEST(ShmRing, RacingProducersLoseAndDuplicateNothing) {
    Ring r({64, 16});
    constexpr uint32_t kEach = 20000;
    auto produce = [&](char who) {
        int err = 0;
        auto link = ShmLink::open(r.name, err);
        ASSERT_TRUE(link) << err;
        for (uint32_t i = 0; i < kEach; i++) {
            char pkt[5] = {who};
            std::memcpy(pkt + 1, &i, 4);
            iovec iov{pkt, sizeof(pkt)};
            while (!link->send(nullptr, 0, &iov, 1, false)) {
                if (!link->alive()) return;  // the consumer gave up
                std::this_thread::yield();
            }
        }
    };
    std::thread a(produce, 'a'), b(produce, 'b');
    struct Check : PacketSink {
        uint32_t next[2] = {0, 0};
        bool bad = false;
        bool deliver(const uint8_t *pkt, size_t len) override {
            uint32_t i = 0;
            if (len != 5 || (pkt[0] != 'a' && pkt[0] != 'b')) {
                bad = true;
                return true;
            }
            std::memcpy(&i, pkt + 1, 4);
            if (i != next[pkt[0] - 'a']++) bad = true;
            return true;
        }
    } check;
    // A cell overwritten before it was read shows up as a gap the consumer waits at.
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (check.next[0] + check.next[1] < 2 * kEach && !check.bad &&
           std::chrono::steady_clock::now() < give_up)
        r.rx->poll(check, 8);
    bool stuck = check.next[0] + check.next[1] < 2 * kEach && !check.bad;
    if (stuck) r.rx.reset();  // producers waiting for space would wait forever: fail them
    a.join();
    b.join();
    ASSERT_FALSE(stuck) << "the consumer waited at a lost packet";
    EXPECT_FALSE(check.bad) << "a packet out of order, duplicated or malformed";
    EXPECT_EQ(kEach, check.next[0]);
    EXPECT_EQ(kEach, check.next[1]);
}

TEST(ShmRing, RefusedPacketStaysQueued) {
    Ring r;
    ASSERT_TRUE(r.send("first"));
    ASSERT_TRUE(r.send("second"));
    Collector c;
    c.accept = false;
    EXPECT_EQ(0u, r.rx->poll(c, 100));  // back-pressure: nothing consumed
    c.accept = true;
    EXPECT_EQ(2u, r.rx->poll(c, 100));
    EXPECT_EQ("Hfirst", c.got[0]);
}

TEST(ShmRing, HostileLengthIsDroppedNotTrusted) {
    Ring r({256, 16});
    ASSERT_TRUE(r.send("good1"));
    ASSERT_TRUE(r.send("bad"));
    ASSERT_TRUE(r.send("good2"));
    // Another process scribbles a huge length into the second cell.
    Segment other;
    ASSERT_EQ(0, other.open(r.name));
    auto *h = static_cast<RingHeader *>(other.addr());
    ring_cell(h, 1, 256, 16)->len = 0xFFFFFFFFu;
    Collector c;
    EXPECT_EQ(3u, r.rx->poll(c, 100)) << "the bad cell is consumed";
    ASSERT_EQ(3u, c.got.size());
    EXPECT_EQ("Hgood1", c.got[0]);
    EXPECT_EQ("", c.got[1]) << "handed on empty (the protocol drops and counts it), no bytes";
    EXPECT_EQ("Hgood2", c.got[2]);
}

// The geometry in the segment is anyone's to overwrite: consumer and producers keep
// the copy they took, so a huge cell count or size reaches no memory past the ring.
TEST(ShmRing, ScribbledGeometryIsNotFollowed) {
    Ring r({256, 16});
    ASSERT_TRUE(r.send("before"));
    Segment other;
    ASSERT_EQ(0, other.open(r.name));
    auto *h = static_cast<RingHeader *>(other.addr());
    h->cell_count = 1u << 30;
    h->cell_size = 1u << 20;
    Collector c;
    EXPECT_EQ(1u, r.rx->poll(c, 100));
    for (int i = 0; i < 40; i++) {  // wraps the 16 cells: positions past them stay inside
        ASSERT_TRUE(r.send("after")) << i;
        ASSERT_EQ(1u, r.rx->poll(c, 100)) << i;
    }
    ASSERT_EQ(41u, c.got.size());
    EXPECT_EQ("Hbefore", c.got[0]);
    EXPECT_EQ("Hafter", c.got[40]);
}

TEST(ShmRing, RingOfADeadOwnerIsReclaimedAndMarkedClosed) {
    std::string name = unique_name("stale");
    int ready[2], go[2];
    ASSERT_EQ(0, pipe(ready));
    ASSERT_EQ(0, pipe(go));
    pid_t child = fork();
    if (child == 0) {
        int err = 0;
        auto q = ShmRxQueue::create(name, RingGeometry{256, 16}, err);
        char c = q ? 'R' : 'F';
        if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1) _exit(2);
        _exit(q ? 0 : 1);  // no destructors: the segment stays behind, owner dead
    }
    char c = 0;
    ASSERT_EQ(1, read(ready[0], &c, 1));
    ASSERT_EQ('R', c);
    int err = 0;
    auto stale_link = ShmLink::open(name, err);  // opened while its owner lived
    ASSERT_TRUE(stale_link) << err;
    ASSERT_EQ(1, write(go[1], &c, 1));
    int status = 0;
    ASSERT_EQ(child, waitpid(child, &status, 0));
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int fd : {ready[0], ready[1], go[0], go[1]})
        close(fd);
    EXPECT_TRUE(stale_link->alive());
    EXPECT_TRUE(stale_link->peer_dead());
    EXPECT_FALSE(ShmLink::open(name, err)) << "a dead owner's ring is no one to send to";
    EXPECT_EQ(-ENOENT, err);
    auto fresh = ShmRxQueue::create(name, RingGeometry{256, 16}, err);
    ASSERT_TRUE(fresh) << "reclaiming a dead owner's ring failed: " << err;
    EXPECT_FALSE(stale_link->alive()) << "senders to the old ring must notice";
}

// Two processes may pick one name at once. The one that finds it taken while the other
// is still making the ring (our magic, no owner yet) must leave it alone: reclaiming it
// left two endpoints with one address, and a sender finding neither (seen as "nobody
// listens at that PID" once in a few hundred simultaneous starts).
TEST(ShmRing, ARingBeingMadeIsNotReclaimed) {
    std::string name = unique_name("making");
    int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    ASSERT_GE(fd, 0);
    size_t bytes = ring_bytes(256, 16);
    ASSERT_EQ(0, ftruncate(fd, off_t(bytes)));
    void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ASSERT_NE(MAP_FAILED, p);
    static_cast<RingHeader *>(p)->magic = kRingMagic;  // the maker got this far
    int err = 0;
    auto q = ShmRxQueue::create(name, RingGeometry{256, 16}, err);
    EXPECT_FALSE(q) << "took over a ring that was being made";
    EXPECT_EQ(-EADDRINUSE, err);
    struct stat st {
    }, now{};
    EXPECT_EQ(0, fstat(fd, &st));
    int again = shm_open(name.c_str(), O_RDWR, 0);
    EXPECT_GE(again, 0) << "the maker's ring lost its name";
    if (again >= 0) {
        EXPECT_EQ(0, fstat(again, &now));
        EXPECT_EQ(st.st_ino, now.st_ino) << "the name is someone else's ring now";
        close(again);
    }
    munmap(p, bytes);
    close(fd);
    shm_unlink(name.c_str());
}

// Leaves the ring `name` behind with its owner dead, as a killed process does.
void leave_stale_ring(const std::string &name) {
    pid_t child = fork();
    if (child == 0) {
        int err = 0;
        auto q = ShmRxQueue::create(name, RingGeometry{256, 16}, err);
        _exit(q ? 0 : 1);  // no destructors: the segment stays behind
    }
    int status = 0;
    ASSERT_EQ(child, waitpid(child, &status, 0));
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// Several processes starting at once find one dead process's ring under the name they
// all want. Exactly one must end up owning the name, and keep it: a second reclaimer of
// the old ring, let in after the first had made its new one, unlinked the new one (two
// endpoints with one address, and senders to it failed with "nobody listens at that PID":
// one 8-byte ping-pong start in about fifty, when the last run's rings were left behind).
TEST(ShmRing, RacingReclaimersOfAStaleRingLeaveOneOwnerWithItsName) {
    constexpr int kRounds = 40, kRacers = 4;
    for (int round = 0; round < kRounds; round++) {
        std::string name = unique_name("contended");
        leave_stale_ring(name);
        int go[2];
        ASSERT_EQ(0, pipe(go));
        std::vector<pid_t> racers;
        for (int r = 0; r < kRacers; r++) {
            pid_t child = fork();
            if (child == 0) {
                char c;
                close(go[1]);
                if (read(go[0], &c, 1) != 0) _exit(3);  // all start when the pipe closes
                int err = 0;
                auto q = ShmRxQueue::create(name, RingGeometry{256, 16}, err);
                if (!q) _exit(err == -EADDRINUSE ? 0 : 4);
                usleep(20000);  // the others have given up by now
                auto l = ShmLink::open(name, err);
                _exit(l && l->process() == getpid() ? 10 : 1);  // still ours under the name?
            }
            racers.push_back(child);
        }
        close(go[0]);
        close(go[1]);
        int owners = 0, lost = 0;
        for (pid_t p : racers) {
            int status = 0;
            ASSERT_EQ(p, waitpid(p, &status, 0));
            ASSERT_TRUE(WIFEXITED(status));
            owners += WEXITSTATUS(status) == 10;
            lost += WEXITSTATUS(status) == 1;
            EXPECT_NE(4, WEXITSTATUS(status)) << "a racer failed otherwise than EADDRINUSE";
        }
        shm_unlink(name.c_str());
        EXPECT_EQ(0, lost) << "round " << round << ": a new ring lost its name";
        EXPECT_EQ(1, owners) << "round " << round;
        if (lost || owners != 1) break;
    }
}

// Whether `pid` waits for a file lock (its request shows as "->" in /proc/locks).
bool waits_for_a_lock(pid_t pid) {
    const std::string who = " " + std::to_string(pid) + " ";
    for (int i = 0; i < 10000; i++) {
        std::ifstream locks("/proc/locks");
        for (std::string line; std::getline(locks, line);)
            if (line.find("->") != std::string::npos && line.find(who) != std::string::npos)
                return true;
        usleep(1000);
    }
    return false;
}

ino_t inode_of(const std::string &name) {
    int fd = shm_open(name.c_str(), O_RDONLY, 0);
    if (fd < 0) return 0;
    struct stat st {};
    fstat(fd, &st);
    close(fd);
    return st.st_ino;
}

// The race above, made to happen every time: a reclaimer has opened the dead process's
// ring and waits for its lock, while the reclaimer holding it unlinks the ring and makes a
// new one under the name. Let in, the late one must leave the new ring its name. The test
// plays the first reclaimer; it lets the late one in once /proc/locks shows it waiting.
TEST(ShmRing, AReclaimerLetInAfterTheNameWasRemadeLeavesTheNewRing) {
    const std::string name = unique_name("remade");
    leave_stale_ring(name);
    int fd = shm_open(name.c_str(), O_RDWR, 0);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(0, flock(fd, LOCK_EX));
    pid_t late = fork();
    if (late == 0) {
        int err = 0;
        auto q = ShmRxQueue::create(name, RingGeometry{256, 16}, err);
        _exit(q ? 10 : err == -EADDRINUSE ? 0 : 4);  // 10: it took the name
    }
    ASSERT_TRUE(waits_for_a_lock(late)) << "the late reclaimer never asked for the lock";
    ASSERT_EQ(0, shm_unlink(name.c_str()));  // the first reclaimer's work
    int err = 0;
    auto fresh = ShmRxQueue::create(name, RingGeometry{256, 16}, err);
    ASSERT_TRUE(fresh) << err;
    const ino_t fresh_inode = inode_of(name);
    flock(fd, LOCK_UN);
    close(fd);
    int status = 0;
    ASSERT_EQ(late, waitpid(late, &status, 0));
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(0, WEXITSTATUS(status))
        << "10: the late reclaimer unlinked the new ring and took the name";
    EXPECT_EQ(fresh_inode, inode_of(name)) << "the new ring lost its name";
}

TEST(ShmRing, LiveOwnerKeepsItsName) {
    int err = 0;
    std::string name = unique_name("busy");
    auto a = ShmRxQueue::create(name, RingGeometry{256, 16}, err);
    ASSERT_TRUE(a);
    auto b = ShmRxQueue::create(name, RingGeometry{256, 16}, err);
    EXPECT_FALSE(b);
    EXPECT_EQ(-EADDRINUSE, err);
}

TEST(ShmRing, OpeningAMissingRingFails) {
    int err = 0;
    EXPECT_FALSE(ShmLink::open(unique_name("absent"), err));
    EXPECT_EQ(-ENOENT, err);
}

}  // namespace
}  // namespace softnic::transport::shm

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A memory window (src/transport/shm/window.hpp) as a hostile owner could leave it: the
// table of regions, the counters and the board live in shared memory that every peer
// maps, so a peer must survive any bytes there. Each input: pairs of a 16-bit offset and
// a byte, scribbled over a freshly made window with a few published regions and a board
// entry; then a peer opens it and asks for regions, counters and board cells with the
// lookups that follow the pairs (8-byte key, offset, length). ASan sees any read or
// write outside the mapping.
#include <unistd.h>

#include <cstring>
#include <memory>

#include "transport/shm/window.hpp"

namespace shm = softnic::transport::shm;

namespace {

uint64_t take64(const uint8_t *&p, const uint8_t *end) {
    uint64_t v = 0;
    size_t n = std::min<size_t>(8, size_t(end - p));
    std::memcpy(&v, p, n);
    p += n;
    return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    std::string name = shm::window_name(getpid(), 7);
    int err = 0;
    auto owner = shm::Window::create(name, 16, 8, 2, err);
    if (!owner) return 0;
    static uint8_t region[4096];
    for (uint64_t k = 1; k <= 4; k++)
        owner->publish(k, reinterpret_cast<uint64_t>(region) + k * 512, 512, 3);
    if (shm::BoardEntry *e = owner->board().claim(3, 5))
        for (uint32_t seq = 0; seq < 3; seq++)
            shm::Board::post(*e, seq, seq, region, 32);
    shm::Segment seg;  // the hostile owner's hands
    if (seg.open(name) != 0) return 0;
    auto *bytes = static_cast<uint8_t *>(seg.addr());
    size_t pairs = data[0] % 64, i = 1;
    for (size_t done = 0; done < pairs && i + 3 <= size; done++, i += 3)
        bytes[(size_t(data[i]) | size_t(data[i + 1]) << 8) % seg.size()] = data[i + 2];
    auto view = shm::WindowView::open(name, getpid());
    if (!view) return 0;
    const uint8_t *p = data + i, *end = data + size;
    while (p < end) {
        uint64_t key = take64(p, end), off = take64(p, end), len = take64(p, end);
        uint64_t addr = 0;
        shm::WindowView::Ticket t;
        if (view->enter(key % 8, off % 4096, len % 4096, 1 + (key >> 62), addr, t)) view->leave(t);
        if (std::atomic<uint64_t> *c = view->counter(uint32_t(off))) c->fetch_add(1);
        if (const shm::BoardEntry *e = view->board().find(3, 5)) {
            uint64_t word = 0;
            uint8_t cell[shm::kBoardBytes];
            if (shm::Board::read(*e, 5, uint32_t(len), word, cell)) (void)cell[word % sizeof(cell)];
        }
    }
    return 0;
}

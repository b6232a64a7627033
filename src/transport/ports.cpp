// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "transport/ports.hpp"

#include <algorithm>
#include <cstring>

#include "common/log.hpp"

namespace softnic::transport {

const Transport &shm_transport();  // shm/shm_port.cpp
const Transport &udp_transport();  // udp/udp_port.cpp

const std::vector<const Transport *> &transports() {
    static const std::vector<const Transport *> all{&shm_transport(), &udp_transport()};
    return all;
}

Link *PeerTable::shared(const Transport &t, const Address &peer, const Naming &n, Opener open,
                        int &err) {
    std::lock_guard<std::mutex> g(lock_);
    auto key = std::make_pair(&t, peer.key());
    auto it = by_peer_.find(key);
    if (it != by_peer_.end() && it->second->alive()) return it->second;
    std::unique_ptr<Link> link = open(peer, n, err);
    if (!link) return nullptr;
    Link *l = link.get();
    all_.push_back(std::move(link));
    by_peer_[key] = l;
    return l;
}

void PeerTable::forget(const Link *link) {
    std::lock_guard<std::mutex> g(lock_);
    std::erase_if(by_peer_, [link](const auto &kv) { return kv.second == link; });
}

// The set is filled only once every port is open: until then is_open() is false, and a
// progress call from another thread (through a CQ already bound) finds nothing to poll.
int PortSet::open(const Address &self, const PortOptions &o, PeerTable &peers) {
    std::vector<Entry> opened;
    shm::ShmRxQueue *ring = nullptr;
    for (const Transport *t : transports()) {
        int err = 0;
        std::unique_ptr<Port> p = t->open(self, o, peers, err);
        if (!p && (t->required() || err == -EADDRINUSE)) return err ? err : -EINVAL;
        if (!p) {
            SN_WARN(FI_LOG_EP_CTRL,
                    "no %s port for %u:%u:%u (%s): peers it serves are unreachable\n", t->name(),
                    self.node, self.realm, self.id, strerror(-err));
            continue;
        }
        RxQueue *q = &p->queue();
        bool always = p->polled_always();
        Port::Signals sig = p->signals();
        opened.push_back(Entry{std::move(p), q, always, sig});
        // The shared-memory transport's queue is its ring (shm_port.cpp): called by type.
        if (always && t == &shm_transport() && !ring) ring = static_cast<shm::ShmRxQueue *>(q);
    }
    // Only now that every port opened (a failure above returns with nothing kept).
    ring_ = ring;
    for (Entry &e : opened) {  // a vector's move keeps its elements where they are
        if (e.always) {
            if (e.queue != ring) local_.push_back(e.queue);
        } else if (!quiet_) {
            quiet_ = &e;
        } else {
            more_quiet_.push_back(&e);
        }
    }
    more_ = !local_.empty() || !more_quiet_.empty();
    ports_ = std::move(opened);
    return 0;
}

void PortSet::close() {
    for (Entry &e : ports_)
        e.port->linger();
    ring_ = nullptr;
    local_.clear();
    quiet_ = nullptr;
    more_ = false;
    more_quiet_.clear();
    ports_.clear();
    failed_.clear();
    foreign_new_ = 0;
    last_ = nullptr;
}

void PortSet::poll_local(PacketSink &sink) {
    if (ring_) ring_->poll(sink, 64);
    for (RxQueue *q : local_)
        q->poll(sink, 64);
}

bool PortSet::poll_more(PacketSink &sink, bool periodic) {
    for (RxQueue *q : local_)
        q->poll(sink, 64);
    bool polled = false;
    for (Entry *e : more_quiet_)
        if (periodic || e->wants_poll()) {
            poll_quiet(*e, sink);
            polled = true;
        }
    return polled;
}

bool PortSet::more_busy() const {
    return std::any_of(more_quiet_.begin(), more_quiet_.end(),
                       [](const Entry *e) { return e->busy(); });
}

void PortSet::poll_quiet(Entry &e, PacketSink &sink) {
    e.queue->poll(sink, 64);
    uint64_t foreign = e.port->foreign();
    foreign_new_ += foreign - e.foreign_seen;
    e.foreign_seen = foreign;
    e.queue->take_failed(failed_);
}

Link *PortSet::resolve(const Address &peer, int &err, bool &shared) {
    for (Entry &e : ports_)
        if (e.port->reaches(peer)) {
            shared = e.port->shares_links();
            Link *l = e.port->link_to(peer, err);
            last_ = shared ? nullptr : l;
            last_key_ = peer.key();
            return l;
        }
    err = -EHOSTUNREACH;
    return nullptr;
}

int PortSet::wake_fd() const {
    for (const Entry &e : ports_)
        if (int fd = e.port->wake_fd(); fd >= 0) return fd;
    return -1;
}

bool PortSet::watch() const {
    return std::any_of(ports_.begin(), ports_.end(), [](const Entry &e) {
        return e.port->wake_fd() >= 0 && !e.port->wants_poll();
    });
}

void PortSet::mark_active() {
    for (Entry &e : ports_)
        e.port->mark_active();
}

}  // namespace softnic::transport

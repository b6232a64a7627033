// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// AV sets (fi_av_set(3)): ordered subsets of an AV's addresses, the membership of a
// collective group. The order is the members' ranks: the order in which they entered.
#pragma once

#include <rdma/fi_collective.h>

#include <vector>

#include "common/av.hpp"
#include "common/fid.hpp"

namespace softnic {

class AvSet {
  public:
    // The collective address of a set: this bit, and the set's number.
    static constexpr fi_addr_t kCollAddrBit = 1ULL << 62;

    static int open(Av &av, const fi_av_set_attr *attr, fid_av_set **set, void *context);
    ~AvSet();
    AvSet(const AvSet &) = delete;
    AvSet &operator=(const AvSet &) = delete;

    fid_av_set *fid() { return &handle_.fid; }
    Av &av() const { return av_; }
    const std::vector<fi_addr_t> &members() const { return members_; }
    fi_addr_t coll_addr() const { return kCollAddrBit | id_; }
    // The set behind a fid an application passed in (null when it is not one of ours).
    static const AvSet *of(const fid_av_set *set);

    int set_union(const AvSet &src);
    int intersect(const AvSet &src);
    int diff(const AvSet &src);
    int insert(fi_addr_t addr);
    int remove(fi_addr_t addr);

  private:
    AvSet(Av &av, void *context);
    bool has(fi_addr_t a) const;
    int check_peer(const AvSet &src) const;

    Handle<fid_av_set, AvSet> handle_;
    Av &av_;
    uint64_t id_;
    std::vector<fi_addr_t> members_;
};

}  // namespace softnic

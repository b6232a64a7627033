// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// DGRAM endpoint: plain UDP on one socket, so real usNIC peers and ordinary UDP
// programs can talk to it. Sends leave at once; receives are posted buffers that the
// socket fills in posting order when the application progresses.
#pragma once

#include <vector>

#include "common/lock.hpp"
#include "usnic/endpoint.hpp"

namespace softnic::usnic {

class DgramEp final : public Endpoint {
  public:
    static int create(Domain *domain, const fi_info &info, void *context, Endpoint *&out);
    DgramEp(Domain *domain, const fi_info &info, void *context);
    ~DgramEp() override;
    ssize_t send(const Op &op) override;
    ssize_t recv(const Op &op) override;
    ssize_t size_left(bool tx) override;
    void progress() override;

  private:
    int enable() override;
    struct Rx {
        iovec iov[8];
        size_t count;
        size_t cap;  // bytes the buffers hold (after the prefix)
        void *context;
    };
    sockaddr_in local_name() const override;
    void complete(Rx &rx, const sockaddr_in &from, size_t got);
    void fill_prefix(uint8_t *prefix, const sockaddr_in &from, size_t payload) const;

    int fd_ = -1;
    uint16_t bind_port_be_ = 0;
    SpinLock lock_;
    std::vector<Rx> rxq_;  // ring of posted receives
    size_t rx_head_ = 0, rx_count_ = 0;
};

}  // namespace softnic::usnic

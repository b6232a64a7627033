// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What each service has in use on a device, summed over the live processes of the host.
//
// A table in the registry's directory (`<device>.usage`, mapped shared) holds one slot
// per (process, service); a process counts its own resources there under flock, and a
// slot whose process died no longer counts. Root creates the file with the registry;
// until then nothing is counted. Every user's processes count in it, so it is writable
// by all: it is checked before use, never trusted, and a process could only corrupt
// the counts that limit its peers (cxi_service(1) says so).
#pragma once

#include <libcxi/libcxi.h>

#include <array>
#include <cstdint>
#include <string>

namespace softnic::cxil {

using Counts = std::array<uint32_t, CXI_RSRC_TYPE_MAX>;

class Usage {
  public:
    explicit Usage(const std::string &device);
    ~Usage();
    Usage(const Usage &) = delete;
    Usage &operator=(const Usage &) = delete;

    // Count n more of `type` for svc_id; -ENOSPC when that would pass `max` (0: none).
    int take(uint32_t svc_id, cxi_rsrc_type type, unsigned n, unsigned max);
    void give(uint32_t svc_id, cxi_rsrc_type type, unsigned n);
    // The service's total over live processes.
    Counts total(uint32_t svc_id);
    // Whether any live process holds anything of the service.
    bool in_use(uint32_t svc_id);
    bool ok() const { return table_ != nullptr; }

  private:
    struct Table;
    template <typename F>
    auto locked(F &&f);
    int fd_ = -1;
    Table *table_ = nullptr;
};

}  // namespace softnic::cxil

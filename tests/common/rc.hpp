// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// libfabric return codes in test output, for every suite (and the gtest-free peer
// programs): "-22 (Invalid argument)".
#pragma once

#include <rdma/fi_errno.h>

#include <string>

namespace softnic_test {

inline std::string rc_str(long rc) {
    return std::to_string(rc) + " (" + fi_strerror(static_cast<int>(rc < 0 ? -rc : rc)) + ")";
}

}  // namespace softnic_test

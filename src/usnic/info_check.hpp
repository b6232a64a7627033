// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The hint rules of fi_usnic: which hints an offer satisfies, and how the offer is
// narrowed to them. -FI_ENODATA means "not this offer"; other codes end the call.
#pragma once

#include <rdma/fabric.h>

namespace softnic::usnic {

// Rules that do not depend on the device or endpoint type (address format, protocol,
// auth key, provider version).
int check_global_hints(const fi_info &hints, uint32_t version);

// Checks `offer` against the hints and narrows it (queue sizes, op flags, threading).
int fit_to_hints(fi_info &offer, const fi_info &hints, uint32_t version);

// The fi_domain / fi_endpoint side of the same rules, on an info the application
// may have edited. 0 or the code to return.
int check_mr_mode(const fi_info &info, uint32_t version);

}  // namespace softnic::usnic

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Poll sets (fi_poll_open), shared by both providers: a list of CQs (and, where the
// provider has them, counters); fi_poll progresses each member and reports the
// contexts of the CQs holding completions and of the counters that changed since the
// last fi_poll.
#pragma once

#include <rdma/fi_domain.h>

#include "common/fid.hpp"

namespace softnic {

// `domain_refs` is held while the set lives; `counters`: whether counters may join.
int poll_set_open(RefCount &domain_refs, fi_poll_attr *attr, fid_poll **out, bool counters);

}  // namespace softnic

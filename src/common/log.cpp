// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#include "common/log.hpp"

namespace softnic {
namespace {
const fi_provider *g_provider = nullptr;
}

const fi_provider *log_provider() {
    return g_provider;
}
void set_log_provider(const fi_provider *prov) {
    g_provider = prov;
}

}  // namespace softnic

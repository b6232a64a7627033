// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Layer probe: a header of its own layer and one of a layer above (must not compile).
#include "cxi/prov/nic.hpp"
#include "cxil/devices.hpp"

// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Layer probe, control: transport may include common (must compile).
#include "common/log.hpp"
#include "transport/transport.hpp"

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Configure and build softnic into ./build (plugins land in build/lib).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" -DSOFTNIC_TESTS=ON >/dev/null
cmake --build build -j"${JOBS:-2}"

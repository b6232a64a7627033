#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# The shipped code (both plugins, libcxi, the tools) must build warning-free as a
# Release (-O3) build, warnings as errors, in build-release/. The clang build is the
# fuzzers' (scripts/fuzz.sh: the same targets, clang, -Werror). The tests are built and
# run by scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(cxi-fi usnic-fi cxi cxi_service cxi_stat)
variant() {
    local dir=$1; shift
    echo "== $dir: $*"
    cmake -S . -B "$dir" -DSOFTNIC_TESTS=OFF -DSOFTNIC_WERROR=ON "$@" >/dev/null
    cmake --build "$dir" -j"${JOBS:-2}" --target "${targets[@]}"
}
variant build-release -DCMAKE_BUILD_TYPE=Release
[ -z "${WITH_CLANG:-}" ] || variant build-clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
echo "Release build: warning-free"

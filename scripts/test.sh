#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Set up a fresh Debian 12 machine, build, and run every test suite: the build variants,
# the suite once more under ASan/UBSan/LSan, the unit and conformance suites under
# ThreadSanitizer, the fuzzers for a bounded time, then the
# main suite (docs/RELIABILITY.md says what each part covers).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ]; then scripts/setup-debian.sh; fi
# Formatting (.clang-format) and the SPDX line of every source: a second, no more.
scripts/check-format.sh
scripts/build.sh
# The shipped code also builds warning-free as Release (and with clang: the fuzz build).
scripts/build-variants.sh
scripts/test-sanitizers.sh
scripts/test-tsan.sh
FUZZ_SECONDS=${FUZZ_SECONDS:-20} scripts/fuzz.sh
# CTEST_JOBS: tests at once (default 4 on 2 CPUs). Each process spends 0.2 s asleep
# loading Debian's libfabric (libinfinipath's constructor calibrates the CPU clock with
# usleep); running 4 overlaps those sleeps (main suite: ~630 s at -j2 on 2026-11-28's
# machine; 529 s at -j3, 378-389 s at -j4 on 2026-11-29's).
ctest --test-dir build --output-on-failure -j"${CTEST_JOBS:-4}" --timeout 600

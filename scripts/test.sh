#!/usr/bin/env bash
# Set up a fresh Debian 12 machine, build, and run every test suite: the build variants,
# the suite once more under ASan/UBSan/LSan, the fuzzers for a bounded time, then the
# main suite (docs/RELIABILITY.md says what each part covers).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ]; then scripts/setup-debian.sh; fi
scripts/build.sh
# The shipped code also builds warning-free as Release (and with clang: the fuzz build).
scripts/build-variants.sh
scripts/test-sanitizers.sh
FUZZ_SECONDS=${FUZZ_SECONDS:-30} scripts/fuzz.sh
ctest --test-dir build --output-on-failure -j"${JOBS:-2}" --timeout 600

#!/usr/bin/env bash
# Set up a fresh Debian 12 machine, build, and run every test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ]; then scripts/setup-debian.sh; fi
scripts/build.sh
# The shipped code also builds warning-free as Release and with clang.
scripts/build-variants.sh
ctest --test-dir build --output-on-failure -j"${JOBS:-2}" --timeout 600

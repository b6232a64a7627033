#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# The suite once more with AddressSanitizer, UndefinedBehaviorSanitizer and
# LeakSanitizer: plugins, tools and tests built with them in build-san/, every test
# whose processes are ours run with any report fatal. The integration tests that drive
# libfabric's own clients (fi_pingpong, Open MPI: no sanitizer runtime to load the
# plugins into) and the soak (Open MPI, and minutes) are left to the main run, and so are
# the suites repeated under FI_THREAD_DOMAIN and FI_THREAD_COMPLETION (serial.*,
# completion.*: the same engine code; their own tests, SerialDomainTest and
# unit.DomainSerial, run here, and TSan runs the rest).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${SAN_BUILD_DIR:-build-san}
cmake -S . -B "$dir" -DSOFTNIC_SANITIZE=address,undefined -DSOFTNIC_WERROR=ON >/dev/null
cmake --build "$dir" -j"${JOBS:-2}"
supp="$PWD/tests/sanitizers"
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
# CTEST_JOBS as in scripts/test.sh: 4 at once overlap libfabric's 0.2 s load.
ctest --test-dir "$dir" --output-on-failure -j"${CTEST_JOBS:-4}" --timeout 900 \
    -E '^integration\.|^tools\.|^soak\.|^serial\.|^completion\.' "$@"

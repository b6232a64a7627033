#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Data races: the unit suite and the conformance suites (provider-agnostic, usnic, and
# cxi's) built with ThreadSanitizer in build-tsan/, plugins included, any report fatal
# (exit 66). The progress helper thread, the lock-free ring and the endpoints' threading
# models run here under TSan. No suppression: what it reports is fixed.
# cxi's conformance suite runs in full (TSAN_CXI_FILTER narrows it, a gtest filter).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${TSAN_BUILD_DIR:-build-tsan}
cmake -S . -B "$dir" -DSOFTNIC_SANITIZE=thread -DSOFTNIC_WERROR=ON >/dev/null
cmake --build "$dir" -j"${JOBS:-2}" --target softnic_unit shared_conformance \
    usnic_conformance cxi_conformance cxi_peer cxi-fi usnic-fi
export TSAN_OPTIONS="halt_on_error=1:exitcode=66:report_signal_unsafe=0"
export FI_PROVIDER_PATH=$PWD/$dir/lib FI_CXI_SOFT_NICS=127.0.0.1,127.0.0.2 FI_USNIC_IFACES=lo
run() {
    echo "== TSan: $*"
    "$@" --gtest_brief=1
}
run "$dir/tests/unit/softnic_unit"
run "$dir/tests/shared/shared_conformance"
run "$dir/tests/usnic/usnic_conformance"
run "$dir/tests/cxi_conformance" --gtest_filter="${TSAN_CXI_FILTER:-*}"
# FI_THREAD_DOMAIN: the application's count against the helper's membarrier (serial.hpp).
run env CXIT_THREADING=domain "$dir/tests/cxi_conformance" \
    --gtest_filter="${TSAN_SERIAL_FILTER:-*SerialDomainTest.*:*MsgTest.*:*TaggedTest.*:*TriggeredTest.*}"
# FI_THREAD_COMPLETION: each engine's own count against the helper's membarrier.
run env CXIT_THREADING=completion "$dir/tests/cxi_conformance" \
    --gtest_filter="${TSAN_SERIAL_FILTER:-*SerialDomainTest.*:*MsgTest.*:*TaggedTest.*:*TriggeredTest.*}"
echo "ThreadSanitizer: no data race reported"

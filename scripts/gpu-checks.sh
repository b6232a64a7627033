#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# The FI_HMEM checks on a machine with an NVIDIA GPU, run from the folder that
# scripts/gpu-bundle.sh made (it needs nothing else there: no libfabric, no network):
#
#   scripts/gpu-checks.sh [BUNDLE_DIR] [OUT_DIR]     (defaults: .gpu, $OUT or /tmp/gpu-checks)
#
# Prints the machine, what fi_info offers, the FI_HMEM conformance tests over shared
# memory and UDP (two processes sharing the GPU among them), a sample of the rest of the
# suite with the driver present, and the bandwidth table; logs go to OUT_DIR.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
bundle=${1:-.gpu}
out=${2:-${OUT:-/tmp/gpu-checks}}
mkdir -p "$out"
# shellcheck source=/dev/null
source "$bundle/env.sh"
# cxi_conformance execs its peer at the build path compiled in.
if [ -n "${SOFTNIC_CXI_PEER_PATH:-}" ] && [ ! -x "$SOFTNIC_CXI_PEER_PATH" ]; then
    mkdir -p "$(dirname "$SOFTNIC_CXI_PEER_PATH")"
    ln -sf "$SOFTNIC_BUNDLE/tests/cxi_peer" "$SOFTNIC_CXI_PEER_PATH"
fi
export FI_CXI_SOFT_NICS=127.0.0.1,127.0.0.2 IPATH_NO_BACKTRACE=1
rc=0
step() { echo; echo "== $*"; }

step machine
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || rc=1
grep -m1 'model name' /proc/cpuinfo
echo "cpus: $(nproc)"

step "fi_info -p cxi -c FI_HMEM (domains offering FI_HMEM)"
fi_info -p cxi -c FI_HMEM -t FI_EP_RDM | grep -E 'domain|caps' | head -6 || rc=1

step "FI_HMEM conformance tests (shm and udp)"
"$SOFTNIC_BUNDLE/tests/cxi_conformance" --gtest_filter='*Hmem*' 2>&1 |
    tee "$out/hmem-tests.log" | grep -E '^\[ *(OK|FAILED|SKIPPED|PASSED|RUN) *\]|Failure|Expected|Which is|error' |
    grep -v '^\[ RUN' | head -60
# On a GPU machine every FI_HMEM test runs: none may fail or skip.
grep -q '^\[  PASSED  \]' "$out/hmem-tests.log" &&
    ! grep -qE '^\[  (FAILED|SKIPPED) ' "$out/hmem-tests.log" || rc=1

step "the rest of the suite, sampled, with the CUDA driver loaded"
"$SOFTNIC_BUNDLE/tests/cxi_conformance" \
    --gtest_filter='*Msg*:*Tagged*:*Rma*:*MultiProc*:*Getinfo*:-*Hmem*' 2>&1 |
    tee "$out/sample-tests.log" | tail -n 3
grep -q '^\[  PASSED  \]' "$out/sample-tests.log" && ! grep -q '^\[  FAILED  \]' "$out/sample-tests.log" || rc=1

step "bandwidth: host -> host and device -> device, same run (bench/hmem_bw.cpp)"
"$SOFTNIC_BUNDLE/bench/hmem_bw" 100 2>&1 | tee "$out/hmem-bw.md" || rc=1

echo
echo "gpu-checks: $([ $rc = 0 ] && echo passed || echo FAILED)"
exit $rc

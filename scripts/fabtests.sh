#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Runs upstream fabtests' own driver (runfabtests.sh) against softnic's providers on
# this host, server and client on loopback, and prints each provider's summary.
#
#   scripts/fabtests.sh FABTESTS_PREFIX [provider...]     (providers: cxi usnic)
#
# FABTESTS_PREFIX is where fabtests was installed (bin/runfabtests.sh, share/fabtests);
# docs/man/fi_cxi.7.md (FABTESTS) says how to build it from libfabric's source.
# Environment:
#   PLUGINS   directory of libcxi-fi.so / libusnic-fi.so (default: build/lib)
#   SETS      the driver's test sets (default: unit,functional,standard,short)
#   OOB=1     out-of-band address exchange (the driver's -b)
#   TIMEOUT   seconds per test before the driver kills it (default: 60)
#   LOGDIR    where each provider's full driver output goes (default: a temporary dir)
# Excluded tests, each with its reason: tests/fabtests/test_configs/<prov>/<prov>.exclude,
# and with OOB=1 also <prov>-oob.exclude (fabtests that ignore -E).
# Note: the driver kills every process named fi_* on the host when it finishes.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

prefix=${1:?usage: scripts/fabtests.sh FABTESTS_PREFIX [provider...]}
shift
providers=("$@")
[ ${#providers[@]} -gt 0 ] || providers=(cxi usnic)
driver=$prefix/bin/runfabtests.sh
[ -x "$driver" ] || { echo "no $driver: build and install fabtests first" >&2; exit 2; }

plugins=$(cd "${PLUGINS:-build/lib}" && pwd)
logdir=${LOGDIR:-$(mktemp -d -t softnic-fabtests.XXXXXX)}
mkdir -p "$logdir"
args=(-T "${TIMEOUT:-60}" -t "${SETS:-unit,functional,standard,short}"
      -s 127.0.0.1 -c 127.0.0.1)
[ "${OOB:-0}" = 1 ] && args+=(-b)

status=0
for prov in "${providers[@]}"; do
    configs=$root/tests/fabtests/test_configs/$prov
    excl=()
    [ -f "$configs/$prov.exclude" ] && excl+=(-f "$configs/$prov.exclude")
    [ "${OOB:-0}" = 1 ] && [ -f "$configs/$prov-oob.exclude" ] &&
        excl+=(-f "$configs/$prov-oob.exclude")
    env_args=(-E "FI_PROVIDER_PATH=$plugins" -E IPATH_NO_BACKTRACE=1)
    # usnic's devices are the non-loopback interfaces unless named (fi_usnic(7)).
    [ "$prov" = usnic ] && env_args+=(-E FI_USNIC_IFACES=lo)
    log=$logdir/$prov.log
    echo "== $prov (full output: $log)"
    # The driver finds test_configs/ relative to its working directory.
    (cd "$prefix/share/fabtests" &&
        PATH=$prefix/bin:$PATH FI_PROVIDER_PATH=$plugins IPATH_NO_BACKTRACE=1 \
            FI_USNIC_IFACES=lo "$driver" "${args[@]}" "${env_args[@]}" \
            "${excl[@]}" "$prov") >"$log" 2>&1 || status=1
    grep -E ':\s+Fail' "$log" || true
    grep -E '^# Total' "$log"
done
exit $status

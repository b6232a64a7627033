#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# CPU used by a reader blocked on an idle CQ (bench/wait_cpu.c), cxi against
# libfabric's tcp;ofi_rxm in the same run: fi_cq_sread, and fi_trywait + poll() on the
# FI_GETWAIT descriptor; cxi's FI_WAIT_NONE (polling) as the spinning baseline.
#
#   bench/wait_cpu.sh [SECONDS]      (default 3 per point)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
scripts/build.sh >/dev/null
export FI_PROVIDER_PATH=$PWD/build/lib
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -std=gnu11 -Wall -Wextra -o "$tmp/wait_cpu" bench/wait_cpu.c -lfabric
s=${1:-3}
bench_machine
echo
echo "| provider | wait object | blocked in | CPU (% of one core) |"
echo "|---|---|---|---|"
for point in "cxi fd sread" "cxi fd poll" "cxi unspec sread" "tcp;ofi_rxm fd sread" \
    "tcp;ofi_rxm fd poll" "cxi none sread"; do
    read -r prov wait mode <<<"$point"
    pct=$("$tmp/wait_cpu" "$prov" "$wait" "$mode" "$s" | awk '{print $5}')
    echo "| $prov | $wait | $mode | $pct |"
done

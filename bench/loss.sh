#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# What packet loss costs: fi_pingpong 8 bytes (latency) and 1 MiB (bandwidth) between two
# network namespaces, on a clean wire and with LOSS % of the UDP each side receives
# dropped (nftables), for cxi and libfabric's tcp;ofi_rxm and udp;ofi_rxd in the same run.
#
#   bench/loss.sh [--quick]        (root: it makes network namespaces)
#
# Each point is the median of REPEAT runs (default 3); the providers take turns run by
# run. A provider that fails a run (udp;ofi_rxd stalls under loss) shows "n/a" for it.
# tcp;ofi_rxm's own traffic is TCP, which the rule leaves alone: its row is the clean
# wire's twice and is there as the reference the issue compares against.
# Prints a markdown table for docs/PERFORMANCE.md: each provider's lossy / clean ratio.
#
# BUILD=<dir>: the plugins of that build (<dir>/lib); by default ./build, built first.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_plugins
REPEAT=${REPEAT:-3}
LOSS=${LOSS:-10}
LAT_ITERS=${LAT_ITERS:-3000}
BW_ITERS=${BW_ITERS:-100}
RUN_TIMEOUT=${RUN_TIMEOUT:-60}
if [ "${1:-}" = "--quick" ]; then REPEAT=1; LAT_ITERS=500; BW_ITERS=20; fi
PROVIDERS=("cxi" "tcp;ofi_rxm" "udp;ofi_rxd")
port=48600

. tests/integration/netns.sh
netns_require_root
command -v nft >/dev/null || { echo "no nft: cannot drop packets" >&2; exit 1; }
netns_up 1500 >&2

median() { sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "n/a"}'; }

# One fi_pingpong pair (server in A, client in B); prints column $2 of the client's last
# line (4: usec/xfer, 3: MB/sec... as fi_pingpong prints them), nothing on failure.
run() {
    local prov=$1 col=$2 size=$3 iters=$4
    port=$((port + 1))
    in_a timeout "$RUN_TIMEOUT" fi_pingpong -p "$prov" -e rdm -B "$port" -S "$size" \
        -I "$iters" >/dev/null 2>&1 &
    local server=$! tries=0 line
    until ip netns exec "$NS_A" ss -ltn 2>/dev/null | grep -q ":$port " || [ $tries -ge 30 ]; do
        sleep 0.1; tries=$((tries + 1))
    done
    line=$(in_b timeout "$RUN_TIMEOUT" fi_pingpong -p "$prov" -e rdm -P "$port" -S "$size" \
        -I "$iters" "$IP_A" 2>/dev/null | tail -1) || true
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    awk -v c="$col" '$c ~ /^[0-9]+(\.[0-9]+)?$/ {print $c}' <<<"$line"
}

# Medians per provider for one size at the current loss: fills med[].
measure() {
    local col=$1 size=$2 iters=$3 i v
    local -a all=()
    for _ in $(seq "$REPEAT"); do
        for i in "${!PROVIDERS[@]}"; do
            v=$(run "${PROVIDERS[i]}" "$col" "$size" "$iters")
            all[i]+="${v:-} "
        done
    done
    for i in "${!PROVIDERS[@]}"; do
        med[i]=$(tr ' ' '\n' <<<"${all[i]:-}" | grep . | median)
    done
}

ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (a == "n/a" || b == "n/a" || b + 0 <= 0) print "n/a"; else printf "%.1f", a / b }'
}

declare -a med clean_lat lossy_lat clean_bw lossy_bw
netns_drop_in 0 "$NS_A" "$NS_B"
measure 7 8 "$LAT_ITERS"; clean_lat=("${med[@]}")
measure 6 1048576 "$BW_ITERS"; clean_bw=("${med[@]}")
netns_drop_in "$LOSS" "$NS_A" "$NS_B"
measure 7 8 "$LAT_ITERS"; lossy_lat=("${med[@]}")
measure 6 1048576 "$BW_ITERS"; lossy_bw=("${med[@]}")
echo "UDP packets dropped by nftables: $(netns_drop_count)" >&2

bench_machine
echo
echo "| provider | 8 B usec/xfer, clean | with $LOSS % loss | ratio | 1 MiB MB/s, clean | with $LOSS % loss | ratio |"
echo "|---|---|---|---|---|---|---|"
for i in "${!PROVIDERS[@]}"; do
    echo "| ${PROVIDERS[i]} | ${clean_lat[i]} | ${lossy_lat[i]} | $(ratio "${lossy_lat[i]}" "${clean_lat[i]}")x |" \
        "${clean_bw[i]} | ${lossy_bw[i]} | $(ratio "${lossy_bw[i]}" "${clean_bw[i]}")x |"
done

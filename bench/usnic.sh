#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# usnic against libfabric's own software providers between two hosts, in the same run:
# DGRAM vs udp, RDM vs udp;ofi_rxd, MSG vs tcp (all through fi_pingpong).
#
#   bench/usnic.sh [--quick]        (root: it makes network namespaces)
#
# The hosts are network namespaces joined by a veth (tests/integration/netns.sh), MTU
# 1500 unless MTU= says otherwise (DGRAM messages must fit one datagram); servers run
# in A, clients in B. usnic's device there is the veth (FI_USNIC_IFACES unset: every
# interface but loopback). Rows: 8-byte latency (usec/xfer, lower is better) and
# bandwidth (MB/s, higher is better) at 1 KiB for DGRAM and 1 MiB for RDM and MSG.
# Each point is the median of REPEAT runs (default 3), contenders taking turns.
# Prints a markdown table for docs/PERFORMANCE.md; ratio = usnic / other.
#
# BUILD=<dir>: use the plugins of that build (<dir>/lib); by default ./build is built.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_plugins
REPEAT=${REPEAT:-3}
LAT_ITERS=${LAT_ITERS:-10000}
BW_ITERS=${BW_ITERS:-300}
RUN_TIMEOUT=${RUN_TIMEOUT:-60}
MTU=${MTU:-1500}
if [ "${1:-}" = "--quick" ]; then REPEAT=1; LAT_ITERS=1000; BW_ITERS=30; fi
port=48600

. tests/integration/netns.sh
netns_require_root
netns_up "$MTU" >&2

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# One fi_pingpong pair: provider $1, endpoint $2, then fi_pingpong options; prints
# column $col of the client's last line (or nothing when it failed).
pair() {
    local prov=$1 ep=$2 col=$3; shift 3
    port=$((port + 1))
    in_a timeout "$RUN_TIMEOUT" fi_pingpong -p "$prov" -e "$ep" -B "$port" "$@" >/dev/null 2>&1 &
    local server=$! tries=0 line
    until ip netns exec "$NS_A" ss -ltn 2>/dev/null | grep -q ":$port " || [ $tries -ge 50 ]; do
        sleep 0.1; tries=$((tries + 1))
    done
    line=$(in_b timeout "$RUN_TIMEOUT" fi_pingpong -p "$prov" -e "$ep" -P "$port" "$@" "$IP_A" \
        2>/dev/null | tail -1) || true
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    echo "$line" | awk -v c="$col" '$c ~ /^[0-9]+(\.[0-9]+)?$/ {print $c}'
}

# A row: label, endpoint type, other provider, result column, fi_pingpong options.
row() {
    local label=$1 ep=$2 other=$3 col=$4; shift 4
    local -a us=() them=()
    pair usnic "$ep" "$col" "$@" >/dev/null; pair "$other" "$ep" "$col" "$@" >/dev/null  # warm up
    for _ in $(seq "$REPEAT"); do
        us+=("$(pair usnic "$ep" "$col" "$@")")
        them+=("$(pair "$other" "$ep" "$col" "$@")")
    done
    local u t
    u=$(printf '%s\n' "${us[@]}" | grep . | median || true)
    t=$(printf '%s\n' "${them[@]}" | grep . | median || true)
    local r
    r=$(awk -v a="${u:-0}" -v b="${t:-0}" 'BEGIN { if (a <= 0 || b <= 0) print "n/a"; else printf "%.2f", a / b }')
    echo "| $label | ${u:-n/a} | $other | ${t:-n/a} | $r |"
}

load=$(cut -d' ' -f1 /proc/loadavg)
echo "<!-- bench/usnic.sh REPEAT=$REPEAT LAT_ITERS=$LAT_ITERS BW_ITERS=$BW_ITERS MTU=$MTU, load $load -->"
bench_machine
echo
echo "| measure | usnic | compared with | other | ratio |"
echo "|---|---|---|---|---|"
row "DGRAM 8 B latency (us)" dgram udp 7 -S 8 -I "$LAT_ITERS"
row "DGRAM 1 KiB bandwidth (MB/s)" dgram udp 6 -S 1024 -I "$LAT_ITERS"
row "RDM 8 B latency (us)" rdm "udp;ofi_rxd" 7 -S 8 -I "$LAT_ITERS"
row "RDM 1 MiB bandwidth (MB/s)" rdm "udp;ofi_rxd" 6 -S 1048576 -I "$BW_ITERS"
row "MSG 8 B latency (us)" msg tcp 7 -S 8 -I "$LAT_ITERS"
row "MSG 1 MiB bandwidth (MB/s)" msg tcp 6 -S 1048576 -I "$BW_ITERS"

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Incast over cxi's UDP transport: N senders stream SIZE-byte tagged messages (1 MiB by
# default) to one receiving endpoint in another network namespace, every byte checked
# (tests/integration/incast.c). Measured for N = 1 and each of SENDERS (default 8 16 32):
#
#   goodput      the receiver's bytes over the time from the start signal to the last one
#   vs 1         goodput against one sender alone, in the same run
#   share        each sender's bytes over the time its last message took, min and max
#   resent       retransmitted bytes on the wire, in % of the goodput: the senders' wire
#                bytes per payload byte against the same figure of the one-sender run,
#                which lost nothing (its receive socket dropped nothing)
#   drops        datagrams the receiver's socket dropped for want of buffer (RcvbufErrors)
#
# Two layouts, each its own table:
#   endpoints    one sender process holding N endpoints, on CPU 1; the receiver on CPU 0.
#                The senders together send as fast as one CPU allows, like one sender.
#   processes    N sender processes of one endpoint each, left to the scheduler: on a
#                small machine the receiver then shares its CPU with the senders and
#                falls behind, the way a slow receiver does; its socket overflows.
#
#   bench/incast.sh            (root: it makes network namespaces)
#
# MTU (default 9000), SIZE, MSGS (messages per run, split between the senders, default
# 256 MiB worth), REPEAT (runs per point, median, default 3), LAYOUTS (default
# "endpoints processes"), INCAST_WINDOW (sends in flight per sender, default 1).
# BUILD=<dir>: plugins of that build, as bench/run.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_plugins
MTU=${MTU:-9000}
SIZE=${SIZE:-1048576}
MSGS=${MSGS:-$((268435456 / SIZE))}
REPEAT=${REPEAT:-3}
SENDERS=${SENDERS:-8 16 32}
LAYOUTS=${LAYOUTS:-endpoints processes}
port=47400

. tests/integration/netns.sh
netns_require_root
netns_up "$MTU" >&2
tmp=$(mktemp -d)
netns_atexit "rm -rf '$tmp'"
cc -O2 -std=gnu11 -Wall -Wextra -o "$tmp/incast" tests/integration/incast.c \
    $(pkg-config --cflags --libs libfabric)

rcvbuf_errors() { ip netns exec "$NS_A" awk '$1 == "Udp:" && $2 ~ /^[0-9]/ {print $6}' /proc/net/snmp; }
tx_bytes() { ip netns exec "$NS_B" cat "/sys/class/net/$NS_IF/statistics/tx_bytes"; }

# One run: $1 layout, $2 senders. Prints "goodput share_min share_max wire_per_byte drops".
run() {
    local layout=$1 n=$2 msgs=$((MSGS / $2)) drops0 tx0 line pids=() p rc=0
    [ "$msgs" -ge 1 ] || msgs=1
    port=$((port + 1))
    drops0=$(rcvbuf_errors); tx0=$(tx_bytes)
    local recv=(in_a timeout 300 "$tmp/incast" recv "$port" "$n" "$msgs" "$SIZE")
    local send=(in_b timeout 300 "$tmp/incast" send "$IP_A" "$port")
    if [ "$layout" = endpoints ]; then
        "${recv[@]}" >"$tmp/out" &
        p=$!
        "${send[@]}" "$n" "$msgs" "$SIZE" || rc=1
    else
        "${recv[@]}" >"$tmp/out" &
        p=$!
        for ((i = 0; i < n; i++)); do "${send[@]}" 1 "$msgs" "$SIZE" & pids+=($!); done
        for q in "${pids[@]}"; do wait "$q" || rc=1; done
    fi
    wait "$p" || rc=1
    [ $rc -eq 0 ] || { echo "incast: a run of $n senders ($layout) failed" >&2; return 1; }
    line=$(cat "$tmp/out")
    local bytes=$((n * msgs * SIZE))
    echo "$line" | awk -v tx=$(($(tx_bytes) - tx0)) -v b=$bytes -v d=$(($(rcvbuf_errors) - drops0)) '
        { for (i = 1; i < NF; i++) { if ($i == "goodput") g = $(i + 1); if ($i == "min/median/max") s = $(i + 1) } }
        END { split(s, v, "/"); printf "%s %s %s %.5f %d\n", g, v[1], v[3], tx / b, d }'
}

median_of() { sort -g | awk '{a[NR]=$0} END {print a[int((NR+1)/2)]}'; }

table() {
    local layout=$1 base_g base_w
    if [ "$layout" = endpoints ]; then
        in_a() { ip netns exec "$NS_A" env FI_CXI_SOFT_NICS="$IP_A" taskset -c 0 "$@"; }
        in_b() { ip netns exec "$NS_B" env FI_CXI_SOFT_NICS="$IP_B" taskset -c 1 "$@"; }
    else
        in_a() { ip netns exec "$NS_A" env FI_CXI_SOFT_NICS="$IP_A" "$@"; }
        in_b() { ip netns exec "$NS_B" env FI_CXI_SOFT_NICS="$IP_B" "$@"; }
    fi
    echo
    echo "Layout: $layout. $MSGS messages of $SIZE B per run, split between the senders; median of $REPEAT runs."
    echo
    echo "| senders | goodput MB/s | vs 1 | share min..max MB/s | resent | socket drops |"
    echo "|---|---|---|---|---|---|"
    for n in 1 $SENDERS; do
        : >"$tmp/runs"
        for ((r = 0; r < REPEAT; r++)); do run "$layout" "$n" >>"$tmp/runs"; done
        # The median run by goodput, whole.
        local row
        row=$(sort -g "$tmp/runs" | awk '{a[NR]=$0} END {print a[int((NR+1)/2)]}')
        read -r g smin smax w d <<<"$row"
        if [ "$n" = 1 ]; then base_g=$g; base_w=$w; fi
        awk -v n=$n -v g=$g -v bg=$base_g -v smin=$smin -v smax=$smax -v w=$w -v bw=$base_w -v d=$d \
            'BEGIN { r = (w / bw - 1) * 100; if (r < 0) r = 0
                     printf "| %d | %.0f | %.2fx | %.1f..%.1f | %.2f %% | %d |\n", n, g, g / bg, smin, smax, r, d }'
    done
}

echo "cxi incast between two namespaces, MTU $MTU, INCAST_WINDOW=${INCAST_WINDOW:-1}"
bench_machine
for layout in $LAYOUTS; do table "$layout"; done

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# cxi vs libfabric's tcp;ofi_rxm and udp;ofi_rxd between two hosts, and the plain-UDP
# floor under all of them, in the same run.
#
#   bench/cross_host.sh [--quick]        (root: it makes network namespaces)
#
# The two "hosts" are network namespaces joined by a veth (tests/integration/netns.sh),
# MTU 9000 unless MTU= says otherwise; servers run in A, clients in B. Measured:
# fi_pingpong (Debian's libfabric-bin) at 8 bytes (latency) and 1 MiB (bandwidth) for
# each provider, bench/udp_floor (plain UDP sockets ping-pong, 8 bytes) as the floor,
# and fabtests' fi_rdm_tagged_pingpong / fi_rdm_tagged_bw when installed (FABTESTS_BIN,
# default /opt/fabtests/bin). Each point is the median of REPEAT runs (default 3), the
# contenders taking turns run by run after one warm-up run each. A provider that fails
# its warm-up twice (or times out, RUN_TIMEOUT s a run) shows "n/a" in that row and is
# not run again there. Prints a markdown table for docs/PERFORMANCE.md.
#
# Every process here busy-polls, and the veth's packets are processed in softirqs on
# the same CPUs: on a small machine anything else running (a build) turns microseconds
# into milliseconds. The script says so when the load average is not near zero.
#
# FLOOR_CALLS=mmsg: the floor with the system calls softnic's UDP transport makes
# (recvmmsg of one datagram, sendmsg; udp_floor -m) instead of recvfrom and sendto.
#
# BUILD=<dir>: use the plugins of that build (<dir>/lib) as they are; by default the
# checkout is built incrementally into ./build first, as bench/run.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_plugins
REPEAT=${REPEAT:-3}
LAT_ITERS=${LAT_ITERS:-10000}
BW_ITERS=${BW_ITERS:-500}
RUN_TIMEOUT=${RUN_TIMEOUT:-30}
MTU=${MTU:-9000}
FLOOR_ARGS=()
[ "${FLOOR_CALLS:-}" = mmsg ] && FLOOR_ARGS=(-m)
if [ "${1:-}" = "--quick" ]; then REPEAT=1; LAT_ITERS=1000; BW_ITERS=50; fi
FABTESTS_BIN=${FABTESTS_BIN:-/opt/fabtests/bin}
PROVIDERS=("cxi" "tcp;ofi_rxm" "udp;ofi_rxd")
port=48200

. tests/integration/netns.sh
netns_require_root
netns_up "$MTU" >&2
tmp=$(mktemp -d)
netns_atexit "rm -rf '$tmp'"
cc -O2 -std=gnu11 -Wall -Wextra -o "$tmp/udp_floor" bench/udp_floor.c

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# Column $1 of the last line on stdin, when it is a number; nothing otherwise.
column() { tail -1 | awk -v c="$1" '$c ~ /^[0-9]+(\.[0-9]+)?$/ {print $c}'; }

# One client/server run of "$@" with provider $1 (server in A, client in B); prints the
# client's last line. fi_pingpong pairs up through its TCP port (-B/-P). fabtests
# binaries (FT=1): cxi through their out-of-band exchange (-E, each side with its own
# service, -B 5 / -B 6, as in bench/run.sh: cxi takes no IPv4 address of a remote host
# as a node); the others the classic way, the server bound to IP_A (-s) and the client
# given it (udp;ofi_rxd fails fi_av_insert with -E in fabtests 1.17, even on one host).
pair() {
    local prov=$1; shift
    port=$((port + 1))
    local server_args=(-B "$port") client_args=(-P "$port")
    if [ "${FT:-0}" = 1 ]; then
        if [ "$prov" = cxi ]; then
            server_args=(-E -B 5); client_args=(-E -B 6)
        else
            server_args=(-s "$IP_A"); client_args=()
        fi
    fi
    in_a timeout "$RUN_TIMEOUT" "$@" -p "$prov" "${server_args[@]}" >/dev/null 2>&1 &
    local server=$! tries=0
    if [ "${FT:-0}" = 1 ]; then
        sleep 0.3
    else
        until ip netns exec "$NS_A" ss -ltn 2>/dev/null | grep -q ":$port " || [ $tries -ge 30 ]; do
            sleep 0.1; tries=$((tries + 1))
        done
    fi
    local line
    line=$(in_b timeout "$RUN_TIMEOUT" "$@" -p "$prov" "${client_args[@]}" "$IP_A" 2>/dev/null |
        tail -1) || true
    kill "$server" 2>/dev/null || true  # a server whose client failed would wait on
    wait "$server" 2>/dev/null || true
    echo "$line"
}

# The plain-UDP floor: one udp_floor run at $1 bytes; prints its result line.
floor_run() {
    port=$((port + 1))
    in_a timeout "$RUN_TIMEOUT" "$tmp/udp_floor" -s -p "$port" "${FLOOR_ARGS[@]}" >/dev/null 2>&1 &
    local server=$! line
    line=$(in_b timeout "$RUN_TIMEOUT" "$tmp/udp_floor" -p "$port" -S "$1" -I "$LAT_ITERS" "${FLOOR_ARGS[@]}" \
        "$IP_A" 2>/dev/null | tail -1) || true
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    echo "$line"
}

ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (a == "n/a" || b == "n/a" || a == "" || b == "" || b + 0 <= 0) print "n/a";
        else printf "%.2f", a / b }'
}

# One table row: $1 name, $2 result column, $3 "lat" or "bw", $4 floor size in bytes
# or "-" (no floor), then the benchmark command. Every contender runs once to warm up,
# then REPEAT rounds in which each runs once, in turn.
row() {
    local name=$1 col=$2 kind=$3 floor=$4; shift 4
    local -a live=() results=()
    local i v line floor_avg=() floor_med=()
    for i in "${!PROVIDERS[@]}"; do
        results[i]=""
        live[i]=0
        for _ in 1 2; do  # a second chance: udp;ofi_rxd stalls now and then
            if [ -n "$(pair "${PROVIDERS[i]}" "$@" | column "$col")" ]; then
                live[i]=1
                break
            fi
            echo "warning: ${PROVIDERS[i]} failed a warm-up run of: $*" >&2
        done
    done
    [ "$floor" = - ] || floor_run "$floor" >/dev/null
    for _ in $(seq "$REPEAT"); do
        for i in "${!PROVIDERS[@]}"; do
            [ "${live[i]}" = 1 ] || continue
            v=$(pair "${PROVIDERS[i]}" "$@" | column "$col")
            if [ -n "$v" ]; then
                results[i]+="$v "
            else
                echo "warning: ${PROVIDERS[i]} failed a run of: $*" >&2
            fi
        done
        if [ "$floor" != - ]; then
            line=$(floor_run "$floor")
            v=$(column 4 <<<"$line")  # the average, as fi_pingpong reports
            if [ -n "$v" ]; then
                floor_avg+=("$v")
                floor_med+=("$(column 3 <<<"$line")")
            else
                echo "warning: udp_floor failed a run" >&2
            fi
        fi
    done
    local -a med=()
    for i in "${!PROVIDERS[@]}"; do
        if [ -n "${results[i]}" ]; then
            med[i]=$(tr ' ' '\n' <<<"${results[i]}" | grep . | median)
        else
            med[i]=n/a
        fi
    done
    local fl=- fl_cell=-
    if [ "$floor" != - ]; then
        fl=n/a fl_cell=n/a
        if [ ${#floor_avg[@]} -gt 0 ]; then
            fl=$(printf '%s\n' "${floor_avg[@]}" | median)
            fl_cell="$fl (median $(printf '%s\n' "${floor_med[@]}" | median))"
        fi
    fi
    local vs_tcp vs_floor=- better
    vs_tcp=$(ratio "${med[0]}" "${med[1]}")
    [ "$fl" = - ] || vs_floor=$(ratio "${med[0]}" "$fl")
    if [ "$kind" = lat ]; then better="lower is better"; else better="higher is better"; fi
    printf '| %s | %s | %s | %s | %s | %s (%s) | %s |\n' "$name" "${med[0]}" "${med[1]}" \
        "${med[2]}" "$fl_cell" "$vs_tcp" "$better" "$vs_floor"
}

load=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$load" 'BEGIN { exit !(l > 0.5) }'; then
    echo "warning: load average $load: other work is running, these numbers are noise" >&2
fi
echo "Two network namespaces over a veth, mtu $MTU; median of $REPEAT runs;" \
    "$LAT_ITERS iterations for latency, $BW_ITERS for bandwidth; $(nproc) CPUs," \
    "load average $(cut -d' ' -f1-3 /proc/loadavg) at the start."
echo "UDP floor: bench/udp_floor, plain UDP sockets, busy-polling" \
    "($([ ${#FLOOR_ARGS[@]} -gt 0 ] && echo "recvmmsg and sendmsg" || echo "recvfrom and sendto"));" \
    "average one-way latency as fi_pingpong's usec/xfer, the median of its round trips in parentheses."
echo
bench_machine
echo
echo "| measurement | cxi | tcp;ofi_rxm | udp;ofi_rxd | UDP floor | cxi/tcp | cxi/floor |"
echo "|---|---|---|---|---|---|---|"
row "fi_pingpong 8 B latency (usec/xfer)" 7 lat 8 \
    fi_pingpong -e rdm -S 8 -I "$LAT_ITERS"
row "fi_pingpong 1 MiB bandwidth (MB/s)" 6 bw - \
    fi_pingpong -e rdm -S 1048576 -I "$BW_ITERS"
if [ -x "$FABTESTS_BIN/fi_rdm_tagged_pingpong" ]; then
    # fabtests print: bytes iters total time MB/sec usec/xfer Mxfers/sec
    FT=1 row "fi_rdm_tagged_pingpong 8 B latency (usec/xfer)" 6 lat 8 \
        "$FABTESTS_BIN/fi_rdm_tagged_pingpong" -S 8 -I "$LAT_ITERS"
    FT=1 row "fi_rdm_tagged_bw 1 MiB bandwidth (MB/s)" 5 bw - \
        "$FABTESTS_BIN/fi_rdm_tagged_bw" -S 1048576 -I "$BW_ITERS"
fi

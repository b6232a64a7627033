#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# cxi vs libfabric's own shm provider, in the same run, on this host.
#
#   bench/run.sh [--quick]
#
# Runs fi_pingpong (Debian's libfabric-bin) for each provider at 8 bytes (latency) and
# 1 MiB (bandwidth), and fabtests' fi_rdm_tagged_pingpong / fi_rdm_tagged_bw when they
# are installed (FABTESTS_BIN, default /opt/fabtests/bin): 8-byte latency, 1 MiB
# bandwidth and the 8-byte message rate with 64 sends in flight. Each point is the median of
# REPEAT runs, the providers taking turns. Prints a markdown table with cxi/shm ratios (latency: lower is better,
# bandwidth: higher is better). With fabtests installed, the one-sided rows come from
# fi_rma_bw (write and read, 64 KiB and 1 MiB) and the atomic rate from fi_rdm_atomic
# (FI_SUM on uint64). SECTIONS=msg, rma or amo (comma-separated) runs only those rows
# (default: all). The msg rows include the 8-byte ping-pong in line floors one way
# (bench/floor_ratio.c), measured beside the line itself.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
scripts/build.sh >/dev/null  # incremental: measure what is checked out
export FI_PROVIDER_PATH=$PWD/build/lib
REPEAT=${REPEAT:-5}
LAT_ITERS=${LAT_ITERS:-20000}
BW_ITERS=${BW_ITERS:-2000}
RMA_ITERS=${RMA_ITERS:-1000}
AMO_ITERS=${AMO_ITERS:-100000}
SECTIONS=${SECTIONS:-msg,rma,amo}
if [ "${1:-}" = "--quick" ]; then
    REPEAT=1 LAT_ITERS=2000 BW_ITERS=200 RMA_ITERS=100 AMO_ITERS=2000
fi
FABTESTS_BIN=${FABTESTS_BIN:-/opt/fabtests/bin}
port=48100

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# One client/server pair; prints the client's last result line. fi_pingpong pairs up
# through its own TCP port (-B/-P); fabtests binaries (FT=1) through their
# out-of-band exchange (-E), each side on its own PID/service (-B 5 / -B 6).
pair() {
    local prov=$1; shift
    port=$((port + 1))
    local server_args=(-B "$port") client_args=(-P "$port")
    if [ "${FT:-0}" = 1 ]; then server_args=(-E -B 5); client_args=(-E -B 6); fi
    "$@" -p "$prov" "${server_args[@]}" >/dev/null 2>&1 &
    local server=$!
    sleep 0.3
    local line
    line=$("$@" -p "$prov" "${client_args[@]}" 127.0.0.1 2>/dev/null | tail -1) || true
    wait $server 2>/dev/null || true
    echo "$line"
}

# One table row. The providers take turns run by run (after one warm-up run each), so
# that a noisy moment of this shared machine does not land on one provider only.
row() {
    local name=$1 col=$2 better=$3; shift 3
    local cxi_runs=() shm_runs=()
    pair cxi "$@" >/dev/null
    pair shm "$@" >/dev/null
    for _ in $(seq "$REPEAT"); do
        cxi_runs+=("$(pair cxi "$@" | awk -v c="$col" '{print $c}')")
        shm_runs+=("$(pair shm "$@" | awk -v c="$col" '{print $c}')")
    done
    local c s ratio
    c=$(printf '%s\n' "${cxi_runs[@]}" | median)
    s=$(printf '%s\n' "${shm_runs[@]}" | median)
    ratio=$(awk -v c="$c" -v s="$s" 'BEGIN { if (s > 0) printf "%.2f", c / s; else print "n/a" }')
    printf '| %s | %s | %s | %s (%s) |\n' "$name" "$c" "$s" "$ratio" "$better"
}

# The 8-byte fi_send ping-pong in line floors one way (bench/floor_ratio.c): its two
# processes take turns with bare line bounces, block by block, so that the ratio holds
# whichever mode this VM's vCPUs are in when it runs.
floors_row() {
    local d cxi_runs=() shm_runs=() c s
    d=$(mktemp -d)
    cc -O2 -std=gnu11 -o "$d/floor_ratio" bench/floor_ratio.c -lfabric
    local blocks=60 iters=2000
    [ "${1:-}" = --quick ] && blocks=8 iters=500
    for _ in $(seq "$REPEAT"); do
        cxi_runs+=("$("$d/floor_ratio" cxi $blocks $iters | awk '/in line floors/ {print $7}')")
        shm_runs+=("$("$d/floor_ratio" shm $blocks $iters | awk '/in line floors/ {print $7}')")
    done
    rm -rf "$d"
    c=$(printf '%s\n' "${cxi_runs[@]}" | median)
    s=$(printf '%s\n' "${shm_runs[@]}" | median)
    printf '| 8 B send/recv ping-pong, one way in line floors (bench/floor_ratio.c) | %s | %s | %s (lower is better) |\n' \
        "$c" "$s" "$(awk -v c="$c" -v s="$s" 'BEGIN { printf "%.2f", c / s }')"
}

bench_machine
echo
echo "| measurement | cxi | shm | cxi/shm |"
echo "|---|---|---|---|"
if [[ $SECTIONS == *msg* ]]; then
row "fi_pingpong 8 B latency (usec/xfer)" 7 "lower is better" \
    fi_pingpong -e rdm -S 8 -I "$LAT_ITERS"
row "fi_pingpong 1 MiB bandwidth (MB/s)" 6 "higher is better" \
    fi_pingpong -e rdm -S 1048576 -I "$BW_ITERS"
floors_row "${1:-}"
fi
if [[ $SECTIONS == *rma* ]] && [ -x "$FABTESTS_BIN/fi_rma_bw" ]; then
    for op in write read; do
        for size in 65536 1048576; do
            FT=1 row "fi_rma_bw $op $((size / 1024)) KiB (MB/s)" 5 "higher is better" \
                "$FABTESTS_BIN/fi_rma_bw" -e rdm -o "$op" -S "$size" -I "$RMA_ITERS"
        done
    done
fi
if [[ $SECTIONS == *amo* ]] && [ -x "$FABTESTS_BIN/fi_rdm_atomic" ]; then
    # name bytes iters total time MB/sec usec/xfer Mxfers/sec
    FT=1 row "fi_rdm_atomic uint64 sum rate (Mops/s)" 8 "higher is better" \
        "$FABTESTS_BIN/fi_rdm_atomic" -o sum -z uint64 -I "$AMO_ITERS"
fi
if [[ $SECTIONS == *msg* ]] && [ -x "$FABTESTS_BIN/fi_rdm_tagged_pingpong" ]; then
    # fabtests print: bytes iters total time MB/sec usec/xfer Mxfers/sec
    FT=1 row "fi_rdm_tagged_pingpong 8 B latency (usec/xfer)" 6 "lower is better" \
        "$FABTESTS_BIN/fi_rdm_tagged_pingpong" -S 8 -I "$LAT_ITERS"
    FT=1 row "fi_rdm_tagged_bw 1 MiB bandwidth (MB/s)" 5 "higher is better" \
        "$FABTESTS_BIN/fi_rdm_tagged_bw" -S 1048576 -I "$BW_ITERS"
    FT=1 row "fi_rdm_tagged_bw 8 B message rate, window 64 (M/s)" 7 "higher is better" \
        "$FABTESTS_BIN/fi_rdm_tagged_bw" -S 8 -W 64 -I $((LAT_ITERS * 10))
fi

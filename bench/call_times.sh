#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Where a one-way 8-byte message's time goes, in nanoseconds per libfabric call: the
# plugins built with -DSOFTNIC_CALL_CLOCK=ON (common/call_clock.hpp) into
# ./build-callclock time each data-path call with the CPU's time-stamp counter, so the
# cache misses a call waits for are in its time (bench/instructions.sh counts the work,
# which does not move with the CPU; this shows what it costs on this one).
#
#   bench/call_times.sh [--quick]
#
# Runs Open MPI's 8-byte ping-pong (bench/mpi_pingpong.c, pml cm + mtl ofi over cxi)
# and fi_pingpong 8 B over cxi, REPEAT times each (default 3), and prints one table per
# client: ns per call and calls per message received, both sides together. Beside it, the
# one-way time with the clock, without it (the checkout's ./build) and, for Open MPI,
# over ob1 + vader, from the same runs. Calls the ping-pong does not make are left out.
#
# To weigh a change in time where runs move by more than it does: guard it with
# `call_clock::ab_on()` and run this script. Each process then runs the change in every
# other block of 4,096 messages, and its time per message on and off comes from the same
# run (the "A/B" line; the ratio of each process, and their median).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
REPEAT=${REPEAT:-3}
ITERS=${ITERS:-200000}
if [ "${1:-}" = "--quick" ]; then REPEAT=1 ITERS=20000; fi
command -v mpicc >/dev/null || { echo "needs Open MPI (mpicc, mpirun)" >&2; exit 2; }
cmake -S . -B build-callclock -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSOFTNIC_CALL_CLOCK=ON \
    >/dev/null
make -C build-callclock -j2 cxi-fi >/dev/null
BUILD= bench_plugins  # ./build, for the time without the clock
plain=$FI_PROVIDER_PATH clocked=$PWD/build-callclock/lib
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicc -O2 -o "$work/mpi_pingpong" bench/mpi_pingpong.c

common=(--allow-run-as-root --oversubscribe -np 2 --bind-to core)
cxi=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include cxi -x FI_PROVIDER_PATH)
mpi() {  # PLUGIN_DIR|vader: the one-way usec; the call lines go to $work/calls
    if [ "$1" = vader ]; then
        mpirun "${common[@]}" --mca pml ob1 --mca btl self,vader "$work/mpi_pingpong" \
            "$ITERS" 8 2>/dev/null | awk '{print $2}'
    else
        FI_PROVIDER_PATH=$1 mpirun "${common[@]}" "${cxi[@]}" "$work/mpi_pingpong" "$ITERS" 8 \
            2>>"$work/calls" | awk '{print $2}'
    fi
}
port=48300
fipp() {  # PLUGIN_DIR: fi_pingpong's usec per transfer; call lines to $work/calls
    port=$((port + 1))
    FI_PROVIDER_PATH=$1 fi_pingpong -p cxi -e rdm -S 8 -I "$ITERS" -B "$port" \
        >/dev/null 2>>"$work/calls" &
    local server=$!
    sleep 0.3
    FI_PROVIDER_PATH=$1 fi_pingpong -p cxi -e rdm -S 8 -I "$ITERS" -P "$port" 127.0.0.1 \
        2>>"$work/calls" | tail -1 | awk '{print $7}'
    wait $server 2>/dev/null || true
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# The table of one client's runs: every process of every run together (both sides of a
# ping-pong make the same calls), ns per call weighted by calls.
table() {
    local title=$1 one_way=$2
    echo "$title, $ITERS round trips, median of $REPEAT runs: $one_way"
    echo
    echo "| call | ns per call | calls per message received |"
    echo "|---|---|---|"
    awk '
        / a\/b / {  # call_clock PID: a/b off X ns, on Y ns a message (...): on/off R
            ab = ab " " $NF; next
        }
        /^call_clock/ {  # call_clock PID: NAME... CALLS calls NS ns each
            name = $3; for (i = 4; i <= NF - 5; i++) name = name " " $i
            if (!(name in seen)) { seen[name] = 1; names[++k] = name }
            calls[name] += $(NF - 4); time[name] += $(NF - 4) * $(NF - 2)
            if (name == "read, found") found += $(NF - 4)
        }
        END {
            for (i = 1; i <= k; i++) {
                nm = names[i]
                if (calls[nm] / found < 0.01) continue  # setting up, not the ping-pong
                printf "| %s | %.1f | %.2f |\n", nm, time[nm] / calls[nm], calls[nm] / found
            }
            if (ab != "") {  # a change under trial (call_clock::ab_on) in every other block
                m = split(ab, r, " ")
                for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (r[j] < r[i]) { t = r[i]; r[i] = r[j]; r[j] = t }
                printf "\nA/B, time a message on/off in the same runs (code under call_clock::ab_on()): median %s of%s\n", r[int((m + 1) / 2)], ab
            }
        }' "$work/calls"
    echo
}

bench_machine
echo
: >"$work/calls"
with=() without=() vader=()
for _ in $(seq "$REPEAT"); do
    with+=("$(mpi "$clocked")")
    without+=("$(mpi "$plain")")
    vader+=("$(mpi vader)")
done
table "Open MPI $(mpirun --version 2>/dev/null | head -1 | awk '{print $NF}') 8 B (cm + mtl ofi over cxi)" \
    "one way $(printf '%s\n' "${with[@]}" | median) us with the clock, $(printf '%s\n' "${without[@]}" | median) without, ob1 + vader $(printf '%s\n' "${vader[@]}" | median)"
: >"$work/calls"
with=() without=()
for _ in $(seq "$REPEAT"); do
    with+=("$(fipp "$clocked")")
    without+=("$(fipp "$plain")")
done
table "fi_pingpong 8 B over cxi" \
    "$(printf '%s\n' "${with[@]}" | median) us per transfer with the clock, $(printf '%s\n' "${without[@]}" | median) without"

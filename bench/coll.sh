#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# 8-byte allreduce (INT64 SUM): fi_allreduce over cxi vs Open MPI's MPI_Allreduce (pml
# ob1, btl vader, coll tuned) in the same run, by tests/integration/coll_mpi.c, for 2, 4
# and 8 processes on this host. Each point is the median of REPEAT runs. With more ranks
# than CPUs both sides yield the CPU while idle (Open MPI does so when oversubscribed).
#
#   bench/coll.sh [--quick]
#
# Host rows also show the scheduling floor (bench/sched_floor.c): the same number of
# processes, yielding the same way, that only raise a shared counter and wait for the
# others' each round, with no transport at all.
#
# NETNS=1 (root): also 2 processes in two network namespaces over a veth, and 4 in four
# namespaces on a bridge, one a namespace (cxi over UDP; Open MPI with pml ob1, btl tcp),
# through tests/integration/test_netns_mpi.sh and test_netns_coll_hosts.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_plugins
exe=${BUILD:-$PWD/build}/tests/integration/coll_mpi
[ -x "$exe" ] || { echo "no $exe: build with Open MPI's headers installed" >&2; exit 1; }
REPEAT=${REPEAT:-5}
ITERS=${ITERS:-20000}
NETNS_ITERS=${NETNS_ITERS:-2000}  # Open MPI over btl tcp takes milliseconds a call there
NPS=${NPS:-2 4 8}
if [ "${1:-}" = "--quick" ]; then REPEAT=1 ITERS=2000 NETNS_ITERS=500; fi
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
floor_exe=$(mktemp -d)/sched_floor
trap 'rm -rf "$(dirname "$floor_exe")"' EXIT
cc -O2 -std=gnu11 -Wall -Wextra -o "$floor_exe" bench/sched_floor.c
# The scheduling floor for NP processes: the median of REPEAT runs.
floor() {
    for _ in $(seq "$REPEAT"); do "$floor_exe" -n "$1" -i "$ITERS" | awk '{print $2}'; done | median
}

# One row: LABEL, the floor's cell, then a command printing coll_mpi's "members fi_usec
# mpi_usec" line; the medians of REPEAT runs and their ratio.
row() {
    local label=$1 fl=$2 a b r
    shift 2
    f=() m=()
    for _ in $(seq "$REPEAT"); do
        read -r _ a b < <("$@" 2>/dev/null | grep -E '^[0-9]+ [0-9.]+ [0-9.]+$' | tail -1) ||
            { a=n/a b=n/a; }
        f+=("$a") m+=("$b")
    done
    a=$(printf '%s\n' "${f[@]}" | median)
    b=$(printf '%s\n' "${m[@]}" | median)
    r=$(awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
    printf '| %s | %s | %s | %s | %s |\n' "$label" "$a" "$b" "$r" "$fl"
}

bench_machine
echo
echo "| processes | fi_allreduce over cxi (usec) | MPI_Allreduce, ob1+vader (usec) | cxi/MPI (lower is better) | scheduling floor (usec) |"
echo "|---|---|---|---|---|"
for np in $NPS; do
    row "$np" "$(floor "$np")" timeout 300 mpirun --allow-run-as-root --oversubscribe -np "$np" \
        --mca pml ob1 --mca btl self,vader -x FI_PROVIDER_PATH "$exe" bench "$ITERS"
done

if [ "${NETNS:-0}" = 1 ]; then
    export COLL_MPI="$exe" COLL_ARGS="bench $NETNS_ITERS"
    row "2, two namespaces (MPI: btl tcp)" - env NETNS_MPI=coll tests/integration/test_netns_mpi.sh
    row "4, four namespaces (MPI: btl tcp)" - tests/integration/test_netns_coll_hosts.sh
fi

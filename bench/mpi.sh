#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Open MPI over cxi (pml cm, mtl ofi) vs Open MPI's own shared memory (pml ob1, btl
# vader), in the same run, on this host: the ping-pong of bench/mpi_pingpong.c (IMB
# PingPong's measure: half the round trip) at 8 B, 4 KiB, 64 KiB and 1 MiB. Each point
# is the median of REPEAT runs, the two taking turns. Prints a markdown table, after the
# time a cache line takes between the two CPUs (bench/line_floor.c), the floor under both.
#
#   bench/mpi.sh [--quick]
#
# BUILD=<dir>: measure the plugins of that build (<dir>/lib) as they are.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_plugins
REPEAT=${REPEAT:-5}
ITERS=${ITERS:-20000}
SIZES=${SIZES:-8 4096 65536 1048576}
if [ "${1:-}" = "--quick" ]; then REPEAT=1 ITERS=2000; fi
exe=$(mktemp -d)/mpi_pingpong
trap 'rm -rf "$(dirname "$exe")"' EXIT
mpicc -O2 -o "$exe" bench/mpi_pingpong.c

common=(--allow-run-as-root --oversubscribe -np 2 --bind-to core)
cxi=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include cxi -x FI_PROVIDER_PATH)
vader=(--mca pml ob1 --mca btl self,vader)
run() {  # prints "size usec MB/s" lines
    timeout 300 mpirun "${common[@]}" "$@" "$exe" "$ITERS" $SIZES 2>/dev/null
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A c v
run "${cxi[@]}" >/dev/null
run "${vader[@]}" >/dev/null
for _ in $(seq "$REPEAT"); do
    while read -r s us _; do c[$s]+="$us "; done < <(run "${cxi[@]}")
    while read -r s us _; do v[$s]+="$us "; done < <(run "${vader[@]}")
done
echo "Open MPI $(mpirun --version 2>/dev/null | head -1 | awk '{print $NF}'), 2 ranks on one host, median of $REPEAT runs."
echo
bench_machine
echo
echo "| size | cxi (cm, mtl ofi) usec | vader (ob1) usec | cxi/vader (lower is better) |"
echo "|---|---|---|---|"
for s in $SIZES; do
    a=$(tr ' ' '\n' <<<"${c[$s]:-}" | grep . | median || true)
    b=$(tr ' ' '\n' <<<"${v[$s]:-}" | grep . | median || true)
    r=$(awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
    printf '| %s | %s | %s | %s |\n' "$s" "${a:-n/a}" "${b:-n/a}" "$r"
done

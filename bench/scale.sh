#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# What a job of N ranks on one host costs over cxi (Open MPI: pml cm, mtl ofi) against
# Open MPI's own shared memory (pml ob1, btl vader) and against libfabric's tcp;ofi_rxm
# through the same mtl (TCP=0 leaves it out), in the same run, N = RANKS (default 8 16 32
# 64; oversubscribed on a small machine: this measures cost, not speed). Each job
# is bench/scale_mpi.c: MPI_Init, an all-to-all of 1 KiB per peer, an allreduce and a
# barrier, every result checked, MPI_Finalize. Per point, the median of REPEAT (default
# 3) jobs, the two taking turns:
#
#   job s        mpirun's wall time, start to exit: launch, init, the exchange, teardown
#   init s       the longest MPI_Init of any rank
#   finalize s   the longest MPI_Finalize of any rank
#   RSS MiB      peak resident memory per process by the end of the exchange (average)
#   fds          open descriptors per process then (the most of any rank)
#   shm MiB      /dev/shm in use then, all ranks together
#
# Below the table, what loading libfabric costs by itself: N processes of `fi_info -p cxi`
# started at once (wall time), and the system time of one. Every libfabric application
# pays it, whatever the provider; vader does not load libfabric.
#
#   bench/scale.sh
#
# BUILD=<dir>: plugins of that build, as bench/run.sh. FI_LIB=<dir>: the libfabric the
# ofi jobs load (LD_LIBRARY_PATH), to tell libfabric's own start-up from the provider's:
# Debian's initialises its built-in verbs provider in every process, whatever provider
# is asked for; a libfabric built without it does not.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_plugins
RANKS=${RANKS:-8 16 32 64}
REPEAT=${REPEAT:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpicc -O2 -o "$tmp/scale_mpi" bench/scale_mpi.c

common=(--allow-run-as-root --oversubscribe --bind-to none)
cxi=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include cxi -x FI_PROVIDER_PATH)
vader=(--mca pml ob1 --mca btl self,vader)
tcp=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "tcp;ofi_rxm" -x FI_PROVIDER_PATH)
TCP=${TCP:-1}
if [ -n "${FI_LIB:-}" ]; then
    export LD_LIBRARY_PATH=$FI_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    cxi+=(-x LD_LIBRARY_PATH)
    tcp+=(-x LD_LIBRARY_PATH)
fi
shm_used() { df -B1 --output=used /dev/shm | tail -1; }

# One job: $1 ranks, the rest mpirun's options. Prints "job init fin rss fds shm".
job() {
    local n=$1 base t0 t1 line
    shift
    rm -f "$tmp/fin"
    base=$(shm_used)
    t0=$EPOCHREALTIME
    line=$(SCALE_OUT=$tmp/fin SCALE_SHM_BASE=$base timeout 600 mpirun "${common[@]}" -np "$n" \
        -x SCALE_OUT -x SCALE_SHM_BASE "$@" "$tmp/scale_mpi" 2>"$tmp/err") ||
        { echo "scale: a job of $n ranks failed:" >&2; cat "$tmp/err" >&2; return 1; }
    t1=$EPOCHREALTIME
    echo "$line" | awk -v t="$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" \
        -v fin="$(sort -g "$tmp/fin" | tail -1)" \
        '{ for (i = 1; i < NF; i++) v[$i] = $(i + 1) }
         END { printf "%.3f %.3f %.3f %.1f %d %.1f\n", t, v["init_max"], fin,
               v["rss_avg"] / 1048576, v["fds_max"], v["shm"] / 1048576 }'
}

# The median job of a list of "job ..." lines, by wall time.
median_row() { sort -g | awk '{a[NR]=$0} END {print a[int((NR+1)/2)]}'; }

echo "Open MPI $(mpirun --version 2>/dev/null | head -1 | awk '{print $NF}'), N ranks on one host, median of $REPEAT jobs (by wall time)."
fi_version=$(fi_info --version 2>/dev/null | awk '/^libfabric:/ {print $2}')
echo "libfabric ${fi_version:-?} from ${FI_LIB:-the system library path}."
echo
bench_machine
echo
echo "| ranks | job s: cxi / vader / tcp | cxi/vader | init s: cxi / vader / tcp | finalize s: cxi / vader / tcp | RSS MiB/proc: cxi / vader / tcp | fds/proc: cxi / vader / tcp | shm MiB: cxi / vader / tcp |"
echo "|---|---|---|---|---|---|---|---|"
for n in $RANKS; do
    : >"$tmp/c"; : >"$tmp/v"; : >"$tmp/t"
    for ((r = 0; r < REPEAT; r++)); do
        job "$n" "${cxi[@]}" >>"$tmp/c"
        job "$n" "${vader[@]}" >>"$tmp/v"
        if [ "$TCP" = 1 ]; then job "$n" "${tcp[@]}" >>"$tmp/t"; else echo "- - - - - -" >>"$tmp/t"; fi
    done
    read -r cj ci cf cr cd cs <<<"$(median_row <"$tmp/c")"
    read -r vj vi vf vr vd vs <<<"$(median_row <"$tmp/v")"
    read -r tj ti tf tr td ts <<<"$(median_row <"$tmp/t")"
    printf '| %d | %s / %s / %s | %.2fx | %s / %s / %s | %s / %s / %s | %s / %s / %s | %s / %s / %s | %s / %s / %s |\n' \
        "$n" "$cj" "$vj" "$tj" "$(awk -v a="$cj" -v b="$vj" 'BEGIN {print a / b}')" \
        "$ci" "$vi" "$ti" "$cf" "$vf" "$tf" "$cr" "$vr" "$tr" "$cd" "$vd" "$td" "$cs" "$vs" "$ts"
done
echo
for n in $RANKS; do
    t0=$EPOCHREALTIME
    for ((i = 0; i < n; i++)); do fi_info -p cxi >/dev/null 2>&1 & done
    wait
    t1=$EPOCHREALTIME
    awk -v n="$n" -v a="$t0" -v b="$t1" 'BEGIN { printf "libfabric loaded by %d processes at once: %.2f s\n", n, b - a }'
done
sys=$( { /usr/bin/time -f %S fi_info -p cxi >/dev/null; } 2>&1 | tail -1)
echo "system time of one fi_info -p cxi: $sys s"

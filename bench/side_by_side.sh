#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Two builds of the plugins side by side: fi_pingpong over cxi (and, between network
# namespaces, usnic RDM), the builds taking turns run by run, within one host and (as
# root) between two network namespaces. For "no
# regression beyond noise" claims: build the previous commit elsewhere (git worktree)
# and compare.
#
#   bench/side_by_side.sh OLD_BUILD NEW_BUILD        (each a build dir with lib/)
#
# R=<runs> pairs (default 8) after one warm-up each; medians and every run printed.
# Within a host: 8 B, 64 KiB and 1 MiB, and Open MPI's 8-byte ping-pong over cxi where
# Open MPI is installed; between namespaces (root only): 8 B and 1 MiB, over cxi and over
# usnic RDM (usnic's device is the namespace's veth).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
OLD=${1:?old build dir}/lib NEW=${2:?new build dir}/lib
R=${R:-8}
port=$((47000 + $$ % 1000))
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# One fi_pingpong pair: PLUGINS SIZE ITERS COLUMN [server-prefix client-prefix server-ip];
# the provider is $P (cxi unless set).
one() {
    local dir=$1 size=$2 iters=$3 col=$4 srv=${5:-} cli=${6:-} ip=${7:-127.0.0.1} s
    port=$((port + 1))
    $srv env FI_PROVIDER_PATH="$dir" timeout 60 fi_pingpong -p "${P:-cxi}" -e rdm -S "$size" \
        -I "$iters" -B $port >/dev/null 2>&1 &
    s=$!
    sleep 0.3
    $cli env FI_PROVIDER_PATH="$dir" timeout 60 fi_pingpong -p "${P:-cxi}" -e rdm -S "$size" \
        -I "$iters" -P $port "$ip" 2>/dev/null | tail -1 | awk -v c="$col" '{print $c}'
    wait $s || true
}

# Open MPI's 8-byte ping-pong (bench/mpi_pingpong.c, pml cm + mtl ofi over cxi): PLUGINS.
one_mpi() {
    FI_PROVIDER_PATH="$1" timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 \
        --bind-to core --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include cxi \
        -x FI_PROVIDER_PATH "$mpi_exe" 50000 8 2>/dev/null | awk '{print $2}'
}

# A row: label size iters column [prefixes...]; column 7 is usec/xfer, 6 is MB/s. RUN:
# the runner (one, or one_mpi, which takes no more than the plugins).
row() {
    local label=$1 a=() b=() i run=${RUN:-one}
    shift
    $run "$OLD" "$@" >/dev/null
    $run "$NEW" "$@" >/dev/null
    for ((i = 0; i < R; i++)); do
        a+=("$($run "$OLD" "$@")")
        b+=("$($run "$NEW" "$@")")
    done
    printf '| %s | %s | %s | %s | %s |\n' "$label" "$(printf '%s\n' "${a[@]}" | median)" \
        "$(printf '%s\n' "${b[@]}" | median)" "${a[*]}" "${b[*]}"
}

bench_machine
echo
echo "| measurement | old (median) | new (median) | old runs | new runs |"
echo "|---|---|---|---|---|"
row "8 B usec/xfer, one host" 8 20000 7
row "64 KiB MB/s, one host" 65536 5000 6
row "1 MiB MB/s, one host" 1048576 2000 6
if command -v mpicc >/dev/null; then
    mpi_exe=$(mktemp -d)/mpi_pingpong
    mpicc -O2 -o "$mpi_exe" bench/mpi_pingpong.c
    RUN=one_mpi row "Open MPI 8 B usec one way, one host"
    rm -rf "$(dirname "$mpi_exe")"
fi
if [ "$(id -u)" = 0 ]; then
    . tests/integration/netns.sh
    netns_up 9000 >/dev/null
    row "8 B usec/xfer, two namespaces" 8 20000 7 in_a in_b "$IP_A"
    row "1 MiB MB/s, two namespaces" 1048576 500 6 in_a in_b "$IP_A"
    P=usnic row "usnic RDM 8 B usec/xfer, two namespaces" 8 20000 7 in_a in_b "$IP_A"
    P=usnic row "usnic RDM 1 MiB MB/s, two namespaces" 1048576 500 6 in_a in_b "$IP_A"
fi

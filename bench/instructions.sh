#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Instructions per 8-byte tagged message, counted by valgrind's callgrind: a measure
# that does not move with the CPU, beside the timings of the other scripts. cxi and
# libfabric's shm in the same run, and optionally an older build of the plugins.
#
#   bench/instructions.sh [OLD_BUILD]        (OLD_BUILD: a build dir with lib/)
#
# bench/msg_instructions.c runs two endpoints in one process (no waiting, no empty
# poll); each message is a send, the receiver's completion read, the sender's
# completion read and the receive's repost. Per message and phase: instructions (Ir),
# conditional branches (Bc), indirect calls and jumps (Bi: virtual dispatch and
# libfabric's ops tables) and locked instructions (Ge: atomics and lock prefixes).
# Each build at three threading levels: FI_THREAD_SAFE, FI_THREAD_DOMAIN (what Open MPI
# asks for without MPI_THREAD_MULTIPLE), where a provider may take no lock, and
# FI_THREAD_COMPLETION (Sandia OpenSHMEM's threads), where an endpoint may take none.
# Then the path between hosts: a round trip of 8-byte messages with cxi's two endpoints
# on two soft NICs (UDP over loopback), beside tcp;ofi_rxm, counting user space only.
# BUILD=<dir>: the plugins of that build; ITERS (default 10000) messages.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_plugins
ITERS=${ITERS:-10000}
OLD=${1:-}
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -std=gnu11 -Wall -Wextra -o "$work/msg_instructions" bench/msg_instructions.c -lfabric

# count LABEL PROVIDER PLUGIN_DIR THREADING [DOMAIN_B pingpong]: one table row per phase
# and a total.
count() {
    local label="$1, $4" prov=$2 dir=$3 threading=$4 out phases
    phases="msg_send msg_recv_completion msg_send_completion msg_repost"
    [ "${6:-}" = pingpong ] && phases="rt_ping rt_pong_recv rt_pong rt_ping_recv"
    out=$(mktemp -p "$work" cg.XXXX)
    FI_PROVIDER_PATH=$dir valgrind --tool=callgrind --collect-bus=yes --branch-sim=yes \
        --callgrind-out-file="$out" "$work/msg_instructions" "$prov" "$ITERS" "$threading" \
        "${@:5}" 2>/dev/null | sed "s/^/    /" >&2
    callgrind_annotate --threshold=100 --inclusive=yes "$out" 2>/dev/null |
        awk -v n="$ITERS" -v l="$label" -v phases="$phases" '
        BEGIN { np = split(phases, ph, " "); for (p = 1; p <= np; p++) want[ph[p]] = 1 }
        /Events recorded:/ { for (i = 3; i <= NF; i++) col[$i] = i - 2 }
        match($0, /(msg|rt)_[a-z_]+ \[/) && want[substr($0, RSTART, RLENGTH - 2)] {
            name = substr($0, RSTART, RLENGTH - 2)
            k = 0  # the counts, in the order recorded; "." is zero, "(x%)" skipped
            for (i = 1; i <= NF && k < length(col); i++) {
                f = $i; gsub(/,/, "", f)
                if (f ~ /[()%]/) continue
                if (f == ".") f = 0
                val[name, ++k] = f
            }
        }
        END {
            for (p = 1; p <= np; p++) {
                q = ph[p]; ir = val[q, col["Ir"]]; bc = val[q, col["Bc"]]
                bi = val[q, col["Bi"]]; ge = val[q, col["Ge"]]
                printf "| %s | %s | %.0f | %.0f | %.1f | %.1f |\n", l, q, ir / n, bc / n, bi / n, ge / n
                t1 += ir; t2 += bc; t3 += bi; t4 += ge
            }
            printf "| %s | **total** | **%.0f** | %.0f | %.1f | %.1f |\n", l, t1 / n, t2 / n, t3 / n, t4 / n
        }'
}

bench_machine
echo "Per 8-byte tagged message, $ITERS messages after 1000 of warm-up (bench/msg_instructions.c under callgrind)."
echo
echo "| build | phase | instructions | branches | indirect | locked |"
echo "|---|---|---|---|---|---|"
for threading in safe domain completion; do
    count cxi cxi "$FI_PROVIDER_PATH" $threading
    if [ -n "$OLD" ]; then count "cxi, $OLD" cxi "$OLD/lib" $threading; fi
    count shm shm "$FI_PROVIDER_PATH" $threading
done
echo
echo "Per 8-byte round trip between hosts (bench/msg_instructions.c pingpong: a ping, the"
echo "pong's receive, the pong, the ping's receive; cxi over UDP between soft NICs"
echo "127.0.0.1 and 127.0.0.2, offload helper off so that nothing else takes the lock;"
echo "tcp;ofi_rxm over loopback). User-space instructions only: the kernel's are not counted."
echo
echo "| build | phase | instructions | branches | indirect | locked |"
echo "|---|---|---|---|---|---|"
export FI_CXI_SOFT_NICS=127.0.0.1,127.0.0.2 FI_CXI_OFFLOAD=0
count "cxi over UDP" cxi "$FI_PROVIDER_PATH" safe cxi1 pingpong
if [ -n "$OLD" ]; then count "cxi over UDP, $OLD" cxi "$OLD/lib" safe cxi1 pingpong; fi
count "tcp;ofi_rxm" "tcp;ofi_rxm" "$FI_PROVIDER_PATH" safe - pingpong

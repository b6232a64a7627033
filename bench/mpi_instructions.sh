#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Instructions per 8-byte MPI round trip (bench/mpi_pingpong.c), counted by callgrind on
# rank 0 while rank 1 runs natively: Open MPI over cxi (pml cm, mtl ofi) against ob1 +
# vader, and optionally an older build of the plugins. Rank 0 runs the ping-pong twice
# over (N1 and N2 iterations); the difference over the extra iterations leaves start-up
# and teardown out. Per shared object, so that what is Open MPI's and what is ours shows.
# Rank 0 under valgrind is slow and its peer fast, so a receive seldom polls more than
# once; on a busy machine it polls more, and the counts move: run it on an idle one.
# A second table splits cxi's part by entry point (calls and instructions a round trip).
#
#   bench/mpi_instructions.sh [OLD_BUILD]        (OLD_BUILD: a build dir with lib/)
#
# BUILD=<dir>: the plugins of that build; N1, N2 (default 2000, 12000) iterations.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_plugins
OLD=${1:-}
N1=${N1:-2000} N2=${N2:-12000}
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicc -O2 -o "$work/mpi_pingpong" bench/mpi_pingpong.c

# softnic's entry points that rank 0 called (fi_tinjectdata, fi_trecv, fi_cq_read...):
# "name instructions calls" per line, from the callgrind output OUT (its callers tree).
# Annotated from /: in the source tree, callgrind_annotate names files relative to it and
# splits an entry point's cost by them.
entry_calls() {
    (cd / && callgrind_annotate --threshold=100 --tree=caller --inclusive=yes "$1" 2>/dev/null) | awk '
        / < / && match($0, /\([0-9,]+x\)/) {  # a caller of the function below: its calls
            c = substr($0, RSTART + 1, RLENGTH - 3); gsub(/,/, "", c); calls += c; next
        }
        / \* / {
            if ($0 ~ /libcxi-fi[.]so/ && match($0, /\(anonymous namespace\)::(t|op)_[a-z_]+</)) {
                n = $1; gsub(/,/, "", n)
                print substr($0, RSTART + 23, RLENGTH - 24), n, calls
            }
            calls = 0; next
        }
        /^ *$/ { calls = 0 }'
}

# Per object, the instructions of rank 0 over ITERS iterations (warm-up included).
by_object() {
    local plugins=$1 iters=$2 out=$work/cg.$2
    shift 2
    FI_PROVIDER_PATH=$plugins mpirun --allow-run-as-root --oversubscribe --bind-to core \
        -x FI_PROVIDER_PATH "$@" \
        -np 1 valgrind --tool=callgrind --callgrind-out-file="$out" "$work/mpi_pingpong" "$iters" 8 \
        : -np 1 "$work/mpi_pingpong" "$iters" 8 >"$work/mpirun.log" 2>&1 || { cat "$work/mpirun.log" >&2; return 1; }
    callgrind_annotate --threshold=100 "$out" 2>/dev/null | awk '
        /file:function/ { on = 1; next }
        /Auto-annotated/ { on = 0 }  # read to the end: an early exit would fail the pipe
        on && match($0, /^ *[0-9,]+/) {
            n = substr($0, RSTART, RLENGTH); gsub(/[ ,]/, "", n)
            obj = "(inlined)"
            if (match($0, /\[[^]]*\] *$/)) {
                obj = substr($0, RSTART + 1, RLENGTH - 2); sub(/ *$/, "", obj); sub(/\]$/, "", obj)
                sub(/.*\//, "", obj)
            } else if ($0 ~ /softnic/) obj = "libcxi-fi.so"
            sum[obj] += n
        }
        END { for (o in sum) print o, sum[o] }'
}

# cxi's entry points per round trip, from the last two by_object runs of the cxi path.
calls_table() {
    local d=$(( (N2 - N1) * 11 / 10 ))
    entry_calls "$work/cg.$N1" >"$work/c1"
    entry_calls "$work/cg.$N2" >"$work/c2"
    echo
    echo "cxi's part of that round trip, by entry point (fi_cq_read's calls: the one that finds"
    echo "the message, and the empty ones that end Open MPI's drain loop):"
    echo
    echo "| entry point | calls a round trip | instructions a round trip | per call |"
    echo "|---|---|---|---|"
    awk -v d="$d" 'NR == FNR { n[$1] -= $2; c[$1] -= $3; next }
        { n[$1] += $2; c[$1] += $3 }
        END { for (e in n) { i = n[e] / d; k = c[e] / d
              if (k > 0.01) printf "| %s | %.2f | %.0f | %.0f |\n", e, k, i, i / k } }' \
        "$work/c1" "$work/c2" | sort -t'|' -k4 -rn
}

# One table row: LABEL PLUGINS MCA...
row() {
    local label=$1 plugins=$2
    shift 2
    by_object "$plugins" "$N1" "$@" >"$work/a"
    by_object "$plugins" "$N2" "$@" >"$work/b"
    # mpi_pingpong runs a tenth more as warm-up: the extra iterations are 1.1 (N2 - N1).
    awk -v l="$label" -v d="$(( (N2 - N1) * 11 / 10 ))" '
        NR == FNR { a[$1] = $2; next }
        { v = ($2 - a[$1]) / d; t += v
          if ($1 ~ /cxi-fi/) p += v
          else if ($1 ~ /mca_|libmpi|libopen-pal|libopen-rte|libpmix/) m += v
          else o += v }
        END { printf "| %s | %.0f | %.0f | %.0f | **%.0f** |\n", l, p, m, o, t }' "$work/a" "$work/b"
}

cxi=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include cxi)
vader=(--mca pml ob1 --mca btl self,vader)
bench_machine
echo "Instructions of rank 0 per 8-byte round trip (a send, a receive and their polls), Open MPI $(mpirun --version 2>/dev/null | head -1 | awk '{print $NF}'), callgrind, $N1 and $N2 iterations."
echo
echo "| path | softnic's plugin | Open MPI (mca_*, libmpi, opal) | other (libc, ld.so, the program) | **total** |"
echo "|---|---|---|---|---|"
row "cm + mtl ofi over cxi" "$FI_PROVIDER_PATH" "${cxi[@]}"
calls=$(calls_table)  # before another row's runs replace the callgrind outputs
if [ -n "$OLD" ]; then row "cm + mtl ofi over cxi, $OLD" "$OLD/lib" "${cxi[@]}"; fi
row "ob1 + vader" "$FI_PROVIDER_PATH" "${vader[@]}"
echo "$calls"

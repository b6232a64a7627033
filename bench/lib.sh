# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Shared by the bench scripts; sourced from the repository root.

# The plugins to measure: those of BUILD=<dir> (its lib/) as they are, or else the
# checkout built incrementally into ./build (measure what is checked out).
bench_plugins() {
    if [ -z "${BUILD:-}" ]; then
        scripts/build.sh >/dev/null
        BUILD=$PWD/build
    fi
    export FI_PROVIDER_PATH=$BUILD/lib
}

# The machine under every table, since the ratios move with it: the CPU model, how many
# CPUs, and the time one cache line takes to cross two of them (bench/line_floor.c),
# the floor under any exchange within a host.
bench_machine() {
    local d model floor
    d=$(mktemp -d)
    cc -O2 -std=gnu11 -o "$d/line_floor" bench/line_floor.c
    model=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
    # The median of three: on a VM one run now and then reports a fraction of the usual
    # figure (23.8 ns once, against 117-147 in the same hour).
    floor=$(for _ in 1 2 3; do "$d/line_floor" 1000000; done | awk '{print $2}' | sort -g | sed -n 2p)
    rm -rf "$d"
    echo "Machine: ${model:-unknown CPU}, $(nproc) CPUs; a cache line crosses two CPUs in $floor ns one way (bench/line_floor.c)."
}

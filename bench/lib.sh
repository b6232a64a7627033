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

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Builds the libFuzzer harnesses (tests/fuzz: clang, ASan + UBSan, the plugins
# instrumented too) in build-fuzz/ and runs each for FUZZ_SECONDS (60) from its seed
# corpus. A crash, leak, sanitizer report or hang fails the run; the input that did it
# is left in build-fuzz/artifacts/ (add it to tests/fuzz/corpus/<fuzzer>/ with the fix).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${FUZZ_BUILD_DIR:-build-fuzz}
seconds=${FUZZ_SECONDS:-60}
cmake -S . -B "$dir" -DSOFTNIC_FUZZ=ON -DSOFTNIC_TESTS=OFF -DSOFTNIC_WERROR=ON \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
fuzzers=(fuzz_cxi_packets fuzz_usnic_packets fuzz_getinfo fuzz_config fuzz_shm_window)
# The shipped targets too: this is CI's clang build (warnings are errors).
cmake --build "$dir" -j"${JOBS:-2}" --target "${fuzzers[@]}" cxi-fi usnic-fi cxi cxi_service \
    cxi_stat
mkdir -p "$dir/artifacts"
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
status=0
for f in "${fuzzers[@]}"; do
    work="$dir/corpus/$f"  # new inputs land here; the repository's corpus is only read
    mkdir -p "$work"
    echo "== $f: ${seconds}s"
    if ! "$dir/fuzz/$f" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
        -print_final_stats=1 -artifact_prefix="$dir/artifacts/$f-" \
        "$work" "tests/fuzz/corpus/$f" 2>"$dir/$f.log"; then
        echo "$f FAILED (log: $dir/$f.log)"
        tail -40 "$dir/$f.log"
        status=1
    else
        grep -E 'stat::number_of_executed_runs|cov:' "$dir/$f.log" | tail -2
    fi
done
exit $status

#!/usr/bin/env bash
# Runs an upstream client's own test suite, unchanged, over softnic's cxi (or a provider to
# compare with) on this host, and prints a summary.
#
#   scripts/clients.sh CLIENT DIR [provider]      (CLIENT: sos mpich gasnet ompi)
#
# DIR is the client's configured and built tree, as tests/clients/README.md builds it
# (sos: the SOS source/build tree, e.g. /opt/src/sos-1.5.3, tests already built with
# `make check TESTS=`). provider: cxi (default), or one to compare with (tcp, sockets,
# usnic, ...): it is handed to libfabric (FI_PROVIDER) and to the client's own selector.
# Environment:
#   PLUGINS   directory of libcxi-fi.so / libusnic-fi.so (default: build/lib)
#   TIMEOUT   seconds per test before it is killed, launcher and all (default: 120)
#   NPROCS    processes (PEs, ranks) per test (default: 2)
#   LOGDIR    where the suite's output and each failed test's log go (default: a temporary dir)
# Excluded tests, one a line, each with a `# reason`: tests/clients/<client>.exclude
# (sos: the test's path under tests-sos/test, e.g. `unit/hello  # reason`). An excluded
# test is not run and counts as skipped.
# Last lines: `N passed, N failed` and `N timed out (counted as failed), N skipped (N excluded)`.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

usage="usage: scripts/clients.sh sos|mpich|gasnet|ompi DIR [provider]"
client=${1:?$usage}
dir=${2:?$usage}
prov=${3:-cxi}
[ -d "$dir" ] || { echo "no directory $dir" >&2; exit 2; }
dir=$(cd "$dir" && pwd)

plugins=$(cd "${PLUGINS:-build/lib}" && pwd)
timeout_s=${TIMEOUT:-120}
nprocs=${NPROCS:-2}
logdir=${LOGDIR:-$(mktemp -d -t softnic-clients.XXXXXX)}
mkdir -p "$logdir"
logdir=$(cd "$logdir" && pwd)

# The exclude file without comments and blank lines: one test name a line.
exclude=$logdir/exclude.list
: >"$exclude"
if [ -f "$root/tests/clients/$client.exclude" ]; then
    sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e 's/^[[:space:]]*//' \
        "$root/tests/clients/$client.exclude" | { grep -v '^$' || true; } >"$exclude"
fi

export FI_PROVIDER=$prov FI_PROVIDER_PATH=$plugins IPATH_NO_BACKTRACE=1
# usnic's devices are the non-loopback interfaces unless named (fi_usnic(7)).
[ "$prov" = usnic ] && export FI_USNIC_IFACES=lo

# summary PASSED FAILED TIMEDOUT SKIPPED EXCLUDED
summary() {
    echo "$1 passed, $2 failed"
    echo "$3 timed out (counted as failed), $4 skipped ($5 excluded)"
}

run_sos() {
    local tests=$dir/modules/tests-sos/test
    if [ ! -x "$dir/src/oshrun" ] || [ ! -d "$tests" ]; then
        echo "no $dir/src/oshrun or $tests: build SOS as tests/clients/README.md says" >&2
        exit 2
    fi
    export SHMEM_OFI_PROVIDER=$prov
    # oshrun execs OSHRUN_LAUNCHER: a launcher that speaks PMI-1 (SOS configured with
    # --enable-pmi-simple), i.e. MPICH's hydra; Open MPI's mpirun does not.
    if [ -z "${OSHRUN_LAUNCHER:-}" ]; then
        OSHRUN_LAUNCHER=$(command -v mpiexec.hydra || true)
        [ -n "$OSHRUN_LAUNCHER" ] ||
            { echo "no mpiexec.hydra on PATH (Debian: apt-get install mpich)" >&2; exit 2; }
    fi
    export OSHRUN_LAUNCHER

    # SOS's harness runs each test as `$(TEST_RUNNER) ./test` in the test's directory
    # (automake parallel-tests); this runner skips excluded tests (exit 77 = SKIP) and
    # kills a test's whole process group at the timeout (exit 99 = ERROR).
    local runner=$logdir/run-one.sh
    cat >"$runner" <<EOF
#!/usr/bin/env bash
name=\${PWD#$tests/}/\$(basename "\$1")
if grep -qxF "\$name" "$exclude"; then
    echo "excluded: \$name"; echo "\$name" >>"$logdir/excluded"; exit 77
fi
timeout -k 10 $timeout_s "$dir/src/oshrun" -n $nprocs "\$@"
rc=\$?
if [ \$rc = 124 ] || [ \$rc = 137 ]; then
    echo "timed out after $timeout_s s: \$name"; echo "\$name" >>"$logdir/timeouts"; exit 99
fi
exit \$rc
EOF
    chmod +x "$runner"
    : >"$logdir/timeouts"; : >"$logdir/excluded"

    # Results of an earlier run must not be counted again.
    find "$tests" -name '*.trs' -print0 | while IFS= read -r -d '' t; do
        rm -f "$t" "${t%.trs}.log"
    done
    local log=$logdir/sos.log
    echo "== sos over $prov, $nprocs PEs (full output: $log)"
    (cd "$dir" && make -k check TEST_RUNNER="$runner") >"$log" 2>&1 || true

    local passed=0 failed=0 skipped=0 excluded timedout t result name
    while IFS= read -r -d '' t; do
        result=$(sed -n 's/^:test-result: //p' "$t" | head -1)
        name=${t#"$tests"/}; name=${name%.trs}
        case $result in
            PASS|XFAIL) passed=$((passed + 1)) ;;
            SKIP) skipped=$((skipped + 1)) ;;
            *) failed=$((failed + 1))
               echo "$result: $name"
               mkdir -p "$logdir/failed/$(dirname "$name")"
               cp "${t%.trs}.log" "$logdir/failed/$name.log" 2>/dev/null || true ;;
        esac
    done < <(find "$tests" -name '*.trs' -print0 | sort -z)
    # A test directory that failed to build leaves no results: say so.
    grep -E '^make.*Error' "$log" | grep -v 'check-TESTS\|check-am\|check-recursive\|check\]\|test-suite\.log' || true
    timedout=$(wc -l <"$logdir/timeouts")
    excluded=$(wc -l <"$logdir/excluded")
    summary $passed $failed "$timedout" $skipped "$excluded"
    [ $failed = 0 ]
}

case $client in
    sos) run_sos ;;
    mpich|gasnet|ompi)
        echo "clients.sh: $client: not implemented yet" >&2
        exit 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
esac

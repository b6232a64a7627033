#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Runs an upstream client's own test suite, unchanged, over softnic's cxi (or a provider to
# compare with) on this host, and prints a summary.
#
#   scripts/clients.sh CLIENT DIR [provider]      (CLIENT: sos mpich ompi; gasnet by hand)
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
# (sos: the test's path under tests-sos/test, e.g. `unit/hello  # reason`; mpich: see below).
# An excluded test is not run and counts as skipped.
#
# mpich: DIR is MPICH's source/build tree (e.g. /opt/src/mpich-4.3.2) where `make testconfig`
# configured test/mpi against the installed MPICH. Its driver test/mpi/runtests runs the test
# lists of the directories in MPICH_DIRS (default: attr coll comm datatype group init pt2pt rma;
# lists: MPICH_TESTLIST, default testlist,testlist.dtp,testlist.collalgo as `make testing`),
# each test by test/mpi's mpiexec (hydra) with MPITEST_TIMEOUT=TIMEOUT (a list's own
# timeLimit= wins, as in MPICH) and MPIR_CVAR_NOLOCAL=1 (all ranks talk through the OFI
# netmod, none through MPICH's shared memory). NPROCS is runtests' -np (entries without a
# count); an entry asking for more than MPICH_MAXNP ranks (default 4) is skipped (counted as
# skipped; runtests' own -maxnp would run it with fewer ranks instead). A test's name is
# runtests' own (its junit name without ./): `DIR/PROG NP [ARG...] [ENV...]`, e.g.
# `coll/allred 4` or `coll/bcast 4 MPIR_CVAR_BCAST_INTRA_ALGORITHM=binomial`; an exclude line
# is such a name, or `DIR/PROG` for every entry of that program. Before the suite, a 2-rank
# MPI program with MPIR_CVAR_DEBUG_SUMMARY=1 checks that MPICH picked the provider asked for
# (tcp: MPICH gets libfabric's tcp;ofi_rxm). Failed tests' names go to LOGDIR/failed.list;
# MPICH_ONLY=that file runs only those tests (its directories, unless MPICH_DIRS is set).
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

run_mpich() {
    local tm=$dir/test/mpi
    if [ ! -x "$tm/runtests" ] || [ ! -f "$tm/Makefile" ]; then
        echo "no $tm/runtests or Makefile: run \`make testconfig\` in $dir first" >&2
        exit 2
    fi
    local mpiexec=${MPIEXEC:-$(sed -n 's/^MPIEXEC = //p' "$tm/Makefile")}
    local mpicc
    mpicc=$(sed -n 's/^CC = //p' "$tm/Makefile")
    local maxnp=${MPICH_MAXNP:-4} lists=${MPICH_TESTLIST:-testlist,testlist.dtp,testlist.collalgo}
    local only=${MPICH_ONLY:-} dirs
    if [ -n "$only" ]; then
        only=$(cd "$(dirname "$only")" && pwd)/$(basename "$only")
        dirs=${MPICH_DIRS:-$(sed -e 's/#.*//' -e 's/^[[:space:]]*//' "$only" |
            sed -n 's|^\([^/[:space:]]*\)/.*|\1|p' | sort -u | tr '\n' ' ')}
    else
        dirs=${MPICH_DIRS:-attr coll comm datatype group init pt2pt rma}
    fi
    export MPIR_CVAR_NOLOCAL=1 MPITEST_TIMEOUT=$timeout_s

    # Does MPICH run over the provider asked for? Rank 0 says which it picked.
    local hello=$logdir/hello-mpi
    printf '#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); MPI_Finalize(); return 0; }\n' \
        >"$hello.c"
    "$mpicc" -o "$hello" "$hello.c"
    MPIEXEC_TIMEOUT=60 MPIR_CVAR_DEBUG_SUMMARY=1 "$mpiexec" -n 2 "$hello" >"$logdir/provider.log" 2>&1 || true
    local picked
    picked=$(sed -n 's/^libfabric provider: //p' "$logdir/provider.log" | head -1)
    echo "MPICH's provider: ${picked:-none} (MPIR_CVAR_DEBUG_SUMMARY=1: $logdir/provider.log)"
    case ${picked%% *} in
        "$prov"|"$prov;"*) ;;
        *) echo "MPICH did not pick $prov" >&2; exit 2 ;;
    esac

    # runtests reads DIR/LIST for each of its lists in each directory: filtered copies
    # (LIST.clients) leave out excluded tests and those asking for more than $maxnp ranks.
    local lists_c
    lists_c=$(echo "$lists" | sed 's/\([^,]\{1,\}\)/\1.clients/g')
    : >"$logdir/excluded"; : >"$logdir/toobig"; : >"$logdir/selected"; : >"$logdir/made-lists"
    trap 'xargs -r rm -f <"'"$logdir"'/made-lists"' EXIT
    filter_dir() {    # DIR relative to test/mpi
        local d=$1 l sub
        for l in ${lists//,/ }; do
            [ -f "$tm/$d/$l" ] || continue
            echo "$tm/$d/$l.clients" >>"$logdir/made-lists"
            awk -v d="$d" -v tm="$tm" -v npdef="$nprocs" -v maxnp="$maxnp" \
                -v excl="$exclude" -v only="$only" -v ld="$logdir" '
                BEGIN {
                    while ((getline e <excl) > 0) { gsub(/[[:space:]]+/, " ", e); x[e] = 1 }
                    if (only != "") while ((getline e <only) > 0) {
                        sub(/#.*/, "", e); gsub(/[[:space:]]+/, " ", e)
                        sub(/^ /, "", e); sub(/ $/, "", e); if (e != "") o[e] = 1 }
                }
                { line = $0; sub(/#.*/, ""); sub(/\r$/, ""); sub(/^[[:space:]]+/, "") }
                /^[[:space:]]*$/ { print line; next }
                /^!/ { print line; next }
                {
                    if (system("test -d \"" tm "/" d "/" $1 "\"") == 0) {
                        print d "/" $1 >>(ld "/subdirs"); print line; next
                    }
                    np = NF >= 2 ? $2 : npdef; a = ""; v = ""
                    for (i = 3; i <= NF; i++) {
                        k = substr($i, 1, index($i, "=") - 1); val = substr($i, index($i, "=") + 1)
                        if (k == "arg") a = a " " val; else if (k == "env") v = v " " val
                    }
                    name = d "/" $1 " " np a v
                    if (only != "" && !((name in o) || ((d "/" $1) in o))) { print "#" line; next }
                    if ((name in x) || ((d "/" $1) in x)) {
                        print name >>(ld "/excluded"); print "#" line; next }
                    if (np + 0 > maxnp + 0) { print name >>(ld "/toobig"); print "#" line; next }
                    print name >>(ld "/selected"); print line
                }' "$tm/$d/$l" >"$tm/$d/$l.clients"
        done
        if [ -s "$logdir/subdirs" ]; then
            local subs
            subs=$(cat "$logdir/subdirs"); rm -f "$logdir/subdirs"
            for sub in $subs; do filter_dir "$sub"; done
        fi
    }
    local d
    for d in $dirs; do
        [ -d "$tm/$d" ] || { echo "no directory $tm/$d" >&2; exit 2; }
        filter_dir "$d"
    done

    # runtests' mpiexec: hydra itself kills a test at MPIEXEC_TIMEOUT (runtests sets it per
    # test); should hydra hang, timeout(1) kills the whole process group a minute later.
    local wrapper=$logdir/mpiexec.sh
    cat >"$wrapper" <<EOF
#!/usr/bin/env bash
t=\$(( \${MPIEXEC_TIMEOUT:-$timeout_s} + 60 ))
timeout -k 10 \$t "$mpiexec" "\$@"
rc=\$?
if [ \$rc = 124 ] || [ \$rc = 137 ]; then echo "clients.sh: mpiexec killed after \$t s (TIMED OUT)"; fi
exit \$rc
EOF
    chmod +x "$wrapper"

    local log=$logdir/mpich.log tap=$logdir/summary.tap junit=$logdir/summary.junit.xml
    echo "== mpich test/mpi over $prov: $(echo $dirs) (at most $maxnp ranks; full output: $log)"
    (cd "$tm" && ./runtests -srcdir=. -tests="$lists_c" -testdirs="$(echo $dirs | tr ' ' ,)" \
        -mpiexec="$wrapper" -np="$nprocs" -xmlfile="$logdir/summary.xml" \
        -tapfile="$tap" -junitfile="$junit") >"$log" 2>&1 || true
    # runtests stops early after too many timeouts (or when killed): say so.
    grep -E '^Terminating test|^Killed' "$log" || true
    local unbuilt
    unbuilt=$(grep -c '^Failed to build' "$log" || true)
    [ "$unbuilt" = 0 ] || echo "$unbuilt tests failed to build (counted as failed; see $log)"

    # Each result: runtests numbers its tests alike in its TAP (status, output) and junit
    # (full name) outputs.
    awk -v junit="$junit" -v ld="$logdir" '
        function done_test() {
            if (n == "") return
            print st "\t" n "\t" name[n] >(ld "/results")
            if (st == "FAIL" || st == "TIMEOUT") {
                nm = name[n]; sub(/ .*/, "", nm); f = ld "/failed/" nm "." n ".log"
                dd = f; sub(/\/[^\/]*$/, "", dd); system("mkdir -p \"" dd "\"")
                printf "%s\n%s", name[n], out >f; close(f)
            }
            n = ""
        }
        BEGIN {
            while ((getline l <junit) > 0) if (l ~ /<testcase classname=/) {
                sub(/.* name="/, "", l); sub(/".*/, "", l)
                k = l; sub(/ - .*/, "", k); sub(/^[^-]* - /, "", l); sub(/^\.\//, "", l)
                gsub(/[[:space:]]+/, " ", l); sub(/ $/, "", l); name[k + 0] = l
            }
        }
        /^(not )?ok [0-9]+ / {
            done_test()
            n = ($1 == "not") ? $3 + 0 : $2 + 0; out = ""
            st = ($1 == "not") ? "FAIL" : (/# SKIP / ? "SKIP" : "PASS")
            next
        }
        /^## / && n != "" {
            out = out substr($0, 4) "\n"
            if (/APPLICATION TIMED OUT|clients\.sh: mpiexec killed/) st = "TIMEOUT"
        }
        END { done_test() }' "$tap"
    touch "$logdir/results"
    cut -f3 "$logdir/results" | sort >"$logdir/seen"
    # Tests runtests never got to (it stops after too many timeouts) count as failed.
    sort "$logdir/selected" | comm -23 - "$logdir/seen" | sed 's/^/NOTRUN\t-\t/' >>"$logdir/results"

    awk -F'\t' '$1 == "FAIL" || $1 == "TIMEOUT" { print $1 ": " $3 }' "$logdir/results"
    local notrun
    notrun=$(grep -c '^NOTRUN' "$logdir/results" || true)
    [ "$notrun" = 0 ] || echo "$notrun tests not run (counted as failed; in $logdir/failed.list)"
    awk -F'\t' '$1 != "PASS" && $1 != "SKIP" { print $3 }' "$logdir/results" >"$logdir/failed.list"
    awk -F'\t' '$1 == "TIMEOUT" { print $3 }' "$logdir/results" >"$logdir/timeouts"
    # Per directory: results, then the tests left out here.
    { awk -F'\t' '{ d = $3; sub(/\/.*/, "", d); print $1 "\t" d }' "$logdir/results"
      sed 's|/.*||; s/^/SKIP\t/' "$logdir/excluded" "$logdir/toobig"; } |
        awk -F'\t' '{ c[$2, $1]++; ds[$2] = 1 }
            END { for (d in ds) printf "%-10s %4d passed, %3d failed (%d timed out), %4d skipped\n", d,
                      c[d, "PASS"], c[d, "FAIL"] + c[d, "TIMEOUT"] + c[d, "NOTRUN"], c[d, "TIMEOUT"],
                      c[d, "SKIP"] }' | sort
    local passed failed timedout skipped excluded
    passed=$(grep -c '^PASS' "$logdir/results" || true)
    failed=$(grep -cE '^(FAIL|TIMEOUT|NOTRUN)' "$logdir/results" || true)
    timedout=$(wc -l <"$logdir/timeouts")
    excluded=$(wc -l <"$logdir/excluded")
    skipped=$(( $(grep -c '^SKIP' "$logdir/results" || true) + excluded + $(wc -l <"$logdir/toobig") ))
    summary "$passed" "$failed" "$timedout" "$skipped" "$excluded"
    [ "$failed" = 0 ]
}

# Open MPI (DIR: its install prefix, e.g. /opt/ompi5) has no test suite of its own in its
# release: the project's MPI checks (tests/integration/mpi_check.c, data checked) and Open
# MPI's own examples/connectivity_c.c, built with DIR's mpicc. Within the host: the ofi MTL
# over the provider, 2 ranks (mpi_check) and 4 (connectivity); across two network
# namespaces (root only): the ofi MTL, and the usnic BTL over softnic's usnic when DIR's
# Open MPI has it (configure --with-usnic). Each check is one test.
run_ompi() {
    local mpicc=$dir/bin/mpicc mpirun=$dir/bin/mpirun src
    [ -x "$mpicc" ] && [ -x "$mpirun" ] || { echo "no $mpicc or $mpirun" >&2; exit 2; }
    export PATH=$dir/bin:$PATH
    "$mpicc" -O2 -I"$root/tests/integration" -o "$logdir/mpi_check" "$root/tests/integration/mpi_check.c"
    src=$(find "$dir" "$(dirname "$dir")" -maxdepth 4 -path '*examples/connectivity_c.c' 2>/dev/null | head -1)
    [ -n "$src" ] || src=${OMPI_EXAMPLES:-}/connectivity_c.c
    [ -f "$src" ] && "$mpicc" -o "$logdir/connectivity" "$src"
    local passed=0 failed=0 skipped=0 name
    one() {  # NAME COMMAND...: pass when COMMAND exits 0 (77: skipped)
        name=$1; shift
        if timeout -k 10 "$timeout_s" "$@" >"$logdir/$name.log" 2>&1; then
            passed=$((passed + 1)); echo "PASS: $name"
        elif [ $? = 77 ]; then
            skipped=$((skipped + 1)); echo "SKIP: $name"
        else
            failed=$((failed + 1)); echo "FAIL: $name (log: $logdir/$name.log)"
        fi
    }
    local mtl=(--allow-run-as-root --oversubscribe --mca pml cm --mca mtl ofi
               --mca mtl_ofi_provider_include "$prov" --mca btl self -x FI_PROVIDER_PATH)
    echo "== Open MPI $("$dir/bin/ompi_info" --parsable | sed -n 's/^ompi:version:full://p') over $prov"
    one host-mpi_check-2 "$mpirun" -np 2 "${mtl[@]}" "$logdir/mpi_check"
    if [ -x "$logdir/connectivity" ]; then
        one host-connectivity-4 "$mpirun" -np 4 "${mtl[@]}" "$logdir/connectivity"
    else
        skipped=$((skipped + 1)); echo "SKIP: host-connectivity-4 (no examples/connectivity_c.c; set OMPI_EXAMPLES)"
    fi
    if [ "$(id -u)" = 0 ]; then
        local modes=$prov
        [ "$prov" = cxi ] || modes=tcp
        "$dir/bin/ompi_info" | grep -q 'MCA btl: usnic' && modes="$modes usnic"
        for m in $modes; do
            # The usnic BTL asks libfabric for usnic: FI_PROVIDER must let it.
            local fp=$prov
            [ "$m" = usnic ] && fp=usnic
            MPI_CHECK=$logdir/mpi_check NETNS_MPI=$m MPI_TIMEOUT=$timeout_s FI_PROVIDER=$fp \
                one "netns-$m" "$root/tests/integration/test_netns_mpi.sh"
        done
    else
        skipped=$((skipped + 1)); echo "SKIP: netns runs (need root)"
    fi
    summary $passed $failed 0 $skipped 0
    [ $failed = 0 ]
}

case $client in
    sos) run_sos ;;
    mpich) run_mpich ;;
    ompi) run_ompi ;;
    gasnet)
        echo "clients.sh: gasnet: not implemented yet (tests/clients/README.md runs it by hand)" >&2
        exit 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
esac

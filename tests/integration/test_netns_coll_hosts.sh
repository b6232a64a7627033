#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# cxi collectives across N hosts, one rank each: network namespaces on a bridge
# (netns_up_hosts; NETNS_HOSTS, default 4), cxi over UDP between them. coll_mpi checks
# barrier, broadcast, reduce and allreduce over every op x datatype pair against
# Open MPI's own results (pml ob1, btl tcp); COLL_ARGS="bench N" adds the timing line
# that bench/coll.sh reads.
. "$(dirname "$0")/netns.sh"
netns_require_root
command -v mpirun >/dev/null || { echo "SKIP: no mpirun"; exit 77; }
exe=${COLL_MPI:?path of the coll_mpi binary}
hosts=${NETNS_HOSTS:-4}

netns_up_hosts "$hosts" 9000
dir=$(mktemp -d)
chmod 755 "$dir"
netns_atexit "rm -rf '$dir'"
netns_mpi_hosts "$dir" 1
args=(--allow-run-as-root -np "$hosts" --map-by node --bind-to none --hostfile "$dir/hosts"
    --mca plm_rsh_agent "$dir/agent" --mca plm_rsh_no_tree_spawn 1
    --mca oob_tcp_if_include "$NS_NET" --mca pml ob1 --mca btl tcp,self
    --mca btl_tcp_if_include "$NS_NET" -x FI_PROVIDER_PATH
    --mca mpi_yield_when_idle "${MPI_YIELD:-1}")
[ -n "${FI_LOG_LEVEL:-}" ] && args+=(-x FI_LOG_LEVEL)

# A launch whose ranks never start is ORTE's, not the provider's: launch again (as
# test_netns_mpi.sh does). A hang once the ranks run still fails.
for try in 1 2 3 4; do
    # shellcheck disable=SC2016  # expanded by the rank's shell
    out=$(cd "$dir" && in_host 0 timeout "${MPI_TIMEOUT:-60}" mpirun "${args[@]}" \
        sh -c 'echo "rank ${OMPI_COMM_WORLD_RANK:-?} netns $(ip netns identify)"; exec "$0" "$@"' \
        "$exe" ${COLL_ARGS:-} 2>&1)
    rc=$?
    grep -q '^rank ' <<<"$out" || [ $rc -ne 124 ] || [ $try -eq 4 ] || {
        echo "mpirun never started the ranks; launching again" >&2
        pkill -f -- "$dir/agent" 2>/dev/null || true
        sleep 1
        continue
    }
    break
done
if [ $rc -ne 0 ] || ! grep -q "all collective checks passed" <<<"$out"; then
    echo "$out" | tail -40 >&2
    fail "coll_mpi across $hosts namespaces (rc $rc)"
fi
for ((i = 0; i < hosts; i++)); do
    grep -q "netns ${NS_HOSTS[$i]}\$" <<<"$out" || fail "no rank ran in host $i"
done
echo "$out" | grep -E "all collective checks passed|^[0-9]+ [0-9.]+ [0-9.]+$"
ok "cxi collectives across $hosts namespaces, one rank each"

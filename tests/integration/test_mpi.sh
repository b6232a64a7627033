#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Open MPI (Debian's openmpi-bin) with the ofi MTL over cxi: 2 ranks, results checked.
. "$(dirname "$0")/lib.sh"
exe=${MPI_CHECK:?path of the mpi_check binary}
common=(--allow-run-as-root --oversubscribe -np 2 --mca pml cm --mca mtl ofi
        --mca mtl_ofi_provider_include cxi --mca btl self --mca mtl_base_verbose 100 --mca opal_common_ofi_verbose 100
        -x FI_PROVIDER_PATH -x FI_CXI_RDZV_OFFLOAD -x FI_CXI_MSG_OFFLOAD)
run() {
    local out
    out=$(timeout 300 mpirun "${common[@]}" "$exe" 2>&1)
    local rc=$?
    if [ $rc -ne 0 ] || ! grep -q "all checks passed" <<<"$out"; then
        echo "$out" | tail -30 >&2
        return 1
    fi
    grep -Eq "mtl:ofi:provider(:domain)?: cxi0" <<<"$out" || { echo "$out" | tail -30 >&2; return 1; }
}
export FI_CXI_RDZV_OFFLOAD=1 FI_CXI_MSG_OFFLOAD=1
run || fail "mpirun with the ofi MTL over cxi"
ok "Open MPI over cxi"
export FI_CXI_RDZV_OFFLOAD=0 FI_CXI_MSG_OFFLOAD=0
run || fail "mpirun, eager rendezvous and software matching"
ok "Open MPI over cxi, FI_CXI_RDZV_OFFLOAD=0 FI_CXI_MSG_OFFLOAD=0"

# cxi collectives between processes on this host: 2, 4 and 8 members (MPI over ob1+vader
# only starts them and trades their addresses).
if [ -n "${COLL_MPI:-}" ]; then
    for np in 2 4 8; do
        out=$(timeout 300 mpirun --allow-run-as-root --oversubscribe -np "$np" --mca pml ob1 \
            --mca btl self,vader -x FI_PROVIDER_PATH "$COLL_MPI" check 2>&1) ||
            { echo "$out" | tail -30 >&2; fail "cxi collectives, $np processes"; }
        grep -q "all collective checks passed ($np members)" <<<"$out" ||
            { echo "$out" | tail -30 >&2; fail "cxi collectives, $np processes"; }
        ok "cxi collectives between $np processes"
    done
fi

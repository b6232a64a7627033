#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# fi_pingpong (Debian's libfabric-bin) between two processes over cxi, data checked.
. "$(dirname "$0")/lib.sh"
PROV=cxi
base=${PINGPONG_PORT:-47700}
pingpong_pair $base -e rdm -c -S all -I 5 || fail "rdm msg, every size"
ok "fi_pingpong -e rdm -c -S all"
pingpong_pair $((base + 1)) -e rdm -c -S all -I 5 -m tagged || fail "rdm tagged, every size"
ok "fi_pingpong -e rdm -m tagged -c -S all"
pingpong_pair $((base + 2)) -e rdm -c -I 200 || fail "rdm default sizes, 200 iterations"
ok "fi_pingpong -e rdm -c -I 200"
FI_CXI_RDZV_OFFLOAD=0 pingpong_pair $((base + 3)) -e rdm -c -S all -I 5 ||
    fail "eager rendezvous flavour"
ok "FI_CXI_RDZV_OFFLOAD=0"
FI_CXI_MSG_OFFLOAD=0 FI_CXI_RDZV_THRESHOLD=2048 pingpong_pair $((base + 4)) -e rdm -c -S all -I 5 ||
    fail "software matching, low rendezvous threshold"
ok "FI_CXI_MSG_OFFLOAD=0 FI_CXI_RDZV_THRESHOLD=2048"
FI_CXI_SHM_CMA=0 pingpong_pair $((base + 5)) -e rdm -c -S all -I 5 ||
    fail "rendezvous streamed through the rings (no process_vm_readv)"
ok "FI_CXI_SHM_CMA=0"

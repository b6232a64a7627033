#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Incast between two hosts (network namespaces A and B, veth, mtu 9000): many senders in B
# stream 1 MiB tagged messages to one endpoint in A, which checks every byte
# (incast.c: sender, message number and offset in each word). Four runs:
#   - 32 endpoints in one process, 4 messages each;
#   - 8 sender processes of 4 endpoints each, left to the scheduler, so that the receiver
#     shares the CPUs with them and its socket overflows now and then;
#   - one endpoint and 1,024 peers (8 processes of 128 endpoints), 4 KiB messages;
#   - 16 endpoints under 5 % random UDP loss (nftables, both ways).
# Every run must deliver everything intact with no error completion (no peer declared
# dead). The speed is bench/incast.sh's business: nothing here asserts a time.
#
# INCAST: the incast binary (or first argument).
. "$(dirname "$0")/netns.sh"
netns_require_root
incast=${1:-${INCAST:?path of the incast binary (INCAST=... or first argument)}}
[ -x "$incast" ] || fail "incast binary $incast not executable"
command -v nft >/dev/null || { echo "SKIP: no nft"; exit 77; }
port=${INCAST_PORT:-47600}
export INCAST_STALL_S=${INCAST_STALL_S:-60}

netns_up 9000
dir=$(mktemp -d)
netns_atexit "rm -rf '$dir'"

# $1 label, $2 sender processes, $3 endpoints each, $4 messages per endpoint, $5 size
# (default 1 MiB). With OWN_NIC=1 each sender process has a soft NIC of its own (an
# address of its own on B's veth): a NIC has a few hundred endpoints at most.
incast_run() {
    local label=$1 procs=$2 each=$3 msgs=$4 size=${5:-1048576} rc=0 pids=() p nic
    port=$((port + 1))
    in_a timeout 240 "$incast" recv "$port" $((procs * each)) "$msgs" "$size" >"$dir/recv.log" 2>&1 &
    local recv=$!
    for ((i = 0; i < procs; i++)); do
        nic=$IP_B
        if [ "${OWN_NIC:-0}" = 1 ]; then
            nic=${IP_B%.*}.$((10 + i))
            ip -n "$NS_B" addr replace "$nic/24" dev "$NS_IF" || fail "address $nic"
        fi
        ip netns exec "$NS_B" env FI_CXI_SOFT_NICS="$nic" timeout 240 "$incast" send "$IP_A" \
            "$port" "$each" "$msgs" "$size" >"$dir/send$i.log" 2>&1 &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
    wait "$recv" || rc=1
    echo "--- $label:"
    cat "$dir/recv.log" "$dir"/send*.log
    rm -f "$dir"/send*.log
    [ $rc -eq 0 ] && grep -q "^incast: senders $((procs * each)) " "$dir/recv.log"
}

before=$(netns_udp_count)
incast_run "32 endpoints in one process" 1 32 4 || fail "32-to-1 incast, one sender process"
after=$(netns_udp_count)
[ "$after" -gt "$before" ] || fail "no UDP datagram crossed the veth: not the UDP transport"
ok "32-to-1 incast, 128 MiB, every byte checked"

incast_run "8 processes of 4 endpoints" 8 4 4 || fail "32-to-1 incast, 8 sender processes"
ok "32-to-1 incast from 8 processes, every byte checked"

# One endpoint, 1,024 peers: 8 processes of 128 endpoints, each process on its own NIC.
OWN_NIC=1 INCAST_MEMORY=1 incast_run "1024 peers" 8 128 2 4096 ||
    fail "one endpoint and 1,024 peers"
ok "one endpoint served 1,024 peers, every byte checked"

netns_drop 5
incast_run "16 endpoints, 5 % loss" 1 16 4 || fail "16-to-1 incast under 5 % loss"
[ "$(netns_drop_count)" -gt 0 ] || fail "nothing was dropped: the lossy run did not go over UDP"
ok "16-to-1 incast under 5 % loss, every byte checked"

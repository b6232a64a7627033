#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# A storm of tagged messages both ways between two hosts (network namespaces A and B joined
# by a veth, mtu 1500), every message checked by storm.c: order, length, checksum, content,
# duplicates, losses. First a short run on a clean wire, then the full run under 10 % random
# UDP loss (nftables, both directions) plus the provider's own fault injection (duplicates,
# reordering, delays). Nothing may be lost, duplicated, reordered or corrupted.
#
# STORM: the storm binary (or first argument). STORM_N: messages each way in the lossy run
# (default 100000); STORM_SANITY_N: in the clean run (default 5000). NETNS_LOSS,
# NETNS_FAULTS: the loss percentage and FI_CXI_FAULTS of the lossy run.
. "$(dirname "$0")/netns.sh"
netns_require_root
storm=${1:-${STORM:?path of the storm binary (STORM=... or first argument)}}
[ -x "$storm" ] || fail "storm binary $storm not executable"
command -v nft >/dev/null || { echo "SKIP: no nft"; exit 77; }
port=${STORM_PORT:-47900}
n=${STORM_N:-100000}
export STORM_STALL_S=${STORM_STALL_S:-60}
limit=${STORM_TIMEOUT:-240}  # per run; storm itself gives up after STORM_STALL_S without progress

netns_up 1500
dir=$(mktemp -d)
netns_atexit "rm -rf '$dir'"

# storm server in A, client in B, N messages each way; both must exit 0.
storm_pair() {
    local n=$1 label=$2 src=0 crc=0 t0 t1
    t0=$EPOCHREALTIME
    in_a timeout "$limit" "$storm" server "$port" "$n" >"$dir/server.log" 2>&1 &
    local server=$!
    local tries=0
    until ip netns exec "$NS_A" ss -ltn 2>/dev/null | grep -q ":$port " || [ $tries -ge 50 ]; do
        sleep 0.1; tries=$((tries + 1))
    done
    in_b timeout "$limit" "$storm" client "$IP_A" "$port" "$n" >"$dir/client.log" 2>&1 || crc=$?
    wait $server || src=$?
    t1=$EPOCHREALTIME
    echo "--- $label: server (A) rc=$src:"; cat "$dir/server.log"
    echo "--- $label: client (B) rc=$crc:"; cat "$dir/client.log"
    awk -v l="$label" -v a="$t0" -v b="$t1" 'BEGIN { printf "%s: %.1f s wall\n", l, b - a }'
    [ $src -eq 0 ] && [ $crc -eq 0 ]
}

before=$(netns_udp_count)
storm_pair "${STORM_SANITY_N:-5000}" "clean wire" || fail "storm on a clean wire"
after=$(netns_udp_count)
echo "udp datagrams in/out of B: $((after - before))"
[ "$after" -gt "$before" ] || fail "no UDP datagram crossed the veth: not the UDP transport"
ok "storm, ${STORM_SANITY_N:-5000} messages each way, clean wire"

netns_drop "${NETNS_LOSS:-10}"
export FI_CXI_FAULTS=${NETNS_FAULTS:-dup=3,reorder=3,delay=1,delay_us=300}
echo "FI_CXI_FAULTS=$FI_CXI_FAULTS"
storm_pair "$n" "lossy wire" || fail "storm, $n messages each way, under loss and FI_CXI_FAULTS=$FI_CXI_FAULTS"
dropped=$(netns_drop_count)
echo "UDP datagrams dropped by nftables: $dropped"
if [ "${NETNS_LOSS:-10}" -gt 0 ] && [ "$dropped" -eq 0 ]; then
    fail "nothing was dropped: the lossy run did not go over UDP"
fi
ok "storm, $n messages each way, ${NETNS_LOSS:-10} % loss, FI_CXI_FAULTS=$FI_CXI_FAULTS"

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# usnic's reliable endpoints under loss: usnic_storm (server in namespace A, client in B,
# joined by a veth, mtu 1500) sends messages of 0 bytes to 64 KiB both ways at once over RDM
# and over MSG (passive endpoint, connect, accept), and checks every one: order, length,
# every byte, no duplicate, nothing lost. Each receiver lets its posted receives run out now
# and then (and the server starts with none), so messages must wait for a receive rather
# than vanish. First a run of each on a clean wire, then under 10 % random UDP loss both
# ways (nftables) plus FI_USNIC_FAULTS duplicates, reordering and delays.
#
# USNIC_STORM: the usnic_storm binary (or first argument). USTORM_N: messages each way in
# the lossy runs (default 20000); USTORM_SANITY_N: in the clean runs (default 5000; then
# six more MSG connections of 200 messages, for races with the connection set-up);
# NETNS_LOSS, USNIC_FAULTS: the loss percentage and FI_USNIC_FAULTS of the lossy runs;
# USTORM_TYPES: the endpoint types (default "rdm msg"); USTORM_PROV: another provider
# (USTORM_PROV="udp;ofi_rxd" USTORM_TYPES=rdm checks the test bed itself).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/netns.sh"
set -euo pipefail
trap 'echo "FAIL: $0 line $LINENO: a command exited $?" >&2' ERR
netns_require_root
storm=${1:-${USNIC_STORM:?path of usnic_storm (USNIC_STORM=... or first argument)}}
[ -x "$storm" ] || fail "usnic_storm binary $storm not executable"
command -v nft >/dev/null || { echo "SKIP: no nft"; exit 77; }
port=${STORM_PORT:-47950}
n=${USTORM_N:-20000}
n_clean=${USTORM_SANITY_N:-5000}
types=${USTORM_TYPES:-rdm msg}
export STORM_PROV=${USTORM_PROV:-usnic} # another provider checks the test bed itself
export STORM_STALL_S=${STORM_STALL_S:-30}
limit=${STORM_TIMEOUT:-120} # per run; usnic_storm itself gives up after STORM_STALL_S
unset FI_USNIC_FAULTS

netns_up 1500
export FI_USNIC_IFACES=$NS_IF
dir=$(mktemp -d)
netns_atexit "rm -rf '$dir'"

# storm_pair TYPE N LABEL: usnic_storm server in A, client in B, N messages each way over
# endpoint type TYPE; both must exit 0.
storm_pair() {
    local type=$1 n=$2 label="$1, $3" src=0 crc=0 t0 t1
    port=$((port + 1))
    t0=$EPOCHREALTIME
    in_a timeout "$limit" "$storm" -e "$type" server "$port" "$n" >"$dir/server.log" 2>&1 &
    local server=$!
    local tries=0
    until ip netns exec "$NS_A" ss -ltn 2>/dev/null | grep -q ":$port " || [ $tries -ge 50 ]; do
        sleep 0.1
        tries=$((tries + 1))
    done
    in_b timeout "$limit" "$storm" -e "$type" client "$IP_A" "$port" "$n" >"$dir/client.log" 2>&1 ||
        crc=$?
    wait $server || src=$?
    t1=$EPOCHREALTIME
    echo "--- $label: server (A) rc=$src:"
    cat "$dir/server.log"
    echo "--- $label: client (B) rc=$crc:"
    cat "$dir/client.log"
    awk -v l="$label" -v a="$t0" -v b="$t1" 'BEGIN { printf "%s: %.1f s wall\n", l, b - a }'
    [ $src -eq 0 ] && [ $crc -eq 0 ] || return 1
    # Receives ran out on both sides, and not only at the server's start.
    [ "${USTORM_STARVE_EVERY:-300}" != 0 ] || return 0
    grep -Eq 'starved ([2-9]|[1-9][0-9]+) times' "$dir/server.log" || {
        echo "$label: the server did not run out of receives during the storm" >&2
        return 1
    }
    grep -Eq 'starved [1-9][0-9]* times' "$dir/client.log" || {
        echo "$label: the client never ran out of receives" >&2
        return 1
    }
}

for t in $types; do
    before=$(netns_udp_count)
    storm_pair "$t" "$n_clean" "clean wire" || fail "usnic_storm -e $t, $n_clean messages, clean wire"
    after=$(netns_udp_count)
    echo "udp datagrams in/out of B: $((after - before))"
    [ "$after" -gt "$before" ] || fail "no UDP datagram crossed the veth: not over UDP"
    ok "usnic_storm -e $t, $n_clean messages each way, clean wire"
done

# A connection's first messages race its set-up (the server may send as soon as it has
# FI_CONNECTED, before the client has its own): a few more short MSG runs, each a new
# connection, to give that race more chances to show.
if [[ " $types " == *" msg "* ]]; then
    for i in 1 2 3 4 5 6; do
        USTORM_STARVE_EVERY=50 storm_pair msg 200 "clean wire, new connection $i" ||
            fail "usnic_storm -e msg, 200 messages, clean wire, connection $i"
    done
    ok "usnic_storm -e msg, 6 more connections of 200 messages each way"
fi

netns_drop "${NETNS_LOSS:-10}"
export FI_USNIC_FAULTS=${USNIC_FAULTS:-dup=3,reorder=3,delay=1,delay_us=300,seed=7}
echo "FI_USNIC_FAULTS=$FI_USNIC_FAULTS"
for t in $types; do
    d0=$(netns_drop_count)
    storm_pair "$t" "$n" "lossy wire" ||
        fail "usnic_storm -e $t, $n messages, ${NETNS_LOSS:-10} % loss, FI_USNIC_FAULTS=$FI_USNIC_FAULTS"
    d1=$(netns_drop_count)
    echo "UDP datagrams dropped by nftables: $((d1 - d0))"
    [ "${NETNS_LOSS:-10}" -eq 0 ] || [ "$d1" -gt "$d0" ] ||
        fail "nothing was dropped: the lossy run did not go over UDP"
    ok "usnic_storm -e $t, $n messages each way, ${NETNS_LOSS:-10} % loss, FI_USNIC_FAULTS"
done

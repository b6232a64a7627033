#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# A peer that dies mid-stream (network namespaces A and B joined by a veth): storm's
# victim in A receives a stream of 64 KiB and 8-byte tagged messages from storm's survivor
# in B, then gets SIGKILL. Every send the survivor has outstanding must then complete with
# an error entry, and the survivor must exit 0 within a bounded time: no hang.
#
# Two deaths: (1) kill -9, after which A's kernel answers the survivor's datagrams with
# ICMP port unreachable; (2) SIGSTOP first, so that nothing at all answers and only the
# retransmission limit can tell (FI_CXI_UDP_RETRY_LIMIT=6 timeouts and
# FI_CXI_UDP_DEAD_TIMEOUT=1000 ms of silence here), then kill -9.
#
# STORM: the storm binary (or first argument). KILLED_PEER_LIMIT: seconds the survivor
# may take to exit after the victim stops answering (default 20).
. "$(dirname "$0")/netns.sh"
netns_require_root
storm=${1:-${STORM:?path of the storm binary (STORM=... or first argument)}}
[ -x "$storm" ] || fail "storm binary $storm not executable"
port=${STORM_PORT:-47910}
limit=${KILLED_PEER_LIMIT:-20}
export FI_CXI_UDP_RETRY_LIMIT=${FI_CXI_UDP_RETRY_LIMIT:-6}
export FI_CXI_UDP_DEAD_TIMEOUT=${FI_CXI_UDP_DEAD_TIMEOUT:-1000}
export STORM_STALL_S=${STORM_STALL_S:-60}

netns_up 1500
dir=$(mktemp -d)
netns_atexit "rm -rf '$dir'"

# how: kill (SIGKILL) or stop (SIGSTOP, then SIGKILL once the survivor is done).
killed_peer() {
    local how=$1 vpid="" tries=0 src=0 t_kill t_end
    in_a "$storm" victim "$port" >"$dir/victim.log" 2>&1 &
    local victim=$!  # the subshell that runs in_a; the victim prints its own pid
    until ip netns exec "$NS_A" ss -ltn 2>/dev/null | grep -q ":$port " || [ $tries -ge 50 ]; do
        sleep 0.1; tries=$((tries + 1))
    done
    in_b timeout $((STORM_STALL_S + 30)) "$storm" survivor "$IP_A" "$port" >"$dir/survivor.log" 2>&1 &
    local survivor=$!
    tries=0
    until grep -q '^victim: ready' "$dir/victim.log" || [ $tries -ge 300 ]; do
        sleep 0.1; tries=$((tries + 1))
    done
    if ! grep -q '^victim: ready' "$dir/victim.log"; then
        cat "$dir/victim.log" "$dir/survivor.log" >&2
        fail "$how: the victim did not get the survivor's stream"
    fi
    vpid=$(sed -n 's/^victim: ready pid \([0-9]*\).*/\1/p' "$dir/victim.log")
    [ -n "$vpid" ] || fail "$how: no victim pid in: $(cat "$dir/victim.log")"
    kill -0 "$survivor" 2>/dev/null || { cat "$dir/survivor.log" >&2; fail "$how: survivor gone early"; }
    sleep 0.2  # more traffic in flight
    t_kill=$EPOCHREALTIME
    if [ "$how" = stop ]; then kill -STOP "$vpid"; else kill -9 "$vpid"; fi
    # The survivor must be done within $limit s.
    tries=0
    while kill -0 "$survivor" 2>/dev/null && [ $tries -lt $((limit * 10)) ]; do
        sleep 0.1; tries=$((tries + 1))
    done
    t_end=$EPOCHREALTIME
    if kill -0 "$survivor" 2>/dev/null; then
        kill -9 "$vpid" 2>/dev/null
        cat "$dir/survivor.log" >&2
        fail "$how: the survivor still runs $limit s after the victim died: hang"
    fi
    wait "$survivor" || src=$?
    [ "$how" = stop ] && kill -9 "$vpid" 2>/dev/null
    wait "$victim" 2>/dev/null
    echo "--- $how: victim:"; cat "$dir/victim.log"
    echo "--- $how: survivor rc=$src:"; cat "$dir/survivor.log"
    local t_err
    t_err=$(sed -n 's/.*first error completion.*at epoch \([0-9.]*\).*/\1/p' "$dir/survivor.log")
    awk -v h="$how" -v a="$t_kill" -v b="$t_end" -v e="${t_err:-0}" 'BEGIN {
        if (e > 0) printf "%s: first error completion %.3f s after the signal\n", h, e - a
        printf "%s: survivor exited within %.2f s of the signal\n", h, b - a }'
    [ $src -eq 0 ] || return 1
    grep -q 'error completions [1-9]' "$dir/survivor.log" || return 1
}

killed_peer kill || fail "survivor of a kill -9'd peer (FI_CXI_UDP_RETRY_LIMIT=$FI_CXI_UDP_RETRY_LIMIT)"
ok "survivor of kill -9: error completions, nothing pending, exit 0"
killed_peer stop || fail "survivor of a stopped peer (FI_CXI_UDP_RETRY_LIMIT=$FI_CXI_UDP_RETRY_LIMIT)"
ok "survivor of a silent (SIGSTOPped) peer: error completions, nothing pending, exit 0"

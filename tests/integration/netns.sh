# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# shellcheck shell=bash
# Two-host test bed on one machine (sourced): two network namespaces joined by a veth
# pair, so that cxi's UDP transport, fi_pingpong's TCP address exchange and Open MPI's
# TCP wire-up really cross a network interface.
#
#   . "$(dirname "$0")/netns.sh"
#   netns_require_root          # exit 77 (ctest SKIP_RETURN_CODE) where that is impossible
#   netns_up [mtu]              # NS_A/NS_B, IP_A/IP_B, NS_IF, NS_NET exported; torn down at exit
#   netns_mtu MTU               # change the MTU of both veth ends
#   netns_drop PERCENT          # each namespace drops PERCENT % of the UDP it receives
#   in_a CMD... / in_b CMD...   # run CMD in A / B, with FI_CXI_SOFT_NICS set to that host's IP
#   netns_atexit CMD            # one more command to run at teardown (temp dirs ...)
#   netns_pingpong PORT ARGS... # fi_pingpong -p $PROV, server in A, client in B
#
# More hosts: netns_up_hosts N [mtu] makes N namespaces NS_HOSTS[0..N-1] (addresses
# IP_HOSTS[i] = 10.78.M.(i+1)/24) whose veths meet on a bridge in a hub namespace;
# in_host I CMD... runs CMD in host I; netns_drop_hosts PERCENT drops there.
#
# Safe under set -e. The EXIT trap belongs to this library: use netns_atexit.
#
# Addresses: 10.77.N.1 (A) and 10.77.N.2 (B), N = 1 + $$ % 250. Namespaces are
# isolated, so equal subnets in parallel runs would not clash anyway; a per-run N only
# makes the logs of concurrent runs tell apart. cxi's NIC address is the low 20 bits of
# that address, so both hosts sit in the same /12 as the provider requires.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NETNS_PREFIX=${NETNS_PREFIX:-sn}
NETNS_ATEXIT=()
NS_HOSTS=()  # netns_up_hosts
IP_HOSTS=()

netns_require_root() {
    local probe="${NETNS_PREFIX}-probe-$$"
    if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null 2>&1 ||
        ! ip netns add "$probe" 2>/dev/null; then
        echo "SKIP: needs root and network namespaces"
        exit 77
    fi
    if ! ip netns exec "$probe" true 2>/dev/null; then
        ip netns del "$probe" 2>/dev/null || true
        echo "SKIP: needs root and network namespaces"
        exit 77
    fi
    ip netns del "$probe"
}

# Namespaces of earlier runs that died without teardown (a ctest timeout kills with
# SIGKILL): ours are named <prefix>-a-<pid> / <prefix>-b-<pid>; remove those whose
# creating shell is gone, together with whatever of those runs still lives in them.
netns_reap_stale() {
    local ns pid p
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
        case $ns in
        "$NETNS_PREFIX"-a-* | "$NETNS_PREFIX"-b-* | "$NETNS_PREFIX"-h[0-9]*-* | \
            "$NETNS_PREFIX"-hub-*) pid=${ns##*-} ;;
        *) continue ;;
        esac
        [[ $pid =~ ^[0-9]+$ ]] || continue
        kill -0 "$pid" 2>/dev/null && continue
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
        ip netns del "$ns" 2>/dev/null || true
    done
}

netns_atexit() { NETNS_ATEXIT+=("$*"); }

netns_down() {
    local ns p c
    for c in "${NETNS_ATEXIT[@]}"; do eval "$c" 2>/dev/null || true; done
    NETNS_ATEXIT=()
    for ns in ${NS_A:-} ${NS_B:-} "${NS_HOSTS[@]}" ${NS_HUB:-}; do
        # Only processes this run started can live in its namespaces.
        for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
        ip netns del "$ns" 2>/dev/null || true
    done
    return 0
}

netns_up() {
    local mtu=${1:-1500}
    netns_reap_stale
    NS_A="${NETNS_PREFIX}-a-$$"
    NS_B="${NETNS_PREFIX}-b-$$"
    NS_IF=snveth  # the same name on both sides (each lives in its own namespace)
    local n=$((1 + $$ % 250))
    NS_NET="10.77.$n.0/24"
    IP_A="10.77.$n.1"
    IP_B="10.77.$n.2"
    export NS_A NS_B NS_IF NS_NET IP_A IP_B
    trap netns_down EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    ip netns add "$NS_A" || fail "ip netns add $NS_A"
    ip netns add "$NS_B" || fail "ip netns add $NS_B"
    ip link add name "$NS_IF" netns "$NS_A" mtu "$mtu" type veth \
        peer name "$NS_IF" netns "$NS_B" mtu "$mtu" || fail "veth pair (mtu $mtu)"
    ip -n "$NS_A" addr add "$IP_A/24" dev "$NS_IF" || fail "address $IP_A"
    ip -n "$NS_B" addr add "$IP_B/24" dev "$NS_IF" || fail "address $IP_B"
    local ns
    for ns in "$NS_A" "$NS_B"; do
        ip -n "$ns" link set lo up || fail "lo up in $ns"
        ip -n "$ns" link set "$NS_IF" up || fail "$NS_IF up in $ns"
    done
    # A veth carries traffic once both ends are up: wait for that before the first packet.
    local tries=0
    until ip -n "$NS_A" -o link show dev "$NS_IF" | grep -q 'state UP' &&
        ip -n "$NS_B" -o link show dev "$NS_IF" | grep -q 'state UP'; do
        tries=$((tries + 1))
        [ $tries -lt 50 ] || fail "veth $NS_IF did not come up"
        sleep 0.1
    done
    echo "netns: $NS_A ($IP_A) <-> $NS_B ($IP_B) over $NS_IF, mtu $mtu"
}

# Change the MTU of both ends of the veth.
netns_mtu() {
    local mtu=${1:?mtu}
    ip -n "$NS_A" link set dev "$NS_IF" mtu "$mtu" || fail "mtu $mtu in $NS_A"
    ip -n "$NS_B" link set dev "$NS_IF" mtu "$mtu" || fail "mtu $mtu in $NS_B"
    echo "netns: mtu $mtu"
}

# Random loss of UDP in both directions: each namespace drops PERCENT % of the UDP
# packets it receives. Input hooks only: a drop in an output hook makes the sender's
# sendto() fail with EPERM, which is not what a lossy wire looks like. TCP is untouched,
# so fi_pingpong's address exchange and Open MPI's wire-up keep working.
netns_drop() {
    netns_drop_in "${1:?percent}" "$NS_A" "$NS_B"
    echo "netns: dropping $1 % of the UDP packets arriving in $NS_A and in $NS_B"
}

# Packets dropped so far by netns_drop's rules (both namespaces together).
netns_drop_count() { netns_drop_count_in "$NS_A" "$NS_B"; }

# The rule itself, in each namespace named (replacing an earlier one).
netns_drop_in() {
    local pct=$1 ns
    shift
    if ! [[ $pct =~ ^[0-9]+$ ]] || [ "$pct" -gt 100 ]; then
        fail "netns_drop: bad percentage $pct"
    fi
    for ns in "$@"; do
        ip netns exec "$ns" nft -f - <<EOF || fail "nftables drop rule in $ns"
table inet softnic_loss
delete table inet softnic_loss
table inet softnic_loss {
    chain in {
        type filter hook input priority 0; policy accept;
        meta l4proto udp numgen random mod 100 < $pct counter drop
    }
}
EOF
    done
}

netns_drop_count_in() {
    local ns
    for ns in "$@"; do
        ip netns exec "$ns" nft list table inet softnic_loss 2>/dev/null
    done | awk '/counter packets/ { for (i = 1; i < NF; i++) if ($i == "packets") s += $(i + 1) }
                END { print s + 0 }'
}

# UDP datagrams sent from B so far plus those received there (after netns_drop's
# rules), to tell whether UDP traffic crossed the veth at all.
netns_udp_count() {
    ip netns exec "$NS_B" cat /proc/net/snmp |
        awk '$1 == "Udp:" && $2 ~ /^[0-9]+$/ { print $2 + $5 }'
}

in_a() { ip netns exec "$NS_A" env FI_CXI_SOFT_NICS="$IP_A" "$@"; }
in_b() { ip netns exec "$NS_B" env FI_CXI_SOFT_NICS="$IP_B" "$@"; }

# fi_pingpong between the hosts: server in A, client in B (connecting to IP_A), both
# given the remaining arguments; PROV names the provider. Fails when either side fails;
# prints the client's output, and the server's when something went wrong.
netns_pingpong() {
    local port=$1; shift
    local log; log=$(mktemp)
    in_a timeout "${PP_TIMEOUT:-120}" fi_pingpong -p "$PROV" -B "$port" "$@" >"$log" 2>&1 &
    local server=$!
    local tries=0
    until ip netns exec "$NS_A" ss -ltn 2>/dev/null | grep -q ":$port " || [ $tries -ge 50 ]; do
        sleep 0.1; tries=$((tries + 1))
    done
    local crc=0 src=0
    in_b timeout "${PP_TIMEOUT:-120}" fi_pingpong -p "$PROV" -P "$port" "$@" "$IP_A" || crc=$?
    wait $server || src=$?
    if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
        echo "--- fi_pingpong client rc=$crc, server rc=$src; server output:" >&2
        cat "$log" >&2
        rm -f "$log"
        return 1
    fi
    rm -f "$log"
}

# ---- N hosts on one bridge --------------------------------------------------------

netns_up_hosts() {
    local n=${1:?host count} mtu=${2:-1500} i ns
    netns_reap_stale
    trap netns_down EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    NS_HUB="${NETNS_PREFIX}-hub-$$"
    NS_IF=snveth
    local m=$((1 + $$ % 250))
    NS_NET="10.78.$m.0/24"
    ip netns add "$NS_HUB" || fail "ip netns add $NS_HUB"
    ip -n "$NS_HUB" link add name snbr type bridge || fail "bridge in $NS_HUB"
    ip -n "$NS_HUB" link set snbr up || fail "bridge up"
    for ((i = 0; i < n; i++)); do
        ns="${NETNS_PREFIX}-h$i-$$"
        NS_HOSTS+=("$ns")
        IP_HOSTS+=("10.78.$m.$((i + 1))")
        ip netns add "$ns" || fail "ip netns add $ns"
        ip link add name "$NS_IF" netns "$ns" mtu "$mtu" type veth \
            peer name "snp$i" netns "$NS_HUB" mtu "$mtu" || fail "veth for host $i"
        ip -n "$NS_HUB" link set "snp$i" master snbr up || fail "snp$i on the bridge"
        ip -n "$ns" addr add "${IP_HOSTS[$i]}/24" dev "$NS_IF" || fail "address ${IP_HOSTS[$i]}"
        ip -n "$ns" link set lo up || fail "lo up in $ns"
        ip -n "$ns" link set "$NS_IF" up || fail "$NS_IF up in $ns"
    done
    export NS_IF NS_NET NS_HUB
    # A bridge without STP forwards as soon as its ports are up: wait for every link.
    local tries=0 link
    for ((i = 0; i < n; i++)); do
        for link in "${NS_HOSTS[$i]} $NS_IF" "$NS_HUB snp$i"; do
            set -- $link
            until ip -n "$1" -o link show dev "$2" | grep -q 'state UP'; do
                tries=$((tries + 1))
                [ $tries -lt 100 ] || fail "link $2 in $1 did not come up"
                sleep 0.1
            done
        done
    done
    echo "netns: $n hosts ${IP_HOSTS[*]} on a bridge in $NS_HUB, mtu $mtu"
}

in_host() {
    local i=$1
    shift
    ip netns exec "${NS_HOSTS[$i]}" env FI_CXI_SOFT_NICS="${IP_HOSTS[$i]}" "$@"
}

# netns_drop for the hosts of netns_up_hosts: each drops PERCENT % of the UDP it receives.
netns_drop_hosts() { netns_drop_in "${1:?percent}" "${NS_HOSTS[@]}"; }

# Packets dropped so far by netns_drop_hosts' rules, all hosts together.
netns_drop_count_hosts() { netns_drop_count_in "${NS_HOSTS[@]}"; }

# Open MPI across the hosts of netns_up_hosts: DIR/agent, the "rsh agent" mpirun calls
# as `agent [ssh-like options] hostI command...`, runs the command in host I's namespace
# with FI_CXI_SOFT_NICS set to its address; DIR/hosts lists host0.. with SLOTS each.
netns_mpi_hosts() {
    local dir=${1:?directory} slots=${2:-1} i
    {
        echo '#!/bin/sh'
        echo 'while [ $# -gt 0 ]; do case $1 in -*) shift ;; *) break ;; esac; done'
        echo 'host=$1; shift'
        echo 'case $host in'
        for ((i = 0; i < ${#NS_HOSTS[@]}; i++)); do
            echo "host$i) ns=${NS_HOSTS[$i]} ip=${IP_HOSTS[$i]} ;;"
        done
        echo '*) echo "agent: unknown host $host" >&2; exit 255 ;;'
        echo 'esac'
        echo 'exec ip netns exec "$ns" env FI_CXI_SOFT_NICS="$ip" /bin/sh -c "$*"'
    } >"$dir/agent"
    chmod +x "$dir/agent"
    for ((i = 0; i < ${#NS_HOSTS[@]}; i++)); do echo "host$i slots=$slots"; done >"$dir/hosts"
}

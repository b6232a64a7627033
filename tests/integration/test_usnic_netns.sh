#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# usnic between two hosts: network namespaces A and B joined by a veth (netns.sh), server
# in A, client in B. fi_info sees the veth as usnic_0 (named by FI_USNIC_IFACES, and found
# by default since loopback is left out); fi_pingpong (Debian's libfabric-bin) runs over
# DGRAM, MSG and RDM with data checks and every result line checked, at mtu 1500 and 9000,
# asserting each time that UDP datagrams crossed the veth; last MSG and RDM under 10 %
# random UDP loss both ways (nftables) plus FI_USNIC_FAULTS duplicates, reordering and
# delays. DGRAM is not run under loss: it is unreliable by definition.
#
# PINGPONG_PORT (default 47850), NETNS_LOSS (10), USNIC_FAULTS (dup=3,reorder=3,delay=1,...).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/netns.sh"
. "$here/usnic_lib.sh"
set -euo pipefail
trap 'echo "FAIL: $0 line $LINENO: a command exited $?" >&2' ERR
netns_require_root
command -v fi_pingpong >/dev/null || { echo "SKIP: no fi_pingpong"; exit 77; }
PROV=usnic # netns_pingpong runs fi_pingpong -p $PROV
export PROV
port=${PINGPONG_PORT:-47850} # each namespace has its own port space
export PP_TIMEOUT=${PP_TIMEOUT:-60}
unset FI_USNIC_FAULTS

netns_up 1500
export FI_USNIC_IFACES=$NS_IF
dir=$(mktemp -d)
netns_atexit "rm -rf '$dir'"

# ---- fi_info in a namespace ---------------------------------------------------------------
for how in named default; do
    if [ $how = named ]; then
        out=$(in_a bash -c ". '$here/usnic_lib.sh'; usnic_fi_info") || fail "fi_info -p usnic in $NS_A"
    else
        out=$(in_a env -u FI_USNIC_IFACES bash -c ". '$here/usnic_lib.sh'; usnic_fi_info") ||
            fail "fi_info -p usnic in $NS_A, FI_USNIC_IFACES unset"
    fi
    for t in DGRAM MSG RDM; do
        grep -q "type: *FI_EP_$t\$" <<<"$out" || fail "$how: no FI_EP_$t"
    done
    [ "$(grep -c 'domain: usnic_0' <<<"$out")" -eq 3 ] ||
        fail "$how: expected usnic_0 once per endpoint type"
    grep -q 'domain: usnic_[1-9]' <<<"$out" && fail "$how: more than one usnic device (lo?)"
    grep -q "fabric: $NS_NET\$" <<<"$out" || fail "$how: fabric name is not $NS_NET"
    ok "fi_info in $NS_A, interface $how: usnic_0 = $NS_NET, DGRAM MSG RDM"
done

# pp ITERS ARGS...: fi_pingpong server in A, client in B, both given -I ITERS and ARGS;
# checks the client's result lines against PP_SIZES and that UDP crossed the veth.
pp() {
    local iters=$1 before after
    shift
    port=$((port + 1))
    before=$(netns_udp_count)
    netns_pingpong "$port" -I "$iters" "$@" >"$dir/client.log" || {
        cat "$dir/client.log"
        return 1
    }
    after=$(netns_udp_count)
    cat "$dir/client.log"
    pp_check_output "$dir/client.log" "$iters" "${PP_SIZES[@]}" || return 1
    echo "udp datagrams in/out of B: $((after - before))"
    if [ "$after" -le "$before" ]; then
        echo "no UDP datagram crossed the veth" >&2
        return 1
    fi
}

# dgram_max MTU: DGRAM's max_msg_size for fi_pingpong's hints, seen in A; must be MTU - 28.
dgram_max() {
    local m
    m=$(in_a bash -c ". '$here/usnic_lib.sh'; usnic_max_msg DGRAM")
    [[ $m =~ ^[0-9]+$ ]] || fail "no DGRAM max_msg_size from fi_info in $NS_A"
    [ "$m" -eq $(($1 - 28)) ] || fail "DGRAM max_msg_size $m at mtu $1, expected $(($1 - 28))"
    echo "$m"
}

# ---- mtu 1500 -----------------------------------------------------------------------------
dmax=$(dgram_max 1500)
read -ra PP_SIZES <<<"$(pp_all_sizes "$dmax")"
pp 5 -e dgram -c -S all || fail "dgram, every size up to $dmax, mtu 1500"
ok "fi_pingpong -e dgram -c -S all, mtu 1500"
PP_SIZES=("$dmax")
pp 20 -e dgram -c -S "$dmax" || fail "dgram at max_msg_size $dmax, mtu 1500"
ok "fi_pingpong -e dgram -c -S $dmax (max_msg_size), mtu 1500"
PP_SIZES=(940)
pp 50 -e dgram -c -S 940 || fail "dgram, 940 bytes (injected with the prefix), mtu 1500"
ok "fi_pingpong -e dgram -c -S 940 -I 50, mtu 1500"
for t in msg rdm; do
    read -ra PP_SIZES <<<"$(pp_all_sizes $((6 << 20)))"
    pp 5 -e $t -c -S all || fail "$t, every size, mtu 1500"
    ok "fi_pingpong -e $t -c -S all, mtu 1500"
    PP_SIZES=(8)
    pp 1000 -e $t -c -S 8 || fail "$t, 8 bytes x 1000, mtu 1500"
    ok "fi_pingpong -e $t -c -S 8 -I 1000, mtu 1500"
done

# ---- mtu 9000 -----------------------------------------------------------------------------
netns_mtu 9000
dmax=$(dgram_max 9000)
for s in 4096 "$dmax"; do
    PP_SIZES=("$s")
    pp 20 -e dgram -c -S "$s" || fail "dgram, $s bytes, mtu 9000"
    ok "fi_pingpong -e dgram -c -S $s, mtu 9000"
done
for t in msg rdm; do
    for s in 8972 65536 1048576; do
        PP_SIZES=("$s")
        pp 10 -e $t -c -S $s || fail "$t, $s bytes, mtu 9000"
        ok "fi_pingpong -e $t -c -S $s -I 10, mtu 9000"
    done
done

# ---- mtu 1500, loss and faults ------------------------------------------------------------
netns_mtu 1500
netns_drop "${NETNS_LOSS:-10}"
export FI_USNIC_FAULTS=${USNIC_FAULTS:-dup=3,reorder=3,delay=1,delay_us=300,seed=11}
echo "FI_USNIC_FAULTS=$FI_USNIC_FAULTS"
for t in msg rdm; do
    for run in "8 200" "4096 50" "65536 20" "1048576 3"; do
        read -r s iters <<<"$run"
        PP_SIZES=("$s")
        pp "$iters" -e $t -c -S "$s" ||
            fail "$t, $s bytes x $iters, under loss and FI_USNIC_FAULTS=$FI_USNIC_FAULTS"
        ok "fi_pingpong -e $t -c -S $s -I $iters under loss"
    done
done
unset FI_USNIC_FAULTS
dropped=$(netns_drop_count)
echo "UDP datagrams dropped by nftables: $dropped"
[ "${NETNS_LOSS:-10}" -eq 0 ] || [ "$dropped" -gt 0 ] ||
    fail "nothing was dropped: the loss runs did not go over UDP"
ok "fi_pingpong over usnic across namespaces: dgram, msg, rdm"

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# fi_pingpong (Debian's libfabric-bin) between two hosts: network namespaces A and B
# joined by a veth, server in A, client in B, data checked. With cxi every byte crosses
# the veth in UDP datagrams (asserted from B's UDP counters), last under random loss
# (nftables) plus the provider's own fault injection (duplicates, reordering, delays).
#
# NETNS_PROV=tcp or NETNS_PROV="udp;ofi_rxd" runs the same script with one of
# libfabric's own providers, to check the test bed itself (the UDP assertions hold for
# cxi and udp;ofi_rxd, not for tcp).
. "$(dirname "$0")/netns.sh"
netns_require_root
command -v fi_pingpong >/dev/null || { echo "SKIP: no fi_pingpong"; exit 77; }
PROV=${NETNS_PROV:-cxi}
case $PROV in cxi | udp*) over_udp=1 ;; *) over_udp=0 ;; esac
port=${PINGPONG_PORT:-47800}  # each namespace has its own port space
export PP_TIMEOUT=${PP_TIMEOUT:-60}

netns_up 9000

# Runs netns_pingpong; over UDP (cxi, udp;ofi_rxd) also checks that datagrams crossed
# the veth: a transport that took another way (shared memory) fails here.
pp() {
    local before after
    before=$(netns_udp_count)
    netns_pingpong "$port" -e rdm -c "$@" || return 1
    after=$(netns_udp_count)
    echo "udp datagrams in/out of B: $((after - before))"
    if [ $over_udp = 1 ] && [ "$after" -le "$before" ]; then
        echo "no UDP datagram crossed the veth: not the UDP transport" >&2
        return 1
    fi
}

pp -S all -I 5 || fail "rdm msg, every size, mtu 9000"
ok "fi_pingpong -e rdm -c -S all, mtu 9000"
pp -S all -I 5 -m tagged || fail "rdm tagged, every size, mtu 9000"
ok "fi_pingpong -e rdm -m tagged -c -S all, mtu 9000"
pp -S 8 -I 1000 || fail "rdm msg, 8 bytes, 1000 iterations"
ok "fi_pingpong -e rdm -c -S 8 -I 1000"

netns_mtu 1500
pp -S all -I 5 || fail "rdm msg, every size, mtu 1500"
ok "fi_pingpong -e rdm -c -S all, mtu 1500"
pp -S all -I 5 -m tagged || fail "rdm tagged, every size, mtu 1500"
ok "fi_pingpong -e rdm -m tagged -c -S all, mtu 1500"

# Loss on the wire and faults in the provider, both directions, mtu 1500 (1 MiB is
# then ~700 datagrams a message, ~70 of them lost).
netns_drop "${NETNS_LOSS:-10}"
export FI_CXI_FAULTS=${NETNS_FAULTS:-dup=5,reorder=5,delay=2}
for run in "8 200 msg" "4096 200 tagged" "65536 50 msg" "1048576 10 tagged"; do
    read -r size iters mode <<<"$run"
    pp -S "$size" -I "$iters" -m "$mode" ||
        fail "rdm $mode, $size bytes x $iters, under loss and FI_CXI_FAULTS=$FI_CXI_FAULTS"
    ok "fi_pingpong -e rdm -m $mode -c -S $size -I $iters under loss"
done
unset FI_CXI_FAULTS
dropped=$(netns_drop_count)
echo "UDP datagrams dropped by nftables: $dropped"
if [ $over_udp = 1 ] && [ "$dropped" -eq 0 ]; then
    fail "nothing was dropped: the loss runs did not go over UDP"
fi
ok "fi_pingpong across namespaces with $PROV"

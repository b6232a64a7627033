#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# VNI isolation between hosts: fi_pingpong between namespaces A and B, each given its
# VNI as a launcher gives it (SLINGSHOT_* variables). The same VNI talks; other VNIs
# fail at once with an error instead of hanging, whether their UDP ports differ (VNIs 1
# and 10) or coincide (VNIs 3 and 19, refused by the receiving soft NIC). Messages are
# 1 KiB: fi_pingpong injects smaller ones, and a failed inject completes nothing.
. "$(dirname "$0")/netns.sh"
netns_require_root
command -v fi_pingpong >/dev/null || { echo "SKIP: no fi_pingpong"; exit 77; }
PROV=cxi
CXI_SERVICE=${CXI_SERVICE:?path of cxi_service}
port=${PINGPONG_PORT:-47900}

netns_up 1500
registry=$(mktemp -d) && chmod 755 "$registry"
netns_atexit rm -rf "$registry"
export SOFTNIC_CXI_SERVICES=$registry SLINGSHOT_DEVICES=cxi0
printf 'restricted_vnis: 1\nvnis:\n  vni: 3\n  vni: 19\n' >"$registry/vnis.yaml"
svc=$(FI_CXI_SOFT_NICS=$IP_A "$CXI_SERVICE" create -y "$registry/vnis.yaml" |
      sed -n 's/^Successfully created service: //p')
[ -n "$svc" ] || fail "cxi_service create"
ok "service $svc allows VNIs 3 and 19"

# Server in A on VNI $1, client in B on VNI $2, service $3; prints the client's rc.
pair() {
    local va=$1 vb=$2 s=$3 log; log=$(mktemp)
    port=$((port + 1))
    in_a env SLINGSHOT_VNIS="$va" SLINGSHOT_SVC_IDS="$s" \
        timeout 20 fi_pingpong -p cxi -e rdm -B "$port" -S 1024 -I 20 >"$log" 2>&1 &
    local server=$! tries=0
    until ip netns exec "$NS_A" ss -ltn 2>/dev/null | grep -q ":$port " || [ $tries -ge 50 ]; do
        sleep 0.1; tries=$((tries + 1))
    done
    local crc=0
    in_b env SLINGSHOT_VNIS="$vb" SLINGSHOT_SVC_IDS="$s" \
        timeout 20 fi_pingpong -p cxi -e rdm -P "$port" -S 1024 -I 20 "$IP_A" >>"$log" 2>&1 || crc=$?
    kill "$server" 2>/dev/null; wait "$server" 2>/dev/null
    [ "$crc" -ne 0 ] && tail -5 "$log" | sed 's/^/    /' >&2
    rm -f "$log"
    echo "$crc"
}

rc=$(pair 10 10 1 | tail -1); [ "$rc" = 0 ] || fail "same VNI (10) must talk, rc $rc"
ok "VNI 10 to VNI 10 talks"
rc=$(pair 3 3 "$svc" | tail -1); [ "$rc" = 0 ] || fail "same VNI (3) must talk, rc $rc"
ok "VNI 3 to VNI 3 talks"
rc=$(pair 10 1 1 | tail -1)
[ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "VNI 1 to VNI 10 must fail promptly, rc $rc"
ok "VNI 1 to VNI 10 fails (rc $rc)"
rc=$(pair 3 19 "$svc" | tail -1)
[ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "VNI 19 to VNI 3 must fail promptly, rc $rc"
ok "VNI 19 to VNI 3 (one UDP port space) fails (rc $rc)"

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# usnic over loopback (FI_USNIC_IFACES=lo: usnic_0 is 127.0.0.1/8): fi_info offers the three
# endpoint types with their attributes, and fi_pingpong (Debian's libfabric-bin) runs
# between two processes over DGRAM, MSG and RDM, data checked (-c), every result line
# checked: each size fi_pingpong should run, #sent = #ack = the iterations.
#
# PINGPONG_PORT: first control port (default 47750; this script uses the next 10).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/usnic_lib.sh"
set -euo pipefail
trap 'echo "FAIL: $0 line $LINENO: a command exited $?" >&2' ERR
command -v fi_pingpong >/dev/null || { echo "SKIP: no fi_pingpong"; exit 77; }
export FI_USNIC_IFACES=lo
unset FI_USNIC_FAULTS
port=${PINGPONG_PORT:-47750}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# ---- fi_info ----------------------------------------------------------------------------
out=$(usnic_fi_info) || fail "fi_info -p usnic exited non-zero"
for t in DGRAM MSG RDM; do
    grep -q "type: *FI_EP_$t\$" <<<"$out" || fail "fi_info -p usnic: no FI_EP_$t"
done
grep -q "provider: usnic" <<<"$out" || fail "provider usnic not listed"
[ "$(grep -c 'domain: usnic_0' <<<"$out")" -eq 3 ] ||
    fail "expected usnic_0 three times (DGRAM, MSG, RDM) with FI_USNIC_IFACES=lo"
grep -q 'domain: usnic_[1-9]' <<<"$out" && fail "FI_USNIC_IFACES=lo offers more than usnic_0"
grep -q 'fabric: 127.0.0.0/8' <<<"$out" || fail "fabric name is not 127.0.0.0/8"
ok "fi_info -p usnic: usnic_0 (127.0.0.0/8) with FI_EP_DGRAM, FI_EP_MSG, FI_EP_RDM"

for t in MSG RDM; do
    v=$(usnic_fi_info -t FI_EP_$t -v) || fail "fi_info -t FI_EP_$t -v"
    grep -q "type: FI_EP_$t" <<<"$v" || fail "fi_info -t FI_EP_$t gave another type"
    grep -q "addr_format: FI_SOCKADDR_IN\$" <<<"$v" || fail "$t: addr_format not FI_SOCKADDR_IN"
    grep -q "max_msg_size: 4294967295" <<<"$v" || fail "$t: max_msg_size is not UINT32_MAX"
    grep -q "inject_size: 64\$" <<<"$v" || fail "$t: inject_size is not 64"
done
v=$(usnic_fi_info -t FI_EP_DGRAM -v) || fail "fi_info -t FI_EP_DGRAM -v"
grep -q "addr_format: FI_SOCKADDR_IN\$" <<<"$v" || fail "DGRAM: addr_format not FI_SOCKADDR_IN"
grep -q "protocol: FI_PROTO_UDP" <<<"$v" || fail "DGRAM: protocol is not FI_PROTO_UDP"
ok "fi_info -v: SOCKADDR_IN; MSG/RDM max_msg_size 4294967295, inject_size 64; DGRAM over UDP"

# Tagged messages are not usnic's own (utility providers layered over it may offer them).
out=$(fi_info -p usnic -c FI_TAGGED 2>/dev/null | tr -d '\0' || true)
grep -q '^provider: usnic$' <<<"$out" && fail "fi_info -p usnic -c FI_TAGGED offers usnic itself"
# An interface that does not exist gives no usnic device at all.
rc=0
FI_USNIC_IFACES=nosuchif0 fi_info -p usnic >/dev/null 2>&1 || rc=$?
[ $rc -eq 61 ] || fail "FI_USNIC_IFACES=nosuchif0 gave exit $rc, expected 61 (FI_ENODATA)"
ok "no FI_TAGGED from usnic itself; an unknown interface -> FI_ENODATA"
vars=$(fi_info -p usnic -e | tr -d '\0') || fail "fi_info -p usnic -e"
for var in IFACES FAULTS DEAD_TIMEOUT; do
    grep -q "FI_USNIC_$var\b" <<<"$vars" || fail "FI_USNIC_$var is not listed by fi_info -e"
done
ok "fi_info -e lists FI_USNIC_IFACES, FI_USNIC_FAULTS and FI_USNIC_DEAD_TIMEOUT"

# ---- fi_pingpong ------------------------------------------------------------------------
# pp PORT ITERS ARGS...: server and client on 127.0.0.1, both given ARGS (and -I ITERS);
# both must exit 0. The client's output is left in $dir/client.log.
pp() {
    local p=$1 iters=$2 src=0 crc=0
    shift 2
    timeout 120 fi_pingpong -p usnic -B "$p" -I "$iters" "$@" >"$dir/server.log" 2>&1 &
    local server=$!
    local tries=0
    until ss -ltn 2>/dev/null | grep -q ":$p " || [ $tries -ge 50 ]; do
        sleep 0.1
        tries=$((tries + 1))
    done
    timeout 120 fi_pingpong -p usnic -P "$p" -I "$iters" "$@" 127.0.0.1 >"$dir/client.log" 2>&1 ||
        crc=$?
    [ $crc -eq 0 ] || kill $server 2>/dev/null || true # it would wait for the client forever
    wait $server || src=$?
    cat "$dir/client.log"
    if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
        echo "--- fi_pingpong $* : client rc=$crc, server rc=$src; server output:" >&2
        cat "$dir/server.log" >&2
        return 1
    fi
    pp_check_output "$dir/server.log" "$iters" "${PP_SIZES[@]}" || {
        echo "--- (server output)" >&2
        return 1
    }
    pp_check_output "$dir/client.log" "$iters" "${PP_SIZES[@]}"
}

# DGRAM: fi_pingpong keeps its sizes within max_msg_size itself (it adds the 64-byte
# prefix on top); -S all must then run every size up to that, and the largest size
# usnic advertises must really go through.
dmax=$(usnic_max_msg DGRAM)
[[ $dmax =~ ^[0-9]+$ ]] || fail "no DGRAM max_msg_size from fi_info"
echo "usnic DGRAM max_msg_size (fi_pingpong's hints, lo): $dmax"
read -ra PP_SIZES <<<"$(pp_all_sizes "$dmax")"
pp "$port" 5 -e dgram -c -S all || fail "dgram, every size up to $dmax"
ok "fi_pingpong -e dgram -c -S all (${#PP_SIZES[@]} sizes up to ${PP_SIZES[-1]})"
PP_SIZES=(64)
pp $((port + 1)) 500 -e dgram -c -S 64 || fail "dgram, 64 bytes x 500"
ok "fi_pingpong -e dgram -c -S 64 -I 500"
PP_SIZES=("$dmax")
pp $((port + 2)) 5 -e dgram -c -S "$dmax" || fail "dgram at max_msg_size ($dmax bytes)"
ok "fi_pingpong -e dgram -c -S $dmax (max_msg_size)"
# fi_pingpong injects sizes below inject_size (950), prefix included in the length it
# passes: the prefix must not count toward the inject limit (fi_getinfo(3), FI_MSG_PREFIX).
PP_SIZES=(940)
pp $((port + 9)) 50 -e dgram -c -S 940 || fail "dgram, 940 bytes (injected with the prefix)"
ok "fi_pingpong -e dgram -c -S 940 -I 50 (fi_inject of 940 + prefix)"

# MSG and RDM: every size up to fi_pingpong's own 6 MiB, below and above inject_size
# (fi_pingpong injects below it), many small round trips, one size with many iterations.
for t in msg rdm; do
    read -ra PP_SIZES <<<"$(pp_all_sizes $((6 << 20)))"
    pp $((port + 3)) 5 -e $t -c -S all || fail "$t, every size"
    ok "fi_pingpong -e $t -c -S all (${#PP_SIZES[@]} sizes up to 6 MiB)"
    PP_SIZES=(8)
    pp $((port + 4)) 1000 -e $t -c -S 8 || fail "$t, 8 bytes x 1000"
    ok "fi_pingpong -e $t -c -S 8 -I 1000"
    PP_SIZES=(65536)
    pp $((port + 5)) 100 -e $t -c -S 65536 || fail "$t, 64 KiB x 100"
    ok "fi_pingpong -e $t -c -S 65536 -I 100"
    port=$((port + 3))
done
ok "fi_pingpong over usnic on loopback: dgram, msg, rdm"

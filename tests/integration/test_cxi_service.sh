#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# cxi_service and cxi_stat as an administrator uses them, and a service's members
# enforced on a real client: a user the test makes may run fi_pingpong on the service
# it is a member of; root, not a member, is refused. Root only (services are root's).
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
CXI_SERVICE=${CXI_SERVICE:?} CXI_STAT=${CXI_STAT:?}
registry=$(mktemp -d) && chmod 755 "$registry"
user=softnic-svc-test
cleanup() { rm -rf "$registry"; userdel "$user" 2>/dev/null; true; }
trap cleanup EXIT
export SOFTNIC_CXI_SERVICES=$registry FI_CXI_SOFT_NICS=127.0.0.1

out=$("$CXI_SERVICE" list) || fail "list"
grep -q '^ ID: 1 (DEFAULT)$' <<<"$out" || fail "the default service is listed: $out"
grep -q 'Enabled            : Yes' <<<"$out" || fail "the default service is enabled"
ok "cxi_service list shows the default service"
out=$("$CXI_SERVICE" delete -s 1 2>&1) && fail "deleted the default service"
grep -q "Default service cannot be deleted." <<<"$out" || fail "delete -s 1: $out"
out=$("$CXI_SERVICE" bogus 2>&1) && fail "accepted an unknown command"
grep -q "Unexpected argument: bogus" <<<"$out" || fail "unknown command: $out"
"$CXI_SERVICE" -V | grep -q "^cxi_service version: " || fail "-V"
ok "cxi_service refuses what it should"

id "$user" >/dev/null 2>&1 || useradd --no-create-home --shell /usr/sbin/nologin "$user" ||
    fail "useradd"
uid=$(id -u "$user")
cat >"$registry/svc.yaml" <<YAML
restricted_members: 1
restricted_vnis: 1
resource_limits: 1
limits:
  - name: ACs
    max: 4
    res: 0
  - name: EQs
    max: 16
    res: 0
  - name: CTs
    max: 16
    res: 0
  - name: PTEs
    max: 8
    res: 0
  - name: TXQs
    max: 8
    res: 0
  - name: TGQs
    max: 8
    res: 0
  - name: LEs
    max: 64
    res: 0
  - name: TLEs
    max: 8
    res: 8
members:
  - type: uid
    id: $uid
vnis:
  vni: 700
tcs:
  tc: BEST_EFFORT
  tc: LOW_LATENCY
YAML
out=$("$CXI_SERVICE" create -y "$registry/svc.yaml") || fail "create: $out"
svc=$(sed -n 's/^Successfully created service: //p' <<<"$out")
[ -n "$svc" ] || fail "no service id in: $out"
out=$("$CXI_SERVICE" list -s "$svc" -v)
grep -q "uid=$uid" <<<"$out" || fail "members listed: $out"
grep -q "VNIs               : 700" <<<"$out" || fail "VNIs listed: $out"
grep -Eq "PTEs \|  8 " <<<"$out" || fail "limits listed: $out"
ok "service $svc created from YAML for uid $uid, VNI 700"
printf 'vnis:\n  vni: 1\n' >"$registry/overlap.yaml"
out=$("$CXI_SERVICE" create -y "$registry/overlap.yaml" 2>&1) && fail "created an overlap"
grep -q "Failed to create service: File exists" <<<"$out" || fail "overlap: $out"
ok "overlapping VNIs are refused"

export SLINGSHOT_VNIS=700 SLINGSHOT_DEVICES=cxi0 SLINGSHOT_SVC_IDS=$svc
PROV=cxi
as_user() { setpriv --reuid="$uid" --regid="$uid" --clear-groups env "$@"; }
# The member runs a pingpong on its service.
log=$(mktemp); chmod 666 "$log"
as_user timeout 60 fi_pingpong -p cxi -e rdm -B 47990 -S 64 -I 20 >"$log" 2>&1 &
server=$!
sleep 0.5
as_user timeout 60 fi_pingpong -p cxi -e rdm -P 47990 -S 64 -I 20 127.0.0.1 ||
    { cat "$log"; fail "the member's pingpong"; }
wait $server || { cat "$log"; fail "the member's pingpong server"; }
ok "a member runs fi_pingpong on service $svc"
# Root is not a member: its domain is refused (fi_pingpong fails at once).
timeout 20 fi_pingpong -p cxi -e rdm -B 47991 -S 64 -I 2 >"$log" 2>&1 &
server=$!
sleep 0.5
rc=0; timeout 20 fi_pingpong -p cxi -e rdm -P 47991 -S 64 -I 2 127.0.0.1 >>"$log" 2>&1 || rc=$?
wait $server
[ "$rc" != 0 ] && [ "$rc" != 124 ] || { cat "$log"; fail "a non-member must be refused (rc $rc)"; }
grep -q "fi_domain" "$log" || { cat "$log"; fail "the refusal comes from fi_domain"; }
ok "a non-member is refused at fi_domain (rc $rc)"
rm -f "$log"
unset SLINGSHOT_VNIS SLINGSHOT_DEVICES SLINGSHOT_SVC_IDS

out=$(as_user "$CXI_SERVICE" disable -s "$svc" 2>&1) && fail "a user disabled a service"
grep -q "Operation not permitted" <<<"$out" || fail "non-root disable: $out"
"$CXI_SERVICE" disable -s "$svc" | grep -q "Successfully disabled service: $svc" || fail "disable"
"$CXI_SERVICE" list -s "$svc" | grep -q "Enabled            : No" || fail "disabled state"
"$CXI_SERVICE" enable -s "$svc" | grep -q "Successfully enabled service: $svc" || fail "enable"
"$CXI_SERVICE" delete -s "$svc" | grep -q "Successfully deleted service: $svc" || fail "delete"
ok "disable, enable, delete (root only)"

# A damaged registry is refused whole, never half used: a traffic-class flag that is
# neither 0 nor 1 (offset 10 of struct cxi_svc_desc, in the last 16-byte-header record).
"$CXI_SERVICE" create -y "$registry/svc.yaml" >/dev/null || fail "create again"
cp "$registry/cxi0.services" "$registry/good"
python3 - "$registry/cxi0.services" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
count = struct.unpack_from("<I", b, 8)[0]
b[16 + (len(b) - 16) // count * (count - 1) + 10] = 2
open(sys.argv[1], "wb").write(b)
PY
out=$("$CXI_SERVICE" list 2>&1) && fail "a damaged registry was listed: $out"
grep -q "Input/output error" <<<"$out" || fail "damaged registry: $out"
mv "$registry/good" "$registry/cxi0.services"
"$CXI_SERVICE" list >/dev/null || fail "the restored registry"
ok "a registry with a bad flag byte is reported damaged (EIO)"

out=$("$CXI_STAT") || fail "cxi_stat"
for label in "Device: cxi0" "NID: " "Link MTU: " "Link state: "; do
    grep -q "$label" <<<"$out" || fail "cxi_stat shows '$label': $out"
done
[ "$("$CXI_STAT" -l)" = cxi0 ] || fail "cxi_stat -l"
"$CXI_STAT" -r -p 1 | grep -q "Rates:" || fail "cxi_stat -r"
ok "cxi_stat"
# The seed's FABTESTS recipe reads a NIC's address from sysfs; on a soft NIC one command
# gives it (cxi_stat -n), and it names that NIC as a destination node.
addr=$("$CXI_STAT" -n -d cxi0) || fail "cxi_stat -n -d cxi0"
nid=$("$CXI_STAT" -d cxi0 | sed -n 's/.*NID: \([0-9]*\) .*/\1/p')
[ -n "$nid" ] && [ "$((addr))" = "$nid" ] || fail "cxi_stat -n says '$addr', the NID line '$nid'"
fi_info -p cxi -n "$addr" -P 10 | grep -q "domain: cxi0" || fail "fi_info -n $addr finds no cxi0"
ok "cxi_stat -n: cxi0 is at $addr, and fi_getinfo takes that address as a node"

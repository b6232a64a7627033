#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Checks tools/wireshark/softnic_cxi.lua against crafted packets (tests/tools/gen_cxi_pcap.py).
# Exit 0: pass; 1: a check failed; 77: skipped (tshark or python3 missing).
# Environment: TSHARK (default tshark), PYTHON (default python3), SOFTNIC_DISSECTOR (the
# .lua to test; default tools/wireshark/softnic_cxi.lua), VERBOSE=1 prints the Info column.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
lua=${SOFTNIC_DISSECTOR:-"$root/tools/wireshark/softnic_cxi.lua"}
gen="$here/gen_cxi_pcap.py"
TSHARK=${TSHARK:-tshark}
PYTHON=${PYTHON:-python3}

if ! command -v "$TSHARK" >/dev/null 2>&1; then
    echo "SKIP: tshark not installed"
    exit 77
fi
if ! command -v "$PYTHON" >/dev/null 2>&1; then
    echo "SKIP: python3 not installed"
    exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/softnic_dissector.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pcap="$tmp/cxi.pcap"
fuzz="$tmp/fuzz.pcap"
"$PYTHON" "$gen" "$pcap" || { echo "FAIL: generator"; exit 1; }
"$PYTHON" "$gen" "$fuzz" --fuzz 2000 || { echo "FAIL: generator (fuzz)"; exit 1; }

failures=0
checks=0
pass() { checks=$((checks + 1)); }
fail() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL: $*"; }

# tshark with the dissector loaded; the root warning on stderr is dropped, the rest kept.
ts() {
    "$TSHARK" -n -X "lua_script:$lua" "$@" 2> >(grep -v 'Running as user' >>"$tmp/stderr")
}

# Frame numbers matching a display filter, space separated.
frames() {
    ts -r "$pcap" -Y "$1" -T fields -e frame.number "${@:2}" | tr '\n' ' ' | sed 's/ $//'
}
expect_frames() {  # FILTER EXPECTED [extra tshark args]
    local got
    got=$(frames "$1" "${@:3}")
    if [ "$got" = "$2" ]; then pass; else fail "filter '$1' ${*:3}: frames '$got', expected '$2'"; fi
}

# --- Info and protocol columns, frame by frame ------------------------------------------
ts -r "$pcap" -T fields -E separator='|' -e frame.number -e _ws.col.Protocol -e _ws.col.Info \
    >"$tmp/info.txt"
expect_info() {  # FRAME PROTOCOL INFO
    local line
    line=$(awk -F'|' -v n="$1" '$1 == n' "$tmp/info.txt")
    if [ "$line" = "$1|$2|$3" ]; then pass; else fail "frame $1: '$line', expected '$1|$2|$3'"; fi
}
expect_info 1 softnic "DATA seq=12 ack=7 MSG tag=0x5 len=8"
expect_info 2 softnic "DATA seq=13 DATA off=4096 len=16 PULLED"
expect_info 3 softnic "ACK ack=20 win=276 sack=0x3"
expect_info 4 softnic "PROBE"
expect_info 5 softnic "DATA seq=14 ack=21 DONE cookie=0xc0ffee TRUNC"
expect_info 6 softnic "DATA seq=15 GET_REQ off=65536 cookie=0xabc"
expect_info 8 softnic "DATA [malformed: 17 bytes]"
expect_info 9 softnic "DATA seq=17 MSG [malformed]"
expect_info 10 softnic "DATA seq=18 MSG len=100 [malformed]"
expect_info 11 softnic "ACK ack=30 win=286"
expect_info 12 softnic "type=9"
expect_info 13 softnic "DATA seq=19 MSG len=1"
expect_info 14 softnic "DATA seq=20 COLL_SMALL key=0x77 call=9 rank=2 len=8"
expect_info 15 softnic "DATA seq=21 SMALL tag=0x9 len=8"
# Garbage on a softnic port stays plain UDP.
if awk -F'|' '$1 == 7 { exit !($2 == "UDP") }' "$tmp/info.txt"; then pass; else
    fail "frame 7 (garbage): $(awk -F'|' '$1 == 7' "$tmp/info.txt"), expected protocol UDP"; fi

# --- Field values (decimal fields and strings via -T fields) ------------------------------
ts -r "$pcap" -T fields -E separator='|' -e frame.number -e softnic.type -e softnic.seq \
    -e softnic.ack -e softnic.window -e softnic_cxi.type -e softnic_cxi.vni \
    -e softnic_cxi.src_pid -e softnic_cxi.payload_len -e softnic_cxi.msg_len \
    -e softnic_cxi.eager_len -e softnic_cxi.offset -e softnic_cxi.src -e softnic.sack.seq \
    -e data.data >"$tmp/fields.txt"
expect_fields() {  # EXPECTED LINE
    if grep -qxF "$1" "$tmp/fields.txt"; then pass; else
        fail "fields: no line '$1'; got '$(awk -F'|' -v n="${1%%|*}" '$1 == n' "$tmp/fields.txt")'"; fi
}
expect_fields "1|1|12|7|263|1|5|5|8|8|8|0|0xd0001:5||736f66746e696321"
expect_fields "2|1|13|0|0|2|5|5|16|8192|4096|4096|0xd0001:5||000102030405060708090a0b0c0d0e0f"
expect_fields "3|2|0|20|276|||||||||21,22|"
expect_fields "4|3|0|0|0||||||||||"
expect_fields "5|1|14|21|277|4|5|7|0|4|0|0|0xd0002:7||"
expect_fields "6|1|15|0|0|3|5|7|0|1048576|0|65536|0xd0002:7||"
expect_fields "11|2|0|30|286||||||||||"

# --- Hex and flag fields via display filters (independent of tshark's print format) ----
expect_frames 'softnic.magic == 0x4e53 && softnic.version == 1' "1 2 3 4 5 6 8 9 10 11 13 14 15"
expect_frames 'softnic.flags.ack_valid == 1' "1 3 5 11"
expect_frames 'softnic.flags.congested == 1 && softnic.flags.duplicate == 1' "3"
expect_frames 'softnic.flags.ack_now == 1' "5"
expect_frames 'softnic.flags.reserved != 0' ""
expect_frames 'softnic.epoch == 0x1111' "1 2 4 8 9 10 13 14 15"
expect_frames 'softnic.ack_epoch == 0x1111' "3 5 11"
expect_frames 'softnic.sack == 0x3' "3"
expect_frames 'softnic_cxi' "1 2 5 6 9 10 13 14 15"
expect_frames 'softnic_cxi.tag == 0x5' "1"
expect_frames 'softnic_cxi.tag == 0x9 && softnic_cxi.cq_data == 0x1234' "15"
expect_frames 'softnic_cxi.flags == 0x0007' "1"
expect_frames 'softnic_cxi.flags.tagged == 1 && softnic_cxi.flags.cq_data == 1 && softnic_cxi.flags.ack_req == 1' "1"
expect_frames 'softnic_cxi.flags.rdzv == 1 || softnic_cxi.flags.whole == 1 || softnic_cxi.flags.error == 1' ""
expect_frames 'softnic_cxi.flags.pulled == 1' "2"
expect_frames 'softnic_cxi.flags.trunc == 1' "5"
expect_frames 'softnic_cxi.src_nic == 0xd0001' "1 2 9 10 13 14 15"
expect_frames 'softnic_cxi.src_nic == 0xd0002' "5 6"
expect_frames 'softnic_cxi.cq_data == 0xdeadbeef' "1"
expect_frames 'softnic_cxi.cookie == 0xc0ffee' "5"
expect_frames 'softnic_cxi.cookie == 0xabc' "6"
expect_frames 'softnic_cxi.rdzv_addr == 0x7f0000001000' "1"
expect_frames 'softnic_cxi.coll.seq == 9 && softnic_cxi.coll.rank == 2 && softnic_cxi.coll.key == 0x77' "14"
expect_frames 'softnic.port.src_pid == 5 && softnic.port.dst_pid == 7 && softnic.port.src_vni16 == 5' \
    "1 2 4 9 10 13 14 15"

# --- Robustness: malformed packets flagged, garbage left alone ------------------------------
expect_frames 'softnic' "1 2 3 4 5 6 8 9 10 11 12 13 14 15"
expect_frames 'softnic.malformed' "8 9 10 12"
expect_frames 'softnic.bad_version' "12"
expect_frames 'softnic.port_mismatch' "13"
expect_frames 'softnic.trailing' ""
expect_frames '_ws.lua.error' ""

# --- Heuristic and the port-base preference ------------------------------------------------
# Frame 11 is on UDP port 9999, found only by the heuristic.
expect_frames 'softnic' "1 2 3 4 5 6 8 9 10 12 13 14 15" --disable-heuristic softnic_udp
# With the base moved, the ports are no longer claimed: only full, valid headers are
# found (by the heuristic); truncated and bad-version packets stay UDP.
expect_frames 'softnic' "1 2 3 4 5 6 9 10 11 13 14 15" -o softnic.port_base:30000
expect_frames 'softnic.port.src_pid' "" -o softnic.port_base:30000

# --- Verbose tree: names, bitfields, generated NIC:PID, payload ----------------------------
ts -r "$pcap" -V >"$tmp/verbose.txt"
expect_text() {
    if grep -qF -- "$1" "$tmp/verbose.txt"; then pass; else fail "verbose output lacks '$1'"; fi
}
expect_text "softnic reliability header, DATA, seq 12, ack 7"
expect_text "softnic CXI packet, MSG, src 0xd0001:5"
expect_text "[Source (NIC:PID): 0xd0001:5]"
expect_text "Type: MSG (1)"
expect_text "Type: GET_REQ (3)"
expect_text "Type: DONE (4)"
expect_text "Type: COLL_SMALL (12)"
expect_text "Group key: 0x0000000000000077"
expect_text "Sender's rank: 2"
expect_text "Type: PROBE (3)"
expect_text "Flags: 0x0007 (TAGGED, CQ_DATA, ACK_REQ)"
expect_text ".... .... .... ...1 = TAGGED: True"
expect_text ".... .... .1.. .... = TRUNC (receiver truncated): True"
expect_text ".... .... .... ...1 = ACK_VALID: ack fields valid"
expect_text "SACK bitmap: 0x0000000000000003 (received 21, 22)"
expect_text "Data: 736f66746e696321"
expect_text "Truncated reliability header: 17 of 40 bytes"
expect_text "Truncated cxi header: 30 of 72 bytes"
expect_text "Payload length 100, only 4 bytes present"
if grep -qE 'Lua Error|Dissector bug|\[Malformed Packet' "$tmp/verbose.txt"; then
    fail "dissector raised an error: $(grep -m1 -E 'Lua Error|Dissector bug|\[Malformed Packet' "$tmp/verbose.txt")"
else pass; fi

# --- Fuzz: mutated packets never raise a Lua error ------------------------------------------
ts -r "$fuzz" -V >"$tmp/fuzz.txt"
nframes=$(grep -c '^Frame ' "$tmp/fuzz.txt")
if [ "$nframes" -eq 2015 ]; then pass; else fail "fuzz: decoded $nframes frames, expected 2015"; fi
if grep -qE 'Lua Error|Dissector bug|\[Malformed Packet' "$tmp/fuzz.txt"; then
    fail "fuzz: dissector raised an error: $(grep -m1 -E 'Lua Error|Dissector bug|\[Malformed Packet' "$tmp/fuzz.txt")"
else pass; fi

# --- Nothing on stderr (a Lua load error would show here) ----------------------------------
wait  # let the stderr filters finish
if [ -s "$tmp/stderr" ]; then fail "tshark stderr: $(head -5 "$tmp/stderr")"; else pass; fi

if [ "${VERBOSE:-0}" = 1 ]; then cat "$tmp/info.txt"; fi
"$TSHARK" -v 2>/dev/null | head -1
if [ "$failures" -ne 0 ]; then
    echo "FAILED: $failures of $checks checks"
    exit 1
fi
echo "PASS: $checks checks"
exit 0

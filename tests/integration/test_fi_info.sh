#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# fi_info (Debian's libfabric-bin) sees the cxi plugin, its attributes and variables.
. "$(dirname "$0")/lib.sh"

out=$(fi_info -p cxi | tr -d "\0") || fail "fi_info -p cxi exited $?"
grep -q "provider: cxi" <<<"$out" || fail "provider cxi not listed"
grep -q "domain: cxi0" <<<"$out" || fail "domain cxi0 not listed"
grep -q "FI_EP_RDM" <<<"$out" || fail "FI_EP_RDM not listed"
ok "fi_info -p cxi lists cxi0 / FI_EP_RDM"

verbose=$(fi_info -p cxi -v | tr -d "\0") || fail "fi_info -v failed"
grep -q "addr_format: FI_ADDR_CXI" <<<"$verbose" || fail "addr_format is not FI_ADDR_CXI"
grep -q "protocol: FI_PROTO_CXI" <<<"$verbose" || fail "protocol is not FI_PROTO_CXI"
grep -q "max_msg_size: 4294967295" <<<"$verbose" || fail "max_msg_size"
grep -q "inject_size: 192" <<<"$verbose" || fail "inject_size"
ok "attributes"

vars=$(fi_info -p cxi -e | tr -d "\0") || fail "fi_info -e failed"
for v in ODP ATS ATS_MLOCK_MODE RDZV_OFFLOAD RDZV_THRESHOLD FC_RECOVERY RDZV_GET_MIN \
         RDZV_EAGER_SIZE OFLOW_BUF_SIZE OFLOW_BUF_COUNT OPTIMIZED_MRS LLRING_MODE CQ_POLICY \
         DEFAULT_VNI EQ_ACK_BATCH_SIZE MSG_OFFLOAD REQ_BUF_SIZE REQ_BUF_COUNT \
         FC_RETRY_USEC_DELAY; do
    grep -q "FI_CXI_$v\b" <<<"$vars" || fail "FI_CXI_$v is not listed by fi_info -e"
done
ok "all 19 seed variables listed"

FI_CXI_SOFT_NICS=127.0.0.1,127.0.0.2 fi_info -p cxi -d cxi1 >/dev/null || fail "cxi1 not offered"
ok "a second soft NIC appears as cxi1"

FI_CXI_DEVICE_NAME=cxi99 fi_info -p cxi >/dev/null 2>&1
rc=$?
[ $rc -eq 61 ] || fail "FI_CXI_DEVICE_NAME=cxi99 gave exit $rc, expected 61 (FI_ENODATA)"
ok "no such device -> FI_ENODATA"

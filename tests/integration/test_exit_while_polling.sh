#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# A process that exits while other threads poll a CQ exits with status 0, for each
# provider and endpoint type, many times over (the crash this guards against was a
# race: libfabric unmapping the provider under a polling thread).
set -u
fail=0
for case in "cxi rdm" "usnic dgram" "usnic rdm"; do
    for i in $(seq 1 15); do
        # shellcheck disable=SC2086
        "$EXIT_WHILE_POLLING" $case
        rc=$?
        if [ "$rc" -ne 0 ]; then
            echo "FAIL: $case, run $i: exit status $rc"
            fail=1
            break
        fi
    done
    [ "$fail" = 0 ] && echo "ok: $case, 15 exits while polling"
done
exit $fail

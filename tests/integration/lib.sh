# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Shared helpers for the integration tests (sourced).
set -u -o pipefail
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

# Run an fi_pingpong server and client pair on loopback; any extra args go to both.
pingpong_pair() {
    local port=$1; shift
    local log; log=$(mktemp)
    timeout 120 fi_pingpong -p "$PROV" -B "$port" "$@" >"$log" 2>&1 &
    local server=$!
    local tries=0
    until ss -ltn 2>/dev/null | grep -q ":$port " || [ $tries -ge 50 ]; do
        sleep 0.1; tries=$((tries + 1))
    done
    timeout 120 fi_pingpong -p "$PROV" -P "$port" "$@" 127.0.0.1
    local crc=$?
    wait $server
    local src=$?
    if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
        echo "--- server output" >&2; cat "$log" >&2
        rm -f "$log"
        return 1
    fi
    rm -f "$log"
}

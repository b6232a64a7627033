# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# shellcheck shell=bash
# Helpers for the usnic integration tests (sourced after lib.sh or netns.sh): what
# fi_pingpong must print, and what usnic offers it.
#
#   pp_size_label SIZE          the size column fi_pingpong prints for SIZE (0, 12, 1.5k, 6m)
#   pp_count_label COUNT        the #sent / #ack columns for COUNT (5, 1k)
#   pp_all_sizes MAX            the sizes "fi_pingpong -S all" runs when MAX bytes is the
#                               largest message it may send
#   pp_check_output LOG ITERS SIZE...
#                               LOG holds one result line per SIZE, in that order, each with
#                               #sent = #ack = ITERS, and nothing else that looks like one
#   usnic_fi_info ARGS...       fi_info -p usnic ARGS, only the entries of usnic itself
#                               (not those of utility providers layered over it, as
#                               usnic;ofi_rxm), NULs removed
#   usnic_max_msg EPTYPE        max_msg_size usnic offers fi_pingpong's hints (caps FI_MSG,
#                               mode FI_CONTEXT|FI_CONTEXT2|FI_MSG_PREFIX) for FI_EP_<EPTYPE>

# The result table's size column: bytes with a k/m/g suffix, one decimal below ten units.
pp_size_label() {
    local size=$1 base=1 mag='' frac=0
    if [ "$size" -ge $((1 << 30)) ]; then
        base=$((1 << 30)) mag=g
    elif [ "$size" -ge $((1 << 20)) ]; then
        base=$((1 << 20)) mag=m
    elif [ "$size" -ge $((1 << 10)) ]; then
        base=$((1 << 10)) mag=k
    fi
    if [ $((size / base)) -lt 10 ]; then
        frac=$(((size % base) * 10 / base))
    fi
    if [ "$frac" -ne 0 ]; then
        echo "$((size / base)).$frac$mag"
    else
        echo "$((size / base))$mag"
    fi
}

# "-S all": 0, 1, then 2^i and 1.5 * 2^i while they fit in MAX (fi_pingpong's own cap:
# 4 MiB + 2 MiB, or the provider's max_msg_size when that is lower).
pp_all_sizes() {
    local max=$1 i p h out=""
    [ "$max" -gt $((6 << 20)) ] && max=$((6 << 20))
    for ((i = 0; ; i++)); do
        if [ $i -eq 0 ]; then p=0 h=1; else p=$((1 << i)) h=$((p + p / 2)); fi
        [ $p -gt "$max" ] && break
        out+="$p "
        [ $h -gt "$max" ] && break
        out+="$h "
    done
    echo "$out"
}

# The #sent / #ack columns: a count in whole thousands (k), millions (m), billions (b).
pp_count_label() {
    local c=$1
    if [ "$c" -ge 1000000000 ]; then
        echo "$((c / 1000000000))b"
    elif [ "$c" -ge 1000000 ]; then
        echo "$((c / 1000000))m"
    elif [ "$c" -ge 1000 ]; then
        echo "$((c / 1000))k"
    else
        echo "$c"
    fi
}

pp_check_output() {
    local log=$1 iters size want got n=0
    iters=$(pp_count_label "$2")
    shift 2
    local lines
    lines=$(awk '$1 ~ /^[0-9]+(\.[0-9])?[kmg]?$/ && NF >= 8' "$log")
    for size in "$@"; do
        n=$((n + 1))
        want="$(pp_size_label "$size") $iters =$iters"
        got=$(sed -n "${n}p" <<<"$lines" | awk '{ print $1, $2, $3 }')
        if [ "$got" != "$want" ]; then
            echo "fi_pingpong result line $n: expected \"$want ...\", got \"$got\"" >&2
            return 1
        fi
    done
    got=$(grep -c . <<<"$lines" || true)
    if [ "$got" -ne "$n" ]; then
        echo "fi_pingpong printed $got result lines, expected $n" >&2
        return 1
    fi
}

# Entries start with "provider: NAME" (short form) or "---" (verbose, where "prov_name:
# NAME" comes last); an entry is kept when NAME is exactly usnic. Fails when fi_info does.
usnic_fi_info() {
    local out
    out=$(fi_info -p usnic "$@" | tr -d '\0') || return 1
    awk '/^---$/ || /^provider:/ { if (keep) printf "%s", blk; blk = ""; keep = 0 }
         { blk = blk $0 "\n" }
         $1 == "provider:" || $1 == "prov_name:" { keep = ($2 == "usnic") }
         END { if (keep) printf "%s", blk }' <<<"$out"
}

usnic_max_msg() {
    usnic_fi_info -t "FI_EP_$1" -c FI_MSG -m 'FI_CONTEXT|FI_CONTEXT2|FI_MSG_PREFIX' -v |
        awk '/max_msg_size:/ && !n++ { print $2 }'
}

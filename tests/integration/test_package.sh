#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# The Debian package (cpack in the build directory): its files sit where libfabric,
# the compiler, the shell and man look for them, and libfabric loads both providers from
# it. Run as root with SOFTNIC_PACKAGE_INSTALL=1 (CI sets it), the package is installed
# with apt, fi_info must find cxi and usnic with no FI_PROVIDER_PATH, and it is removed.
. "$(dirname "$0")/lib.sh"
build=${1:?usage: test_package.sh BUILD_DIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd "$build" && cpack -G DEB -B "$work/out" >"$work/cpack.log" 2>&1) ||
    { cat "$work/cpack.log" >&2; fail "cpack failed"; }
deb=$(ls "$work"/out/softnic_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || fail "no softnic_*.deb made"
ok "built $(basename "$deb")"

provdir=$(pkg-config --variable=libdir libfabric)/libfabric
files=$(dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's|^\./|/|')
for f in "$provdir/libcxi-fi.so" "$provdir/libusnic-fi.so" /usr/include/rdma/fi_cxi_ext.h \
         /usr/include/cassini_cntr_defs.h \
         /usr/include/rdma/fi_ext_usnic.h /usr/include/libcxi/libcxi.h /usr/bin/cxi_stat \
         /usr/bin/cxi_service /usr/share/man/man7/fi_cxi.7 /usr/share/man/man7/fi_usnic.7 \
         /usr/share/man/man1/cxi_stat.1; do
    grep -qx "$f" <<<"$files" || fail "$f is not in the package"
done
ok "plugins in $provdir, headers, tools and man pages in place"
dpkg-deb -f "$deb" Depends | grep -q libfabric1 || fail "the package does not depend on libfabric1"
ok "depends on libfabric1"

dpkg-deb -x "$deb" "$work/root"
export FI_PROVIDER_PATH=$work/root$provdir
fi_info -p cxi | grep -q "provider: cxi" || fail "the packaged cxi plugin does not load"
FI_USNIC_IFACES=lo fi_info -p usnic | grep -q "provider: usnic" ||
    fail "the packaged usnic plugin does not load"
if command -v man >/dev/null; then
    man -l "$work/root/usr/share/man/man7/fi_cxi.7" 2>/dev/null | grep -q "SOFT NICS" ||
        fail "fi_cxi.7 does not render"
fi
ok "the unpacked plugins load; the man page renders"

if [ "${SOFTNIC_PACKAGE_INSTALL:-0}" = 1 ] && [ "$(id -u)" = 0 ]; then
    unset FI_PROVIDER_PATH
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq "$deb" >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; fail "apt install"; }
    trap 'apt-get purge -y -qq softnic >/dev/null 2>&1; rm -rf "$work"' EXIT
    fi_info -p cxi | grep -q "provider: cxi" || fail "installed: fi_info -p cxi finds nothing"
    FI_USNIC_IFACES=lo fi_info -p usnic | grep -q "provider: usnic" ||
        fail "installed: fi_info -p usnic finds nothing"
    ok "installed with apt: fi_info finds cxi and usnic without FI_PROVIDER_PATH"
fi

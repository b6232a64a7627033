#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Assembles a self-contained folder for a GPU machine that has CUDA but no libfabric and
# no network (x86-64, glibc >= 2.36): Debian 12's libfabric and the libraries it needs,
# the fi_* tools, softnic's plugins and the conformance tests, plus an env.sh to source.
#
#   scripts/gpu-bundle.sh [BUILD_DIR] [OUT_DIR]     (defaults: build .gpu, repo-relative)
#
# Layout: lib/ (libfabric & deps), bin/ (fi_*), prov/ (*-fi.so, libcxi), tests/, bench/.
# scripts/gpu-checks.sh runs the FI_HMEM checks there from this folder.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-.gpu}
ma=x86_64-linux-gnu
fabric=/usr/lib/$ma/libfabric.so.1
limit_mib=60
# Provided by any glibc >= 2.36 system; bundling them would clash with its loader.
system_pkgs=" libc6 libstdc++6 libgcc-s1 "

die() { echo "gpu-bundle: $*" >&2; exit 1; }
[ "$(dpkg --print-architecture)" = amd64 ] || die "must run on an amd64 Debian host"
[ -e "$fabric" ] || die "$fabric missing: install libfabric1 (scripts/setup-debian.sh)"
for t in cxi_conformance cxi_peer; do
    [ -x "$build/tests/$t" ] || die "$build/tests/$t missing: build the tests first"
done
compgen -G "$build/lib/*-fi.so" >/dev/null || die "no $build/lib/*-fi.so: build first"

# The GPU bench (bench/hmem_bw.cpp): built here, where libfabric's headers are.
mkdir -p "$build/bench"
g++ -O2 -std=c++20 -Wall -Wextra -Werror -I tests/common -o "$build/bench/hmem_bw" \
    bench/hmem_bw.cpp -lfabric -ldl

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Only our own subfolders are cleared: OUT_DIR may be a folder the user picked.
mkdir -p "$out"
rm -rf "${out:?}"/{root,lib,bin,prov,tests,bench,env.sh}
mkdir -p "$out"/{lib,bin,prov,tests}

# Copies of softnic's plugins and tests; stripped (copies only) to keep under the limit.
for f in "$build"/lib/*-fi.so "$build"/lib/libcxi.so*; do
    cp -L "$f" "$out/prov/"
done
cp -L "$build/tests/cxi_conformance" "$build/tests/cxi_peer" "$out/tests/"
if [ -d "$build/bench" ]; then
    while IFS= read -r -d '' f; do
        mkdir -p "$out/bench" && cp -L "$f" "$out/bench/"
    done < <(find "$build/bench" -maxdepth 1 -type f -perm -u+x -name '*hmem*' -print0)
fi
ours=("$out/prov" "$out/tests")
[ ! -d "$out/bench" ] || ours+=("$out/bench")
find "${ours[@]}" -type f -exec strip --strip-unneeded {} +

# Packages owning the libraries that libfabric (and what we bundle) loads. ldd prints
# /lib/... paths on merged-/usr systems, while dpkg records /usr/lib/...: try both.
owner() {
    local p line
    for p in "$1" "/usr$1" "$(readlink -f "$1")"; do
        line=$(dpkg -S "$p" 2>/dev/null | grep -v '^diversion' | head -n1) || continue
        [ -n "$line" ] && { echo "${line%%:*}"; return; }
    done
    die "no package owns $1"
}
build_abs=$(cd "$build" && pwd -P)
declare -A pkgs=([libfabric1]=1 [libfabric-bin]=1)
while read -r lib; do
    [[ $lib != missing:* ]] || die "unresolved library ${lib#missing:}"
    case $(readlink -f "$lib") in "$build_abs"/*) continue ;; esac  # libcxi: ours
    pkg=$(owner "$lib")
    [[ $system_pkgs == *" $pkg "* ]] || pkgs[$pkg]=1
done < <(ldd "$fabric" /usr/bin/fi_info "$out"/prov/*-fi.so "$out"/tests/* |
    awk '/not found/ { print "missing:" $1 } $2 == "=>" && $3 ~ /^\// { print $3 }
         $1 ~ /^\// && $1 !~ /:$/ { print $1 }' | sort -u)

# The installed versions, which the build was linked and tested against; the candidate
# version only if the archive no longer has them.
mapfile -t names < <(printf '%s\n' "${!pkgs[@]}" | sort)
mapfile -t exact < <(for p in "${names[@]}"; do
    echo "$p=$(dpkg-query -W -f='${Version}' "$p" 2>/dev/null || dpkg-query -W \
        -f='${Version}' "$p:amd64")"
done)
dl() { (cd "$tmp" && apt-get download "$@"); }
dl "${exact[@]}" || { apt-get update >/dev/null && dl "${exact[@]}"; } ||
    { echo "gpu-bundle: installed versions unavailable, taking candidates" >&2; dl "${names[@]}"; } ||
    die "apt-get download failed"

for deb in "$tmp"/*.deb; do dpkg -x "$deb" "$out/root"; done
# Only the shared objects (not the libibverbs/ provider plugins) and the fi_* tools.
for d in "$out/root/usr/lib/$ma" "$out/root/lib/$ma"; do
    [ -d "$d" ] || continue
    find "$d" -maxdepth 1 -name '*.so*' \( -type f -o -type l \) -exec cp -a {} "$out/lib/" \;
done
cp -a "$out"/root/usr/bin/fi_* "$out/bin/"
rm -rf "$out/root"

# The peer path is compiled into cxi_conformance (CXIT_PEER_PATH): record it so a run
# script can symlink tests/cxi_peer there.
peer=$(strings -n 8 "$build/tests/cxi_conformance" | grep -m1 '^/.*/cxi_peer$' || true)
[ -n "$peer" ] || echo "gpu-bundle: warning: no cxi_peer path found in cxi_conformance" >&2
cat >"$out/env.sh" <<EOF
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Source from bash. Paths follow this file, so the folder works wherever it is copied.
SOFTNIC_BUNDLE=\$(cd "\$(dirname "\${BASH_SOURCE[0]}")" && pwd -P)
export SOFTNIC_BUNDLE
export LD_LIBRARY_PATH=\$SOFTNIC_BUNDLE/lib:\$SOFTNIC_BUNDLE/prov\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export FI_PROVIDER_PATH=\$SOFTNIC_BUNDLE/prov
export PATH=\$SOFTNIC_BUNDLE/bin\${PATH:+:\$PATH}
# cxi_conformance execs cxi_peer from this absolute build path; link tests/cxi_peer there.
export SOFTNIC_CXI_PEER_PATH=${peer}
EOF

# Keep the bundle out of git status without touching .gitignore.
excl=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$excl")"
grep -qxF '/.gpu/' "$excl" 2>/dev/null || echo '/.gpu/' >>"$excl"

echo "packages: ${names[*]}"
# The newest glibc/libstdc++ symbol versions used: what the target's own must provide.
syms=$(find "$out" -type f \( -name '*.so*' -o -perm -u+x \) ! -name env.sh \
    -exec objdump -T {} + 2>/dev/null | grep -o 'GLIBC[XX]*_[0-9.]*' | sort -uV)
echo "needs on the target: $(grep '^GLIBC_' <<<"$syms" | tail -n1)" \
    "$(grep '^GLIBCXX_' <<<"$syms" | tail -n1)"
du -sh "$out"
size=$(du -sb "$out" | cut -f1)
[ "$size" -le $((limit_mib * 1024 * 1024)) ] ||
    die "bundle is $((size / 1048576)) MiB, over the ${limit_mib} MiB limit"

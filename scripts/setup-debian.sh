#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Install what softnic needs on a fresh Debian 12 machine (run as root).
set -euo pipefail
packages=(
    build-essential cmake pkg-config clang-format
    libfabric-dev libfabric-bin        # the stock libfabric our plugins load into
    libyaml-dev                        # cxi_service reads service descriptions in YAML
    libnl-route-3-dev                  # usnic finds its devices and routes over netlink
    libgtest-dev                       # the test suites
    openmpi-bin libopenmpi-dev         # integration: Open MPI over the ofi MTL
    iproute2 nftables procps           # multi-host tests in network namespaces
    passwd util-linux                  # the services test makes a user (useradd, setpriv)
    tshark python3                     # the Wireshark dissector's test
    go-md2man                          # man pages (roff) from docs/man/*.md
    clang                              # CI builds the shipped code with clang too
    libclang-rt-14-dev                 # libFuzzer and the sanitizer runtimes for clang
    dpkg-dev                           # the Debian package (cpack: dpkg-shlibdeps)
)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    # tshark asks whether non-root users may capture: no.
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# The demonstration: set up, build, then move real traffic over the cxi provider with
# the stock libfabric tools and Open MPI, and over the usnic provider with fi_pingpong.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ]; then scripts/setup-debian.sh; fi
scripts/build.sh
export FI_PROVIDER_PATH=$PWD/build/lib

echo "== fi_info -p cxi"
fi_info -p cxi
echo
echo "== cxi_stat, cxi_service list (the soft NIC and its CXI services)"
build/bin/cxi_stat
build/bin/cxi_service list
echo
echo "== fi_pingpong -p cxi -e rdm (two processes, data checked)"
fi_pingpong -p cxi -e rdm -c -I 1000 -B 47800 >/tmp/softnic-demo-server.log 2>&1 &
sleep 1
fi_pingpong -p cxi -e rdm -c -I 1000 -P 47800 127.0.0.1
wait
echo
echo "== Open MPI, 2 ranks, ofi MTL over cxi"
mpirun --allow-run-as-root --oversubscribe -np 2 --mca pml cm --mca mtl ofi \
    --mca mtl_ofi_provider_include cxi --mca btl self -x FI_PROVIDER_PATH \
    build/tests/integration/mpi_check
echo
echo "== fi_info -p usnic (loopback as usnic_0)"
export FI_USNIC_IFACES=lo
fi_info -p usnic
for ep in dgram msg rdm; do
    echo
    echo "== fi_pingpong -p usnic -e $ep (two processes, data checked)"
    fi_pingpong -p usnic -e "$ep" -c -I 1000 -S 1024 -B 47810 >/tmp/softnic-demo-server.log 2>&1 &
    sleep 1
    fi_pingpong -p usnic -e "$ep" -c -I 1000 -S 1024 -P 47810 127.0.0.1
    wait
done

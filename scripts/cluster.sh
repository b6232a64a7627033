#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# A Slingshot cluster in a box (root): N compute nodes and a controller, each a network
# namespace with its own hostname and soft NIC (eth0 on a private bridge), run by a
# Slurm built from upstream source with switch/hpe_slingshot, which loads softnic's
# libcxi.so to make a CXI service and VNIs for every job step. Nothing outside the
# namespaces and the state directory is touched.
#
#   SLURM_PREFIX=/opt/slurm scripts/cluster.sh up 2   # controller + nodes n1, n2
#   scripts/cluster.sh run srun -N 2 -n 4 --network=job_vni mpi_program
#   scripts/cluster.sh node n1 cxi_service list       # a command on a node (its registry)
#   scripts/cluster.sh status | down
#
# How to build Slurm for it: docs/man/cxi_service.1.md ("SLURM"). Each node keeps its own
# service registry (SOFTNIC_CXI_SERVICES, handed to slurmd and, by the TaskProlog, to the
# tasks), as each real node has its own NIC. Jobs reach the provider through the
# environment srun carries: set FI_PROVIDER_PATH there unless softnic is installed.
set -euo pipefail
DIR=${SOFTNIC_CLUSTER_DIR:-/run/softnic-cluster}
NS=${SOFTNIC_CLUSTER_PREFIX:-sncl}
NET=${SOFTNIC_CLUSTER_NET:-10.79.0}
VNIS=${SOFTNIC_CLUSTER_VNIS:-1024-1279}

die() { echo "cluster.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (network namespaces, munged, slurmd)"

# Remembered at `up` for the other commands.
prefix() { cat "$DIR/slurm-prefix" 2>/dev/null || die "no cluster is up ($DIR)"; }
in_ns() {  # in_ns HOST CMD...: CMD inside HOST's network namespace
    local h=$1; shift
    ip netns exec "$NS-$h" "$@"
}
# in_host HOST CMD...: CMD on HOST, in the mount namespace `ip netns exec` makes, where
# the cluster's names resolve (its /etc/hosts) and the host has its own /tmp, /dev/shm
# and MUNGE socket (one munged per host: a credential decodes once per munged, and
# Slurm's launch credential reaches every node of a step).
in_host() {
    local h=$1; shift
    # shellcheck disable=SC2016
    in_ns "$h" sh -c 'd=$0/hosts/$1 && mount --bind "$0/etc/hosts" /etc/hosts &&
        mount --bind "$d/munge" "$0/munge" && mount --bind "$d/tmp" /tmp &&
        mount --bind "$d/shm" /dev/shm && shift && exec "$@"' "$DIR" "$h" "$@"
}
# on_ctl CMD...: CMD on the controller (the login node), with Slurm's commands and config.
on_ctl() {
    local p; p=$(prefix)
    in_host ctl env SLURM_CONF="$DIR/etc/slurm.conf" PATH="$p/bin:$p/sbin:$PATH" "$@"
}

check_slurm() {
    local p=${SLURM_PREFIX:-}
    [ -n "$p" ] || die "SLURM_PREFIX: the prefix Slurm was installed to"
    for f in sbin/slurmctld sbin/slurmd bin/srun lib/slurm/switch_hpe_slingshot.so; do
        [ -e "$p/$f" ] || die "$p/$f is missing (Slurm built --with-hpe-slingshot?)"
    done
    command -v munged >/dev/null || die "munged is missing (apt-get install munge)"
}

# One key for the cluster; each host's munged (started in start_daemons) has its socket
# in that host's $DIR/munge.
make_munge_key() {
    dd if=/dev/urandom of="$DIR/etc/munge.key" bs=128 count=1 status=none
    chmod 400 "$DIR/etc/munge.key"
}
start_munged() {
    local h=$1
    in_host "$h" munged --socket="$DIR/munge/munge.sock" --key-file="$DIR/etc/munge.key" \
        --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/log/munged-$h.log" \
        --seed-file="$DIR/munge/munged.seed" --origin=eth0
}

# A hub namespace holds the bridge; every host has eth0 on it and a default route
# through it, so that its soft NIC is eth0's address.
start_network() {
    local n=$1 i=1 h
    printf '127.0.0.1 localhost\n' >"$DIR/etc/hosts"
    ip netns add "$NS-hub"
    in_ns hub ip link add br0 type bridge
    in_ns hub ip link set br0 up
    for h in ctl $(seq -f 'n%g' 1 "$n"); do
        ip netns add "$NS-$h"
        mkdir -p "$DIR/hosts/$h"/{munge,tmp,shm}
        chmod 711 "$DIR/hosts/$h/munge" && chmod 1777 "$DIR/hosts/$h"/{tmp,shm}
        ip link add "$NS-$h" type veth peer name eth0 netns "$NS-$h"
        ip link set "$NS-$h" netns "$NS-hub"
        in_ns hub ip link set "$NS-$h" master br0 up
        in_ns "$h" ip addr add "$NET.$i/24" dev eth0
        in_ns "$h" ip link set eth0 up
        in_ns "$h" ip link set lo up
        in_ns "$h" ip route add default dev eth0
        echo "$NET.$i $h" >>"$DIR/etc/hosts"
        i=$((i + 1))
    done
}

write_config() {
    local n=$1 p=$2 mpi=none
    [ -e "$p/lib/slurm/mpi_pmix.so" ] && mpi=pmix
    cat >"$DIR/etc/slurm.conf" <<EOF
ClusterName=softnic
SlurmctldHost=ctl($NET.1)
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.sock
CredType=cred/munge
SlurmUser=root
StateSaveLocation=$DIR/ctl
SlurmctldPidFile=$DIR/ctl/slurmctld.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdSpoolDir=$DIR/nodes/%n/spool
SlurmdPidFile=$DIR/nodes/%n/slurmd.pid
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
TaskProlog=$DIR/etc/task_prolog.sh
MpiDefault=$mpi
ReturnToService=2
SwitchType=switch/hpe_slingshot
SwitchParameters=vnis=$VNIS,job_vni=user,single_node_vni=user
DebugFlags=Switch
EOF
    local i
    for i in $(seq 1 "$n"); do
        echo "NodeName=n$i NodeAddr=$NET.$((i + 1)) CPUs=4 RealMemory=1024 State=UNKNOWN"
    done >>"$DIR/etc/slurm.conf"
    cat >>"$DIR/etc/slurm.conf" <<EOF
PartitionName=box Nodes=n[1-$n] Default=YES MaxTime=INFINITE State=UP
EOF
    echo "CgroupPlugin=disabled" >"$DIR/etc/cgroup.conf"
    # Each task sees its node's registry and soft NIC, whatever srun's environment says.
    cat >"$DIR/etc/task_prolog.sh" <<EOF
#!/bin/sh
echo "export SOFTNIC_CXI_SERVICES=$DIR/nodes/\$SLURMD_NODENAME/cxi"
echo "export FI_CXI_SOFT_NICS=eth0"
EOF
    chmod 755 "$DIR/etc/task_prolog.sh"
}

# Daemons run in their host's namespace and UTS namespace (hostname = node name).
start_daemons() {
    local n=$1 p=$2 h
    for h in ctl $(seq -f 'n%g' 1 "$n"); do start_munged "$h"; done
    in_host ctl unshare --uts sh -c "hostname ctl && exec env SLURM_CONF=$DIR/etc/slurm.conf \
        $p/sbin/slurmctld -i"
    for h in $(seq -f 'n%g' 1 "$n"); do
        mkdir -p "$DIR/nodes/$h/spool" "$DIR/nodes/$h/cxi"
        chmod 755 "$DIR/nodes/$h/cxi"
        in_host "$h" unshare --uts sh -c "hostname $h && exec env -u SLURM_CONF \
            SOFTNIC_CXI_SERVICES=$DIR/nodes/$h/cxi FI_CXI_SOFT_NICS=eth0 \
            $p/sbin/slurmd -f $DIR/etc/slurm.conf -N $h"
    done
}

wait_idle() {
    local n=$1
    for _ in $(seq 1 60); do
        if [ "$(on_ctl sinfo -h -o '%T %D' 2>/dev/null | awk '$1 == "idle" {print $2}')" = "$n" ]; then
            return 0
        fi
        sleep 1
    done
    on_ctl sinfo -N >&2 || true
    tail -n 20 "$DIR"/log/slurm*.log >&2 || true
    die "the nodes did not come up idle in 60 s (logs in $DIR/log)"
}

up() {
    local n=${1:-2}
    [[ $n =~ ^[1-9][0-9]?$ ]] || die "up N: 1 to 99 nodes"
    check_slurm
    [ ! -e "$DIR/slurm-prefix" ] || die "a cluster is already up ($DIR): cluster.sh down"
    case $(readlink -m "$DIR")/ in  # each host gets its own of those
    /tmp/* | /dev/shm/*) die "SOFTNIC_CLUSTER_DIR may not be under /tmp or /dev/shm" ;;
    esac
    ip netns list | grep -q "^$NS-" && die "namespaces $NS-* exist: cluster.sh down"
    mkdir -p "$DIR"/{etc,log,ctl,nodes,munge} && chmod 711 "$DIR"
    echo "$SLURM_PREFIX" >"$DIR/slurm-prefix"
    make_munge_key
    start_network "$n"
    write_config "$n" "$SLURM_PREFIX"
    start_daemons "$n" "$SLURM_PREFIX"
    wait_idle "$n"
    echo "cluster up: controller ctl ($NET.1), nodes n1..n$n; state in $DIR"
}

down() {
    local ns pid
    for ns in $(ip netns list | awk -v p="$NS-" 'index($1, p) == 1 {print $1}'); do
        for pid in $(ip netns pids "$ns"); do kill -TERM "$pid" 2>/dev/null || true; done
    done
    sleep 1
    for ns in $(ip netns list | awk -v p="$NS-" 'index($1, p) == 1 {print $1}'); do
        for pid in $(ip netns pids "$ns"); do kill -KILL "$pid" 2>/dev/null || true; done
        ip netns del "$ns"
    done
    rm -rf "$DIR"
    echo "cluster down"
}

cmd=${1:-}
shift || true
case $cmd in
up) up "$@" ;;
down) down ;;
status) on_ctl sinfo -N && on_ctl squeue ;;
run) on_ctl "$@" ;;  # as a user's login shell runs srun or sbatch
node)  # node NAME CMD...: a command on a node, with that node's registry and NIC
    h=${1:?node NAME CMD...}; shift
    in_host "$h" env SOFTNIC_CXI_SERVICES="$DIR/nodes/$h/cxi" FI_CXI_SOFT_NICS=eth0 "$@" ;;
*) sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# A Slingshot cluster in a box (scripts/cluster.sh): Slurm's switch/hpe_slingshot makes a
# CXI service per job step through this build's libcxi.so, the steps get their VNIs, MPI
# runs over cxi across two nodes on them, and jobs cannot reach each other. Needs root
# and a Slurm built --with-hpe-slingshot whose plugin loads this build's libcxi.so
# (SLURM_PREFIX; see cxi_service(1), SLURM); skipped (77) otherwise. With MPICH_PREFIX,
# an MPICH (ch4:ofi) runs across the nodes too.
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")/../.." && pwd)
SLURM_PREFIX=${SLURM_PREFIX:-}
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
plugin=$SLURM_PREFIX/lib/slurm/switch_hpe_slingshot.so
[ -n "$SLURM_PREFIX" ] && [ -e "$plugin" ] ||
    { echo "SKIP: no Slurm with switch/hpe_slingshot (SLURM_PREFIX='$SLURM_PREFIX')"; exit 77; }
LIBCXI=${LIBCXI:?path of this build\'s libcxi.so}
MPI_CHECK=${MPI_CHECK:?path of mpi_check} COLL_MPI=${COLL_MPI:?path of coll_mpi}
MPI_SOAK=${MPI_SOAK:?path of mpi_soak}
CXI_SERVICE=${CXI_SERVICE:?path of cxi_service} CXI_STAT=${CXI_STAT:?path of cxi_stat}
# The plugin dlopens the libcxi path its configure baked in: it must be this build's.
baked=$(strings "$plugin" | grep -m1 '/libcxi\.so$' || true)
[ "$(readlink -f "$baked")" = "$(readlink -f "$LIBCXI")" ] ||
    { echo "SKIP: the plugin loads '$baked', not $LIBCXI"; exit 77; }

export SOFTNIC_CLUSTER_DIR SOFTNIC_CLUSTER_PREFIX=snsl$$ SLURM_PREFIX
# Outside /tmp, which each node has its own of, so that every node sees them.
SOFTNIC_CLUSTER_DIR=$(mktemp -d -p /var/tmp)
work=$(mktemp -d -p /var/tmp)
chmod 755 "$work"
cluster() { "$here/scripts/cluster.sh" "$@"; }
made_user=
trap 'cluster down >/dev/null 2>&1; rm -rf "$work" "$SOFTNIC_CLUSTER_DIR"
      [ -z "$made_user" ] || userdel "$made_user"' EXIT
# What srun carries to the tasks: the provider, and Open MPI on cxi (cm + mtl ofi).
export OMPI_MCA_pml=cm OMPI_MCA_mtl=ofi OMPI_MCA_mtl_ofi_provider_include=cxi OMPI_MCA_btl=self

start=$(date +%s.%N)
cluster up 2 || fail "cluster up"
ok "cluster up in $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s: ctl, n1, n2"

# 1. Every task of a two-node step has the VNI, device and service the plugin made.
out=$(cluster run timeout 60 srun -N 2 -n 4 sh -c \
    'echo "$SLURMD_NODENAME $SLINGSHOT_DEVICES $SLINGSHOT_SVC_IDS $SLINGSHOT_VNIS"') ||
    fail "srun env: $out"
[ "$(wc -l <<<"$out")" = 4 ] && [ "$(awk '{print $1}' <<<"$out" | sort -u | tr '\n' ' ')" = "n1 n2 " ] ||
    fail "4 tasks on n1 and n2 expected: $out"
[ "$(awk '{print $2, $4}' <<<"$out" | sort -u | wc -l)" = 1 ] || fail "one VNI for the step: $out"
read -r _ dev svc vni <<<"$(head -1 <<<"$out")"
[ "$dev" = cxi0 ] && [[ $svc =~ ^[0-9]+$ ]] && [ "$vni" -ge 1024 ] && [ "$vni" -le 1279 ] ||
    fail "SLINGSHOT_* of the step: $out"
ok "a 2-node step: SLINGSHOT_DEVICES=$dev SLINGSHOT_SVC_IDS=$svc SLINGSHOT_VNIS=$vni on all 4 tasks"

# 2. The step's service exists on each node while it runs, and not after.
cat >"$work/hold.sh" <<EOF
#!/bin/sh
echo "\$SLINGSHOT_SVC_IDS \$SLINGSHOT_VNIS" >"$work/svc.\$SLURMD_NODENAME"
while [ ! -e "$work/go" ]; do sleep 0.1; done
EOF
chmod 755 "$work/hold.sh"
cluster run timeout 60 srun -N 2 -n 2 "$work/hold.sh" &
step=$!
for _ in $(seq 200); do [ -s "$work/svc.n2" ] && [ -s "$work/svc.n1" ] && break; sleep 0.1; done
for n in n1 n2; do
    read -r svc vni <"$work/svc.$n" || fail "the step never ran on $n"
    out=$(cluster node "$n" "$CXI_SERVICE" list -s "$svc" -v) || fail "$n lists no service $svc"
    grep -q "VNIs *: $vni" <<<"$out" && grep -q "Valid Members : uid=0" <<<"$out" ||
        fail "service $svc on $n: $out"
done
touch "$work/go"
wait $step || fail "the holding step"
for n in n1 n2; do
    out=$(cluster node "$n" "$CXI_SERVICE" list)
    ! grep -q "ID: $svc\$" <<<"$out" || fail "service $svc outlives its step on $n"
done
rm -f "$work"/svc.* "$work/go"
ok "service $svc (VNI $vni, uid 0) on n1 and n2 while the step runs, destroyed after"

# 3. MPI over cxi across the two nodes, on the step's VNIs (pmix when Slurm has it).
mpi=none
[ -e "$SLURM_PREFIX/lib/slurm/mpi_pmix.so" ] && mpi=pmix
out=$(cluster run timeout 120 srun -N 2 -n 2 --mpi=$mpi "$MPI_CHECK" 2>&1) ||
    fail "mpi_check: $out"
grep -q "all checks passed" <<<"$out" || fail "mpi_check: $out"
ok "srun -N 2 -n 2 --mpi=$mpi mpi_check: Open MPI (cm, mtl ofi, cxi) checks passed"
out=$(SOAK_SECONDS=3 cluster run timeout 120 srun -N 2 -n 4 --mpi=$mpi --network=job_vni \
    "$MPI_SOAK" 2>&1) || fail "mpi_soak: $out"
grep -q "all checks passed" <<<"$out" || fail "mpi_soak: $out"
ok "srun -N 2 -n 4 --network=job_vni mpi_soak: $(grep -o '[0-9]* messages, [0-9]* bytes' <<<"$out"), all checked"
out=$(cluster run timeout 120 srun -N 2 -n 4 --mpi=$mpi --network=job_vni,single_node_vni \
    "$COLL_MPI" check 2>&1) || fail "coll_mpi: $out"
grep -q "all collective checks passed (4 members)" <<<"$out" || fail "coll_mpi: $out"
ok "srun -N 2 -n 4 --network=job_vni,single_node_vni coll_mpi: 4 ranks, collectives checked"
# MPICH (ch4:ofi) too, where MPICH_PREFIX names one: PMI-2 from srun, libfabric held to cxi.
if [ -n "${MPICH_PREFIX:-}" ] && [ -x "$MPICH_PREFIX/bin/mpicc" ]; then
    "$MPICH_PREFIX/bin/mpicc" -I"$here/tests/integration" "$here/tests/integration/mpi_check.c" \
        -o "$work/mpich_check" || fail "mpicc of MPICH"
    out=$(FI_PROVIDER=cxi cluster run timeout 120 srun -N 2 -n 2 --mpi=pmi2 "$work/mpich_check" 2>&1) ||
        fail "MPICH mpi_check: $out"
    grep -q "all checks passed" <<<"$out" || fail "MPICH mpi_check: $out"
    ok "srun -N 2 -n 2 --mpi=pmi2 mpi_check built with MPICH ($MPICH_PREFIX): checks passed"
fi

# pair_script FILE PORT "ARGS" [PRELUDE]: a two-task step script in which rank 0 serves
# fi_pingpong ARGS on n1 and rank 1 is its client; PRELUDE (shell) runs first in both.
pair_script() {
    cat >"$1" <<EOF
#!/bin/sh
${4:-}
[ "\$SLURM_PROCID" = 0 ] && exec timeout 30 fi_pingpong -p cxi -e rdm -B $2 $3
sleep 0.5
exec timeout 30 fi_pingpong -p cxi -e rdm -P $2 $3 n1
EOF
    chmod 755 "$1"
}

# cxi_stat on a node counts a running step's traffic.
pair_script "$work/stream.sh" 47989 "-S 4096 -I 500000"
cluster run timeout 60 srun -N 2 -n 2 "$work/stream.sh" >"$work/stream.log" 2>&1 &
step=$!
sleep 2
out=$(cluster node n1 "$CXI_STAT" -r -p 1)
wait $step || fail "the streaming step: $(cat "$work/stream.log")"
rx=$(sed -n 's/.*UDP datagrams in: \([0-9]*\).*/\1/p' <<<"$out")
[ "${rx:-0}" -gt 0 ] || fail "cxi_stat -r on n1 saw no traffic: $out"
ok "cxi_stat -r on n1 counts the step's traffic: $rx UDP datagrams/s in"

# 4. Two jobs at once, each on its own VNI: job A serves fi_pingpong on n1, job B's
# clients on n2 address it. Where the VNIs' UDP ports differ nothing listens there;
# where they coincide (VNIs 16 apart) n1's soft NIC refuses and counts the datagram.
cat >"$work/servers.sh" <<EOF
#!/bin/sh
echo "\$SLINGSHOT_VNIS" >"$work/vni.a"
timeout 60 fi_pingpong -p cxi -e rdm -B 47990 -S 1024 -I 20 >"$work/a0.log" 2>&1 &
exec timeout 60 fi_pingpong -p cxi -e rdm -B 47991 -S 1024 -I 20 >"$work/a1.log" 2>&1
EOF
chmod 755 "$work/servers.sh"
cluster run timeout 90 srun -N 1 -n 1 -w n1 -J job-a --network=single_node_vni "$work/servers.sh" &
job_a=$!
for _ in $(seq 200); do [ -s "$work/vni.a" ] && break; sleep 0.1; done
vni_a=$(cat "$work/vni.a") || fail "job A never started"
sleep 0.5
# client PORT: a job B step on n2; prints "VNI rc" and leaves its output in b.log.
client() {
    cluster run timeout 60 srun -N 1 -n 1 -w n2 --network=single_node_vni sh -c \
        "echo \$SLINGSHOT_VNIS; timeout 20 fi_pingpong -p cxi -e rdm -P $1 -S 1024 -I 20 n1 \
         >$work/b.log 2>&1; echo \$?"
}
read -r vni_b rc < <(client 47990 | tr '\n' ' ')
[ "$vni_b" != "$vni_a" ] || fail "jobs A and B share VNI $vni_a"
[ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "job B (VNI $vni_b) reached job A (VNI $vni_a): rc $rc"
grep -q "C_RC_PTLTE_NOT_FOUND\|C_RC_VNI_NOT_FOUND" "$work/b.log" || fail "job B: $(cat "$work/b.log")"
ok "job B (VNI $vni_b) addressing job A (VNI $vni_a) fails at once: $(grep -o 'C_RC_[A-Z_]*' "$work/b.log")"
# Steps that only take a VNI, until the next one shares job A's port space.
for _ in $(seq 40); do
    v=$(cluster run srun -N 1 -n 1 -w n2 --network=single_node_vni printenv SLINGSHOT_VNIS)
    [ $(((v + 1) % 16)) = $((vni_a % 16)) ] && break
done
read -r vni_b rc < <(client 47991 | tr '\n' ' ')
[ $((vni_b % 16)) = $((vni_a % 16)) ] || fail "no VNI 16 apart from $vni_a (got $vni_b)"
[ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "job B (VNI $vni_b) reached job A: rc $rc"
grep -q "C_RC_VNI_NOT_FOUND" "$work/b.log" || fail "job B, same port space: $(cat "$work/b.log")"
ok "job B (VNI $vni_b, job A's port space) is refused by n1's soft NIC: C_RC_VNI_NOT_FOUND"
cluster run scancel -n job-a
wait $job_a
# Within one step (one VNI) the same pair talks.
pair_script "$work/pair.sh" 47992 "-S 1024 -I 20"
out=$(cluster run timeout 60 srun -N 2 -n 2 "$work/pair.sh" 2>&1) || fail "same-step pingpong: $out"
ok "fi_pingpong between n1 and n2 within one step (one VNI) passes"

# A user's step: its service admits that user alone; root, borrowing the step's
# variables on the same node, is refused at fi_domain (-FI_EPERM).
user=softnic-slurm
if ! id "$user" >/dev/null 2>&1; then
    useradd --no-create-home --shell /usr/sbin/nologin "$user" || fail "useradd $user"
    made_user=$user
fi
uid=$(id -u "$user")
mkdir "$work/user" && chown "$user" "$work/user"
cat >"$work/user/hold.sh" <<EOF
#!/bin/sh
echo "\$SLINGSHOT_SVC_IDS \$SLINGSHOT_VNIS" >"$work/user/svc"
while [ ! -e "$work/user/svc.done" ]; do sleep 0.1; done
EOF
chmod 755 "$work/user/hold.sh"
cluster run setpriv --reuid="$uid" --regid="$uid" --clear-groups \
    timeout 60 srun -N 1 -n 1 -w n1 --network=single_node_vni "$work/user/hold.sh" &
step=$!
for _ in $(seq 200); do [ -s "$work/user/svc" ] && break; sleep 0.1; done
read -r svc vni <"$work/user/svc" || fail "the user's step never ran"
cluster node n1 "$CXI_SERVICE" list -s "$svc" -v | grep -q "Valid Members : uid=$uid" ||
    fail "service $svc is not the user's"
out=$(cluster node n1 env SLINGSHOT_DEVICES=cxi0 SLINGSHOT_SVC_IDS="$svc" SLINGSHOT_VNIS="$vni" \
    sh -c 'timeout 20 fi_pingpong -p cxi -e rdm -B 47988 -I 2 & sleep 0.5
           timeout 20 fi_pingpong -p cxi -e rdm -P 47988 -I 2 127.0.0.1; wait' 2>&1)
grep -q "fi_domain().*ret=-1 " <<<"$out" || fail "root used the user's service $svc: $out"
touch "$work/user/svc.done"
wait $step || fail "the user's step"
ok "a user's step: service $svc admits uid $uid only; root with its variables: fi_domain -FI_EPERM"

# 5. A step whose service was destroyed under it cannot open a domain. (Slurm then fails
# to destroy it at the step's end and drains the node, as on hardware: resumed here.)
pair_script "$work/late.sh" 47993 "-S 1024 -I 2" \
    "echo \$SLINGSHOT_SVC_IDS >$work/svc.\$SLURMD_NODENAME
while [ ! -e $work/go ]; do sleep 0.1; done"
cluster run timeout 60 srun -N 2 -n 2 "$work/late.sh" >"$work/late.log" 2>&1 &
step=$!
for _ in $(seq 200); do [ -s "$work/svc.n1" ] && break; sleep 0.1; done
svc=$(cat "$work/svc.n1") || fail "the step never ran"
cluster node n1 "$CXI_SERVICE" delete -s "$svc" >/dev/null || fail "delete service $svc"
touch "$work/go"
wait $step && fail "the step ran without its service: $(cat "$work/late.log")"
grep -q "fi_domain().*ret=-22" "$work/late.log" || fail "late step: $(cat "$work/late.log")"
cluster run scontrol update nodename=n1 state=resume
ok "service $svc destroyed under its step: fi_domain fails with -FI_EINVAL"

cluster down || fail "cluster down"
left=$(ip netns list | grep -c "^$SOFTNIC_CLUSTER_PREFIX-" || true)
[ "$left" = 0 ] && [ ! -e "$SOFTNIC_CLUSTER_DIR" ] || fail "down left $left namespaces behind"
ok "cluster down: no namespace, process or file left"

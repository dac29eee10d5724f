#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The shipped Slurm batch script under a real single-node Slurm: this script starts its own
# munged, slurmctld and slurmd (Debian's slurm-wlm and munge) with a minimal slurm.conf in
# a scratch directory (own sockets and ports, nothing under /etc touched), submits the
# installed PREFIX/share/doc/dfccl/examples/slurm_dfccl.sbatch with `sbatch --wait` on one
# node and two tasks (command-line options over its #SBATCH lines, as a user on a small
# machine would), and checks what the job wrote: every step's exit status 0, dfccl-bench's
# checks OK, the deadlock demo's results correct, MPI_Allreduce run by dfccl's component,
# and the 5 cores per task the script asks for (docs/multinode.md: a rank runs about five
# busy threads). The node is declared with 16 CPUs (SlurmdParameters=config_overrides) so
# that 2 tasks x 5 cores fit on a 2-core CI machine as written; tasks are not bound.
# Stops the daemons it started (by their pids) at the end.
#
# Without slurmctld, slurmd or munged, or when they do not come up, one SKIP line says why
# (with the daemons' last log lines) and the last line counts it.
# One line per case, "PASS: ..." / "FAIL: ..." / "SKIP: ...", then "N passed, N failed".
#
# usage: slurm_check.sh PREFIX     (dfccl installed there: test/install_check.sh's prefix)
set -u
P=${1:?usage: slurm_check.sh PREFIX}
P=$(cd "$P" && pwd) || exit 2
# pass, fail, skip, finish
# shellcheck source=suite_lib.sh
. "$(dirname "$0")/suite_lib.sh"

missing=
for t in munged munge slurmctld slurmd sbatch sinfo scontrol; do
    command -v "$t" > /dev/null 2>&1 || [ -x "/usr/sbin/$t" ] || missing="$missing $t"
done
if [ -n "$missing" ]; then
    skip "Slurm batch script: not installed:$missing (Debian: apt-get install slurm-wlm; ./quickstart installs it)"
    finish
fi
PATH=$PATH:/usr/sbin
script="$P/share/doc/dfccl/examples/slurm_dfccl.sbatch"
if [ ! -f "$script" ]; then
    fail "make install left out $script"
    finish
fi

D=$(mktemp -d /tmp/dfccl-slurm.XXXXXX)
chmod 755 "$D"
mkdir -p "$D/state" "$D/spool" "$D/job"
pids_of() { cat "$D"/*.pid 2> /dev/null; }
stop_daemons() {
    local p
    for p in $(pids_of); do kill "$p" 2> /dev/null; done
    sleep 1
    for p in $(pids_of); do kill -9 "$p" 2> /dev/null; done
}
trap stop_daemons EXIT

# munge: a key of our own, a socket of our own (root needs --force)
head -c 1024 /dev/urandom > "$D/munge.key" && chmod 600 "$D/munge.key"
if ! munged --force --socket="$D/munge.sock" --key-file="$D/munge.key" --log-file="$D/munged.log" \
    --pid-file="$D/munged.pid" --seed-file="$D/munged.seed" > "$D/munged.out" 2>&1; then
    skip "Slurm batch script: munged did not start: $(tail -n 2 "$D/munged.out" "$D/munged.log" 2> /dev/null | tr '\n' ' ')"
    finish
fi

host=$(hostname -s)
read -r port1 port2 < <(python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s:
    x.bind(("", 0))
print(*[x.getsockname()[1] for x in s])')
cat > "$D/slurm.conf" << EOF
ClusterName=dfccltest
SlurmctldHost=$host
SlurmctldPort=$port1
SlurmdPort=$port2
SlurmUser=$(id -un)
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$D/munge.sock
CredType=cred/munge
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdLogFile=$D/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=$host CPUs=16 Boards=1 SocketsPerBoard=1 CoresPerSocket=16 ThreadsPerCore=1 RealMemory=1000 State=UNKNOWN
PartitionName=ci Nodes=$host Default=YES MaxTime=30 State=UP
EOF
export SLURM_CONF="$D/slurm.conf"
slurmctld -f "$SLURM_CONF" > "$D/slurmctld.out" 2>&1
slurmd -f "$SLURM_CONF" > "$D/slurmd.out" 2>&1
up=0
for _ in $(seq 1 40); do
    if timeout 5 sinfo -h -o '%T' 2> /dev/null | grep -qE '^(idle|mixed)'; then
        up=1
        break
    fi
    sleep 0.5
done
if [ $up -eq 0 ]; then
    skip "Slurm batch script: slurmctld/slurmd did not bring the node up within 20 s: $(tail -n 3 "$D"/slurmctld.log \
        "$D"/slurmd.log "$D"/*.out 2> /dev/null | grep -v '^$' | tail -n 6 | tr '\n' ' ') (logs in $D)"
    trap - EXIT
    stop_daemons
    finish
fi
pass "Slurm $(sinfo -V | awk '{ print $2 }') up in a container: munged, slurmctld, slurmd (node $host, partition ci)"

# the installed script, as a user submits it on one node without GPUs; Ethernet-style UCX
# settings (the script's defaults are InfiniBand's)
out="$D/job/dfccl.out"
t0=$(date +%s)
(cd "$D/job" && DFCCL_PREFIX="$P" UCX_TLS=tcp,sm,self UCX_NET_DEVICES=all \
    timeout 600 sbatch --wait -N 1 --ntasks-per-node=2 --output="$out" "$script") > "$D/sbatch.out" 2>&1
rc=$?
secs=$(($(date +%s) - t0))
if [ ! -f "$out" ]; then
    fail "sbatch $script: no job output (exit $rc): $(tail -n 3 "$D/sbatch.out" | tr '\n' ' ') (logs in $D)"
    trap - EXIT
    stop_daemons
    finish
fi
bad=
[ $rc -eq 0 ] || bad="$bad sbatch-exit-$rc"
grep -q '^slurm_dfccl: 0 step(s) failed$' "$out" || bad="$bad steps-failed"
nsteps=$(grep -c ': exit status 0$' "$out")
[ "$nsteps" -eq 6 ] || bad="$bad $nsteps-of-6-steps-ok"
[ "$(grep -c '^# Out of bounds values : 0 OK$' "$out")" -ge 5 ] || bad="$bad bench-check"
grep -q 'all 8 collectives completed on every rank in 20 iterations, results correct' "$out" || bad="$bad demo"
grep -q '^# engine dfccl (through its Open MPI component)$' "$out" || bad="$bad mpi-not-through-dfccl"
grep -q 'tasks: 2, cpus per task: 5$' "$out" || bad="$bad cores-per-task"
if [ -z "$bad" ]; then
    pass "sbatch --wait -N 1 --ntasks-per-node=2 slurm_dfccl.sbatch (installed): 6 steps, dfccl-bench checked, demo correct, MPI_Allreduce through dfccl, 5 cores per task (${secs} s)"
else
    grep -E 'exit status|error|Error|FAIL' "$out" | head -n 20
    fail "slurm_dfccl.sbatch under Slurm:$bad (job output $out)"
    trap - EXIT
    stop_daemons
    finish
fi
trap - EXIT
stop_daemons
rm -rf "$D"
finish

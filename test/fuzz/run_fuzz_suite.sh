#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The deadlock fuzzer's fixed seed range, as CI runs it (make check: test/fuzz_suite.sh).
#
#   test/fuzz/run_fuzz_suite.sh BUILD_DIR
#
# Random programs of test/fuzz/fuzz.c run through test/fuzz/fuzz_run.py (every program
# under a wall-clock timeout and its own no-progress watchdog): natively and through the
# Open MPI component on the CPU daemon, with late peers, a killed rank (both ways), a configuration
# variant; then, with DFCCL_PREEMPT=0, the same generator must find a hang (it bites),
# which the native case also shrinks, and a bit flipped on purpose must be found (the
# oracle bites) and shrunk to its collective. One "PASS: ..." or "FAIL: ..." line per case (and
# one FAIL line per failing seed, with its reproducer), then "N passed, N failed".
#
# Environment: DFCCL_* variables are passed to every rank; FUZZ_TIME_SCALE multiplies
# the time limits (default 1); FUZZ_LOGDIR keeps the logs (default: a new /tmp dir).
set -u

BUILD=${1:?usage: run_fuzz_suite.sh BUILD_DIR}
BUILD=$(cd "$BUILD" && pwd)
SRC=$(cd "$(dirname "$0")" && pwd)
LOGDIR=${FUZZ_LOGDIR:-$(mktemp -d /tmp/dfccl-fuzz-suite.XXXXXX)}
SCALE=${FUZZ_TIME_SCALE:-1}
mkdir -p "$LOGDIR"

ENVS=()
for v in $(compgen -e | grep '^DFCCL_' || true); do
    ENVS+=(--env "$v=${!v}")
done

# pass, fail, relay_verdicts, finish
# shellcheck source=../suite_lib.sh
. "$SRC/../suite_lib.sh"
t_all=$SECONDS

# case NAME TIME_LIMIT [fuzz_run.py args...]: the driver's PASS/FAIL lines are counted
case_run() {
    local name=$1 limit=$2
    shift 2
    local out rc t0=$SECONDS
    out=$(python3 "$SRC/fuzz_run.py" --build "$BUILD" --quiet --logdir "$LOGDIR/$(echo "$name" | tr -c 'A-Za-z0-9=_.-' _)" \
        --time-limit "$(awk "BEGIN{print $limit * $SCALE}")" --name "$name" "${ENVS[@]}" "$@" 2>&1)
    rc=$?
    local f0=$nfail
    relay_verdicts < <(grep -v '^fuzz: ' <<< "$out")
    # an exit status the driver gave no FAIL line for still fails the case
    if [ "$rc" -ne 0 ] && [ "$nfail" -eq "$f0" ]; then
        fail "$name" "fuzz_run.py exit $rc"
    fi
    echo "    [$((SECONDS - t0)) s] $(grep '^fuzz: ' <<< "$out" | tail -n 1)"
}

echo "dfccl fuzz suite: build $BUILD, logs $LOGDIR"

# the native API, 3 communicators' worth of random programs per seed, peers late now and then
case_run "fuzz native: seeds 1-40, np 2/3/4, late peers" 120 --mode native --seeds 1:41 --np 2,3,4 --faults late
# a configuration variant: one slot per communicator, 4 channels on 2 daemon threads
case_run "fuzz native: seeds 41-50, DFCCL_SLOTS=1 DFCCL_CHANNELS=4 DFCCL_CPU_THREADS=2" 40 --mode native \
    --seeds 41:51 --np 2,3,4 --env DFCCL_SLOTS=1 --env DFCCL_CHANNELS=4 --env DFCCL_CPU_THREADS=2
# the direct exchange at every size and rank count under random programs
case_run "fuzz native: seeds 51-70, DFCCL_DIRECT_MAX=4194304 DFCCL_DIRECT_RANKS=2" 60 --mode native --seeds 51:71 \
    --np 2,3,4 --env DFCCL_DIRECT_MAX=4194304 --env DFCCL_DIRECT_RANKS=2
# the zero-copy read on every alltoall and allgather, late peers and a rank killed mid-read
case_run "fuzz native: seeds 71-90, DFCCL_READ_MIN=1, late peers" 60 --mode native --seeds 71:91 \
    --np 2,3,4 --faults late --env DFCCL_READ_MIN=1
case_run "fuzz native: seeds 9-14, DFCCL_READ_MIN=1, a rank killed" 40 --mode native --seeds 9:15 \
    --np 2,3,4 --faults kill --timeout 60 --env DFCCL_READ_MIN=1
# a rank raises SIGKILL mid-program: every survivor must end with an error, never hang
case_run "fuzz native: seeds 1-8, a rank killed, every survivor ends with an error" 40 --mode native \
    --seeds 1:9 --np 2,3,4 --faults kill --timeout 60
if [ -f "$BUILD/ompi_coll_dfccl/.libs/mca_coll_dfccl.so" ]; then
    # plain MPI through mca_coll_dfccl (host buffers on the engine)
    case_run "fuzz mpi (component, host buffers): seeds 1-30, np 2/3/4, late peers" 100 --mode mpi --seeds 1:31 \
        --np 2,3,4 --faults late
    case_run "fuzz mpi (component, host buffers): seeds 31-40, DFCCL_DIRECT_MAX=4194304 DFCCL_DIRECT_RANKS=2" 60 \
        --mode mpi --seeds 31:41 --np 2,3,4 --env DFCCL_DIRECT_MAX=4194304 --env DFCCL_DIRECT_RANKS=2
    # the GPU daemon's path in the component (device buffers emulated on host memory and
    # handed to the engine as they are: in-place moves and copies on the "device")
    case_run "fuzz mpi (component, device buffers emulated, coll_dfccl_fake_device=2): seeds 41-60" 60 \
        --mode mpi --seeds 41:61 --np 2,3,4 --faults late --env OMPI_MCA_coll_dfccl_fake_device=2
    # a rank killed through the component, often before the engine communicator of the
    # communicator it leaves was set up (its private exchanges then wait on the dead rank:
    # Open MPI fails no message to it): every survivor must end with an error, never hang
    # (before the fix, 6 of seeds 1-12 and 5 of 13-20 hung; the watchdog says HANG at 10 s)
    case_run "fuzz mpi: seeds 1-12, np 3/4, a rank killed, every survivor ends with an error" 60 --mode mpi \
        --seeds 1:13 --np 3,4 --faults kill --stall 10 --timeout 40 --no-shrink
    case_run "fuzz mpi: seeds 13-20, a rank killed, coll_dfccl_eager=1" 45 --mode mpi --seeds 13:21 --np 3,4 \
        --faults kill --stall 10 --timeout 40 --no-shrink --env OMPI_MCA_coll_dfccl_eager=1
else
    echo "SKIP: fuzz mpi (the component is not built)"
fi

# it bites: with preemption off the first programs deadlock; the watchdog reports HANG
# within --stall seconds, and the native hang is shrunk to the collectives that make it
case_run "fuzz native with DFCCL_PREEMPT=0 must hang (and shrink)" 90 --mode native --seeds 1:21 --np 3,4 \
    --env DFCCL_PREEMPT=0 --stall 3 --timeout 30 --expect-hang --shrink-time 45
if [ -f "$BUILD/ompi_coll_dfccl/.libs/mca_coll_dfccl.so" ]; then
    case_run "fuzz mpi with DFCCL_PREEMPT=0 must hang" 60 --mode mpi --seeds 1:21 --np 3,4 \
        --env DFCCL_PREEMPT=0 --stall 3 --timeout 30 --expect-hang --no-shrink
fi

# the oracle bites too: one bit of one element of collective 2 flipped after it completed
# must be reported as WRONG, and the shrinker must cut the program down to that collective
# (seed 7: its collective 2 gives communicator rank 0 elements to flip, natively and
# through MPI; a seed whose collective 2 leaves rank 0 nothing, a barrier say, cannot show
# it, and a new collective kind in the generator changes every seed's program)
case_run "fuzz native: a flipped bit is WRONG, shrunk to its collective" 60 --mode native --seeds 7 --np 3 \
    --extra "--inject-wrong 2" --expect-wrong --shrink-time 45
if [ -f "$BUILD/ompi_coll_dfccl/.libs/mca_coll_dfccl.so" ]; then
    case_run "fuzz mpi: a flipped bit is WRONG" 30 --mode mpi --seeds 7 --np 3 --extra "--inject-wrong 2" \
        --expect-wrong --no-shrink
fi

echo "fuzz suite: $((SECONDS - t_all)) s"
finish

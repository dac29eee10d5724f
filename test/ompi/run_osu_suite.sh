#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# OSU Micro-Benchmarks 7.4 (../shared/osu, our users' benchmark) through mca_coll_dfccl,
# as a user runs them: every collective benchmark, blocking and non-blocking, from 4 B to
# 1 MiB, with OSU's own validation of every size (-c: rank-dependent inputs, each
# element of the result compared with the expected one).
#
#   host      host buffers on the CPU daemon (coll_dfccl_host_buffers 1): float at 3
#             ranks (uneven counts, an odd rank count), int for the reductions, in place
#             (-l) where OSU has it, the main collectives at 2 and 4 ranks
#   fake      device buffers emulated on host memory, 4 ranks: handed to the engine as the
#             GPU daemon takes them (coll_dfccl_fake_device 2; in place too), and staged
#             through host copies (coll_dfccl_fake_device 1)
#   --cuda    (GPU machines) device buffers (-d cuda), the default settings: every
#             benchmark at 8 ranks, the main ones at 2, in place at 4
#
# A case passes when OSU exits 0 within its timeout, prints every size with "Pass", and
# the component's log (coll_dfccl_verbose 3) shows every call of the benchmark's
# collective going to the engine, at least one per size and rank. Barriers stay with
# Open MPI (the component does not take them): theirs must run beside dfccl. With --cuda
# the calls on device memory must all go to the engine: OSU's own MPI_Allreduce and
# MPI_Reduce of its error counts and timings pass host memory, which goes to Open MPI
# with the default settings (coll_dfccl_host_buffers 0).
#
#   test/ompi/run_osu_suite.sh BUILD_DIR [--cuda]
#   OSU_SRC       folder with osu-micro-benchmarks-7.4.tar.gz and build.sh (default: the
#                 shared/osu folder beside the source tree); absent: every case is a SKIP
#   SUITE_FILTER  only the cases whose name matches this extended regex
# Prints "PASS: name" / "FAIL: name (why)" per case, then "N passed, N failed".
set -u

BUILD=$(cd "${1:?usage: run_osu_suite.sh BUILD_DIR [--cuda]}" && pwd)
CUDA=${2:-}
SRC=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$SRC/../.." && pwd)
OSU_SRC=${OSU_SRC:-$TOP/../shared/osu}
# shellcheck disable=SC2034 # read by suite_lib.sh's selected
FILTER=${SUITE_FILTER:-}
COMPDIR=$BUILD/ompi_coll_dfccl/.libs

# shellcheck disable=SC2034 # read by suite_lib.sh
npass=0 nfail=0 FAILED=()
# shellcheck source=../suite_lib.sh
. "$SRC/../suite_lib.sh"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dfccl-osu-suite.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
on_fail() {
    grep -v 'verbose_call\|help message\|help_aggregate' "$WORK/all" 2>/dev/null | tail -12 |
        sed 's/^/    | /'
}

if [ ! -f "$OSU_SRC/osu-micro-benchmarks-7.4.tar.gz" ] || [ ! -f "$OSU_SRC/build.sh" ]; then
    skip "osu (no OSU 7.4 at $OSU_SRC: set OSU_SRC)"
    finish
fi
if [ ! -f "$COMPDIR/mca_coll_dfccl.so" ]; then
    fail "osu setup" "$COMPDIR/mca_coll_dfccl.so not built"
    finish
fi

# ---------------------------------------------------------------- build OSU once per build dir
flavour=host
[ "$CUDA" = --cuda ] && flavour=cuda
OSU_DIR=$BUILD/test/osu-$flavour
O=$OSU_DIR/osu-micro-benchmarks-7.4/c/mpi/collective
if [ ! -x "$O/non_blocking/osu_iscatterv" ] || [ "$OSU_SRC/osu-micro-benchmarks-7.4.tar.gz" -nt "$O/non_blocking/osu_iscatterv" ]; then
    rm -rf "$OSU_DIR"
    # shellcheck disable=SC2086 # --cuda or nothing
    if ! sh "$OSU_SRC/build.sh" "$OSU_DIR" ${CUDA:+--cuda} > "$WORK/build.log" 2>&1; then
        tail -20 "$WORK/build.log"
        find "$OSU_DIR" -name make.log -exec tail -20 {} \; 2>/dev/null
        fail "osu build" "build.sh $OSU_DIR $CUDA failed"
        finish
    fi
fi

SYS=$(ompi_info --path pkglibdir 2>/dev/null | sed -e 's/.*: *//')
# shellcheck disable=SC2054 # "self,vader" is one argument
MPIRUN=(mpirun --oversubscribe --bind-to none --mca btl self,vader
    --mca mca_base_component_path "$COMPDIR:$SYS" --mca coll dfccl,tuned,libnbc,basic,self
    --mca coll_dfccl_verbose 3 -x "LD_LIBRARY_PATH=$BUILD/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
[ "$(id -u)" = 0 ] && MPIRUN+=(--allow-run-as-root)
[ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] && MPIRUN+=(-x CUDA_MPS_PIPE_DIRECTORY)
MIN=4 MAX=1048576
NSIZES=0
for ((s = MIN; s <= MAX; s *= 2)); do NSIZES=$((NSIZES + 1)); done

# The MPI call a benchmark times: osu_ireduce_scatter_block -> Ireduce_scatter_block
call_of() {
    local b=${1#osu_}
    echo "${b^}"
}

# case NAME NP BENCH [mpirun args] -- [OSU args]: one OSU run, judged as above
case_run() {
    local name=$1 np=$2 bench=$3
    shift 3
    selected "$name" || return 0
    local margs=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do margs+=("$1"); shift; done
    shift
    local prog=$O/blocking/$bench
    [ -x "$prog" ] || prog=$O/non_blocking/$bench
    # a barrier has no sizes, data or validation: OSU refuses -c, -m and -T for it
    local osu=(-c -m "$MIN:$MAX" -i 10 -x 2 "$@")
    [[ $bench == *barrier ]] && osu=(-i 10 -x 2)
    # each rank's output in files of its own (--output-filename), so that no line of the
    # component's log is cut into another rank's: OSU's table is rank 0's stdout
    rm -rf "$WORK/ranks"
    timeout -k 5 120 "${MPIRUN[@]}" --output-filename "$WORK/ranks" -np "$np" "${margs[@]}" "$prog" "${osu[@]}" \
        > "$WORK/all" 2>&1 < /dev/null
    local rc=$? call
    cat "$WORK"/ranks/*/rank.0/stdout > "$WORK/out" 2>/dev/null
    cat "$WORK"/ranks/*/rank.*/stderr > "$WORK/err" 2>/dev/null
    call=$(call_of "$bench")
    local rows passrows engine other
    rows=$(awk '$1 ~ /^[0-9]+$/' "$WORK/out" | grep -c . || true)
    passrows=$(awk '$1 ~ /^[0-9]+$/ && $NF == "Pass"' "$WORK/out" | grep -c . || true)
    engine=$(grep -c "MPI_$call on MPI_COMM_WORLD (cid [0-9]*, $np ranks): -> engine (" "$WORK/err" || true)
    # the calls that had to reach the engine: with --cuda, those on device memory
    local mem=
    [ "$CUDA" = --cuda ] && mem='(device memory'
    other=$(grep "MPI_$call on MPI_COMM_WORLD (cid" "$WORK/err" | grep -F -- "$mem" | grep -vc -- '-> engine (' || true)
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        fail "$name" "timed out"
    elif [ "$rc" != 0 ]; then
        local failed
        failed=$(awk '$1 ~ /^[0-9]+$/ && $NF == "Fail" {printf "%s%s", s, $1; s = " "}' "$WORK/out")
        fail "$name" "exit $rc${failed:+, validation failed at sizes $failed}"
    elif [[ $bench != *barrier ]] && { [ "$rows" != "$NSIZES" ] || [ "$passrows" != "$NSIZES" ]; }; then
        fail "$name" "$passrows of $NSIZES sizes validated ($rows printed)"
    elif [ "$other" != 0 ]; then
        fail "$name" "$other calls of MPI_$call not on the engine: $(grep "MPI_$call on MPI_COMM_WORLD (cid" "$WORK/err" | grep -F -- "$mem" | grep -v -- '-> engine (' | head -1 | sed 's/.*): //')"
    elif [[ $bench == *barrier ]]; then
        # the component leaves barriers to Open MPI (ompi_coll_dfccl/README.md): it must
        # run beside dfccl, and print its latency
        if grep -qE '^ *[0-9]+\.[0-9]+( |$)' "$WORK/out" && [ "$engine" = 0 ]; then
            pass "$name (Open MPI's barrier beside dfccl)"
        else
            fail "$name" "no latency printed, or $engine barriers on the engine"
        fi
    elif [ "$engine" -lt $((np * NSIZES)) ]; then
        fail "$name" "$engine calls of MPI_$call on the engine, fewer than one per size and rank"
    else
        pass "$name ($passrows sizes validated, $engine calls on the engine)"
    fi
}

# every collective benchmark of OSU 7.4 but the barrier, each with its MPI_I* form
ALL="allreduce reduce bcast reduce_scatter reduce_scatter_block allgather alltoall gather scatter allgatherv alltoallv alltoallw gatherv scatterv"
MAIN="allreduce reduce bcast reduce_scatter allgather alltoall"
REDUCING="allreduce reduce reduce_scatter reduce_scatter_block"
# OSU's -l (MPI_IN_PLACE) exists for these
INPLACE="allreduce reduce reduce_scatter reduce_scatter_block allgather allgatherv alltoall alltoallv alltoallw gather gatherv scatter scatterv"

if [ "$CUDA" = --cuda ]; then
    # device buffers, the defaults: what a GPU job gets (8 ranks: every benchmark; 2:
    # the main ones)
    for c in $ALL barrier; do
        for b in "osu_$c" "osu_i$c"; do
            case_run "cuda $b np=8" 8 "$b" -- -d cuda -T mpi_float
        done
    done
    for c in $MAIN; do
        for b in "osu_$c" "osu_i$c"; do
            case_run "cuda $b np=2" 2 "$b" -- -d cuda -T mpi_float
        done
    done
    for c in $INPLACE; do
        for b in "osu_$c" "osu_i$c"; do
            case_run "cuda $b np=4 in place" 4 "$b" -- -d cuda -T mpi_float -l
        done
    done
    finish
fi

HB=(--mca coll_dfccl_host_buffers 1)
for c in $ALL barrier; do
    for b in "osu_$c" "osu_i$c"; do
        case_run "host $b np=3 float" 3 "$b" "${HB[@]}" -- -T mpi_float
    done
done
for c in $REDUCING; do
    for b in "osu_$c" "osu_i$c"; do
        case_run "host $b np=3 int" 3 "$b" "${HB[@]}" -- -T mpi_int
    done
done
for c in $INPLACE; do
    for b in "osu_$c" "osu_i$c"; do
        case_run "host $b np=3 in place" 3 "$b" "${HB[@]}" -- -T mpi_float -l
    done
done
for np in 2 4; do
    for c in $MAIN; do
        for b in "osu_$c" "osu_i$c"; do
            case_run "host $b np=$np float" "$np" "$b" "${HB[@]}" -- -T mpi_float
        done
    done
done
for c in $ALL; do
    for b in "osu_$c" "osu_i$c"; do
        case_run "fake direct $b np=4 float" 4 "$b" --mca coll_dfccl_fake_device 2 -- -T mpi_float
        case_run "fake staged $b np=4 float" 4 "$b" --mca coll_dfccl_fake_device 1 -- -T mpi_float
    done
done
for c in $INPLACE; do
    for b in "osu_$c" "osu_i$c"; do
        case_run "fake direct $b np=4 in place" 4 "$b" --mca coll_dfccl_fake_device 2 -- -T mpi_float -l
    done
done
finish

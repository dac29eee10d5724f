#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The engine's threads under AddressSanitizer: a second build of libdfccl and the MPI test
# programs (no CUDA: the host side is what has threads) with -fsanitize=address, then the
# cases that hand tasks between CPU daemon threads and proxies. A use-after-free there
# is silent in the normal build (a task freed by the worker that finished it while
# another still reads it: found this way once). One line per case, "PASS: ..." /
# "FAIL: ...", and "N passed, N failed" at the end.
#
# usage: asan_suite.sh BUILD_DIR      (configured and built here when missing)
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
B=${1:?usage: asan_suite.sh BUILD_DIR}
mkdir -p "$B" && B=$(cd "$B" && pwd)
LOGDIR=$(mktemp -d /tmp/dfccl-asan.XXXXXX)
jobs=$(nproc 2>/dev/null || echo 2)
npass=0 nfail=0

if [ ! -f "$B/Makefile" ]; then
    # no --enable-werror: -O1 with ASan makes GCC warn where the main (-Werror) build does not
    (cd "$B" && "$SRC/configure" --without-cuda \
        CFLAGS="-O1 -g -fsanitize=address -fno-omit-frame-pointer" LDFLAGS="-fsanitize=address") \
        > "$LOGDIR/configure.log" 2>&1 || { echo "FAIL: asan build (configure; $LOGDIR/configure.log)"; echo "0 passed, 1 failed"; exit 1; }
fi
if ! make -C "$B" -j"$jobs" libdfccl.la test/mpi/t_matrix test/mpi/t_chaos test/mpi/t_comms test/mpi/t_random test/mpi/t_vcolls \
    test/mpi/t_collmismatch \
    > "$LOGDIR/make.log" 2>&1; then
    tail -20 "$LOGDIR/make.log"
    echo "FAIL: asan build (make; $LOGDIR/make.log)"
    echo "0 passed, 1 failed"
    exit 1
fi

# leaks are not the point here (MPI's own allocations would drown them)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=0}
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --mca btl self,vader --bind-to none -x ASAN_OPTIONS)
BIN=$B/test/mpi
# shellcheck disable=SC2034 # read by suite_lib.sh
ORPHAN_DIRS=("$BIN")
# shellcheck source=suite_lib.sh
. "$SRC/test/suite_lib.sh"

# case_run NAME NP TIMEOUT [mpirun args...] -- PROGRAM [args...]
case_run() {
    local name=$1 np=$2 tmo=$3
    shift 3
    local log=$LOGDIR/${name//[^A-Za-z0-9]/_}_np$np.log
    run_mpi "$log" "$tmo" "$np" "$@"
    if grep -q 'ERROR: AddressSanitizer' "$log"; then
        fail "$name np=$np" "$(grep -m1 'ERROR: AddressSanitizer' "$log" | cut -c1-160); log $log"
    elif [ "$RC" -ne 0 ] || ! grep -qx 'OK' "$log"; then
        fail "$name np=$np" "exit $RC without OK: $(reason_of "$log"); log $log"
    else
        pass "$name np=$np"
    fi
}

T() { echo -x DFCCL_CPU_THREADS="$1" -x DFCCL_CHANNELS="$2"; }
# one rank, more threads than channels: a one-rank copy's only part is on a worker other
# than worker 0 (the case of the use-after-free)
# shellcheck disable=SC2046
case_run "asan t_matrix[threads=8,channels=2]" 1 120 $(T 8 2) -- t_matrix --quick
# shellcheck disable=SC2046
case_run "asan t_matrix[threads=4,channels=4]" 2 120 $(T 4 4) -- t_matrix --quick
# shellcheck disable=SC2046
case_run "asan t_matrix[threads=3,channels=8]" 3 180 $(T 3 8) -- t_matrix --quick
# shellcheck disable=SC2046
case_run "asan t_chaos[threads=4,channels=4]" 3 120 $(T 4 4) -- t_chaos 10 --deadline 60
# shellcheck disable=SC2046
case_run "asan t_comms[threads=2,channels=3]" 3 120 $(T 2 3) -- t_comms
# shellcheck disable=SC2046
case_run "asan t_random[threads=2,channels=4]" 3 120 $(T 2 4) -- t_random --rounds 4 --deadline 60
# the v-collectives' tables, read by several workers and freed with their requests
# shellcheck disable=SC2046
case_run "asan t_vcolls[threads=2,channels=4,chunk=4096]" 3 180 $(T 2 4) -x DFCCL_CHUNK_SIZE=4096 -- t_vcolls --quick
# shellcheck disable=SC2046
case_run "asan t_vcolls[chaos,threads=2,channels=2]" 4 120 $(T 2 2) -- t_vcolls --chaos 3 --scale 20000 --deadline 60
# the zero-copy read's descriptor (a one-entry table, read by several workers, freed with
# its request), every alltoall and allgather
# shellcheck disable=SC2046
case_run "asan t_matrix[read_min=1,threads=2,channels=4]" 3 180 $(T 2 4) -x DFCCL_READ_MIN=1 -- t_matrix --quick
# shellcheck disable=SC2046
case_run "asan t_random[read_min=1,threads=2,channels=4]" 3 120 $(T 2 4) -x DFCCL_READ_MIN=1 -- t_random \
    --rounds 4 --deadline 60
# two roots of a bcast, found by a root's look at its next call
case_run "asan t_collmismatch[two-roots]" 3 120 -- t_collmismatch two-roots
# the net transport's proxies: every peer over UCX, 2 proxies
if grep -q "^HAVE_UCX_TRUE=''" "$B/config.log" 2>/dev/null; then
    # shellcheck disable=SC2046
    case_run "asan t_matrix[net=ucx,2 proxies,threads=2,channels=4]" 3 180 $(T 2 4) -x DFCCL_NET=ucx \
        -x DFCCL_NET_THREADS=2 -- t_matrix --quick
    # a mismatch with net peers: the asks, the descriptions and the news between proxies
    # (messages from copies freed when sent), the copies read by the daemon threads
    # shellcheck disable=SC2046
    case_run "asan t_collmismatch[count,net=ucx,2 proxies]" 3 120 $(T 2 4) -x DFCCL_NET=ucx \
        -x DFCCL_NET_THREADS=2 -- t_collmismatch count --elems 65536
else
    echo "SKIP: asan net cases (built without UCX)"
fi
finish

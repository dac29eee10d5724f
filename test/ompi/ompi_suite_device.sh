#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The component suite's device-buffer part (GPU machines), sourced by run_ompi_suite.sh
# at its end (alone with DEVICE_ONLY=1): the same run/check helpers, the programs built
# with the CUDA runtime (t_device, and t_*_dev with -DOT_DEVICE). A SKIP line where
# there is no GPU or t_device was not built.
# shellcheck shell=bash disable=SC2154 # BIN, SRC, WORK: set by run_ompi_suite.sh

# a hang proof on the GPU leaves the daemon kernels spinning until MPS is restarted
mps_restart() {
    [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] || return 0
    echo quit | nvidia-cuda-mps-control >/dev/null 2>&1
    for _ in $(seq 50); do pgrep -f nvidia-cuda-mps-server >/dev/null || break; sleep 0.2; done
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "${CUDA_MPS_LOG_DIRECTORY:-/tmp}"
    nvidia-cuda-mps-control -d
    sleep 1
}

# ---------------------------------------------------------------- device buffers (GPU machines)
if [ -x "$BIN/t_device" ] && nvidia-smi -L >/dev/null 2>&1; then
    for np in 2 4; do
        # host_buffers stays 0: device buffers go to the engine, host ones pass through
        run 300 $np --mca coll_dfccl_verbose 3 -- t_device
        rc=$?
        if [ $rc = 0 ] && grep -q 'OK t_device' "$WORK/out" && grep -q -- '-> engine (device memory' "$WORK/out" &&
            grep -q -- '-> previous module (staged through host) (device memory' "$WORK/out" &&
            ! grep -q -- '-> engine (host memory' "$WORK/out"; then
            pass "device buffers: engine (staged), fallbacks staged, managed memory as host np=$np"
            grep '^OK ' "$WORK/out" | sed 's/^/    /'
        else
            fail "device buffers np=$np" "rc $rc"
        fi
    done
    # mismatched calls on device buffers with the default settings (the GPU daemon's
    # signatures), and one rank on host buffers where the others pass device ones
    # (coll_dfccl_host_buffers 1: the CPU daemon against the GPU's): named on every rank
    if [ -x "$BIN/t_sigmismatch_dev" ]; then
        run 120 3 "${HB[@]}" -- t_sigmismatch_dev 10
        check_lines "device buffers: mismatched calls and memory kinds fail on every rank np=3" $? \
            'OK t_sigmismatch: 8 mismatches'
    fi
    # the per-call legacy-stream synchronization, on request
    run 300 2 --mca coll_dfccl_device_sync 1 -- t_device
    check_lines "device buffers with coll_dfccl_device_sync=1 np=2" $? \
        'OK t_device'
    for np in $([ -x "$BIN/t_colls_dev" ] && echo 2 4); do
        run 600 $np --mca coll_dfccl_verbose 3 -- t_colls_dev --quick
        rc=$?
        if [ $rc = 0 ] && grep -q 'OK t_colls' "$WORK/out" && grep -q -- '-> engine (device memory' "$WORK/out"; then
            pass "device buffers: the collective matrix through MPI on the GPU daemon np=$np"
            grep '^OK ' "$WORK/out" | sed 's/^/    /'
        else
            fail "device-buffer matrix np=$np" "rc $rc"
            grep -v '^\[' "$WORK/out" | tail -8 | sed 's/^/    /'
        fi
    done
    # the same over the net transport (every peer forced onto UCX): host-staged FIFOs
    if [ -x "$BIN/t_colls_dev" ] && ldd "$LIBDIR/libdfccl.so" 2>/dev/null | grep -q libucp; then
        run 600 4 --mca coll_dfccl_verbose 3 --mca coll_dfccl_net ucx -- t_colls_dev --quick
        check_lines "device buffers over the net transport (coll_dfccl_net=ucx): the collective matrix through MPI np=4" $? \
            'OK t_colls' \
            '-> engine (device memory'
    fi
    # the collectives dfccl stages, on real device buffers
    for np in 2 4 8; do
        run 300 $np --mca coll_dfccl_verbose 3 -- t_allcolls_dev
        check_lines "device buffers: gather(v), scatter(v), allgatherv, alltoallv/w, scan, exscan on the GPU daemon (in-place alltoallv/w too; user ops staged) np=$np" $? \
            'OK t_allcolls' \
            'MPI_Igatherv on .*-> engine (device memory' \
            '-> previous module (staged through host) (device memory'
    done
    # --mca coll dfccl alone on device buffers: no previous module; what the engine cannot
    # run (user ops) is staged to dfccl's own fallbacks
    for np in 2 4 8; do
        run 300 $np --mca coll dfccl --mca coll_dfccl_verbose 3 -- t_allcolls_dev
        check_lines "dfccl alone (--mca coll dfccl), device buffers: gather(v) ... exscan, user ops staged to the fallbacks np=$np" $? \
            'OK t_allcolls' \
            'MPI_Igatherv on .*-> engine (device memory' \
            '-> previous module (staged through host) (device memory'
    done
    run 600 4 --mca coll dfccl -- t_colls_dev --quick
    check_ok "dfccl alone (--mca coll dfccl), device buffers: the collective matrix np=4" $?
    run 300 4 --mca coll dfccl -- t_chaos_dev --mix --deadline 120
    check_ok "dfccl alone (--mca coll dfccl), device buffers: chaos order of the new collectives np=4" $?
    # intercommunicators: device buffers staged for the other components
    for np in 2 5; do
        run 300 $np --mca coll_dfccl_verbose 3 -- t_inter_dev
        check_lines "device buffers: intercommunicator collectives staged for the other components np=$np" $? \
            'OK t_inter' \
            '-> previous module (staged through host) (device memory'
    done
    # deadlock freedom from the very first call on device buffers: default settings,
    # fresh communicators, no warm-up
    for np in 2 4 8; do
        run 300 $np -- t_chaos_dev --deadline 120
        check_ok "device buffers: chaos order from the first call, 8 dups np=$np" $?
    done
    for np in 2 4 8; do
        run 300 $np -- t_chaos_dev --mix --deadline 120
        check_ok "device buffers: chaos order, Igatherv/Ialltoallv/Iallgatherv/Iscatterv/Iscan on 8 dups np=$np" $?
        run 300 $np -- t_chaos_dev --uniform --deadline 120
        check_ok "device buffers: chaos order, Ibcast/Ireduce/Iallgather/Ireduce_scatter_block/Ialltoall/Igather/Iscatter on 8 dups np=$np" $?
    done
    for np in 2 4 8; do
        run 300 $np -- t_chaos_dev --kind split --deadline 120
        check_ok "device buffers: chaos order from the first call, MPI_Comm_split communicators np=$np" $?
        run 300 $np -- t_chaos_dev --kind group --deadline 120
        check_ok "device buffers: chaos order from the first call, MPI_Comm_create_group communicators np=$np" $?
        run 300 $np --mca coll_dfccl_check 1 -- t_chaos_dev --deadline 120
        check_ok "device buffers: chaos order from the first call with coll_dfccl_check=1 np=$np" $?
        run 300 $np -- t_chaos_dev --thread multiple --threads 4 --blocking --deadline 120
        check_ok "device buffers: chaos order, MPI_THREAD_MULTIPLE, 4 threads per rank np=$np" $?
    done
    # a real client: mpi4py + CuPy, in mpi4py's default thread mode
    PYDEV=${PYTHON_CUPY:-python3}
    if "$PYDEV" -c 'import mpi4py, cupy' 2>/dev/null; then
        for np in 2 4 8; do
            run 300 $np --mca coll_dfccl_verbose 3 -- "$(command -v "$PYDEV")" "$SRC/t_mpi4py.py" --cupy --deadline 120
            check_engine "mpi4py + CuPy: collectives, then chaos on fresh Dups np=$np" $? device
        done
        # coll_dfccl_eager: the set-ups start inside MPI.Comm.Dup, which must return at once
        run 300 4 --mca coll_dfccl_eager 1 -- "$(command -v "$PYDEV")" "$SRC/t_mpi4py.py" --cupy --deadline 120
        check_ok "mpi4py + CuPy with coll_dfccl_eager=1 np=4" $?
    else
        echo "SKIP: mpi4py + CuPy ($PYDEV has no mpi4py or cupy)"
    fi
    # set-ups with GPU parts in flight when communicators are freed or left to finalize
    for np in 2 8; do
        run 300 $np --mca coll_dfccl_eager 1 -- t_teardown
        check_ok "coll_dfccl_eager=1 with the GPU backend: communicators freed with set-ups in flight np=$np" $?
    done
    # create, use, free: device memory comes back; creation and free times
    for np in 2 8; do
        run 600 $np -- t_commfree_dev --n 1000
        check_ok "device buffers: 1000 communicators created, used, freed: device memory, RSS, fds, shm bounded np=$np" $?
        grep '^rank 0:' "$WORK/out" | sed 's/^/    /'
    done
    # the hang proofs last (each leaves kernels spinning: MPS restarted after it)
    run 60 4 --mca coll_dfccl_preempt 0 -- t_chaos_dev --deadline 15 --iters 4
    check_hang "device buffers: chaos order with coll_dfccl_preempt 0, np=4," $?
    mps_restart
    run 60 4 --mca coll_dfccl_preempt 0 -- t_chaos_dev --mix --deadline 15 --iters 4
    check_hang "device buffers: chaos order of the new collectives with coll_dfccl_preempt 0, np=4," $?
    mps_restart
    run 60 4 --mca coll_dfccl_preempt 0 -- t_chaos_dev --uniform --deadline 15 --iters 4
    check_hang "device buffers: chaos order of the uniform collectives with coll_dfccl_preempt 0, np=4," $?
    mps_restart
    if "$PYDEV" -c 'import mpi4py, cupy' 2>/dev/null; then
        run 90 4 --mca coll_dfccl_preempt 0 -- "$(command -v "$PYDEV")" "$SRC/t_mpi4py.py" --cupy --deadline 15 --iters 4
        check_hang "mpi4py + CuPy chaos with coll_dfccl_preempt 0, np=4," $?
        mps_restart
    fi
else
    echo "SKIP: device buffers (no GPU here, or t_device not built)"
fi

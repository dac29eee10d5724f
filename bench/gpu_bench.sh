#!/bin/bash
# GPU benchmark runs for bench/RESULTS.md: 2, 4, 8 ranks under MPS on one GPU, preemption
# on and off, side by side in one call (with the MPI_Allreduce column: -m).   gpu_bench.sh BUILD_DIR
set -u
B=${1:?usage: gpu_bench.sh BUILD_DIR}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/dfccl-mps/pipe}
export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/dfccl-mps/log}
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
nvidia-cuda-mps-control -d
trap 'echo quit | nvidia-cuda-mps-control' EXIT
B=$(cd "$B" && pwd)
# the hardware floor under pick-up and completion, in the same call
[ -x "$B/bench/gpu_floor" ] && "$B/bench/gpu_floor"
# the dfccl coll component from the build tree, for the MPI_Allreduce column (-m)
SYS=$(ompi_info --path pkglibdir 2>/dev/null | sed -e 's/.*: *//')
MPIRUN="mpirun --oversubscribe --mca btl self,vader --bind-to none -x CUDA_MPS_PIPE_DIRECTORY -x LD_LIBRARY_PATH
  --mca mca_base_component_path $B/ompi_coll_dfccl/.libs:$SYS"
for np in ${BENCH_NPS:-2 4 8}; do
    timeout -s KILL ${BENCH_TIMEOUT:-200} $MPIRUN -np $np -x DFCCL_PREEMPT=1 $B/bench/gpu_bench -m ${BENCH_ARGS:-}
    timeout -s KILL ${BENCH_TIMEOUT:-200} $MPIRUN -np $np -x DFCCL_PREEMPT=0 $B/bench/gpu_bench -s ${BENCH_ARGS:-}
done

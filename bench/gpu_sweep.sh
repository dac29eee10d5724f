#!/bin/bash
# Configuration sweep of the GPU benchmark, every variant in one call (one MPS server):
#   gpu_sweep.sh BUILD_DIR "NP|ENV…|GPU_BENCH_ARGS" ...
# e.g. gpu_sweep.sh build "2||-e 64M -s" "2|DFCCL_GPU_SYS_SCOPE=1|-e 64M -s"
# Each variant prints its label and the gpu_bench table.
set -u
B=${1:?usage: gpu_sweep.sh BUILD_DIR VARIANT...}; shift
B=$(cd "$B" && pwd)
SYS=$(ompi_info --path pkglibdir 2>/dev/null | sed -e 's/.*: *//')
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/dfccl-mps/pipe}
export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/dfccl-mps/log}
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
nvidia-cuda-mps-control -d
trap 'echo quit | nvidia-cuda-mps-control' EXIT
for v in "$@"; do
    IFS='|' read -r np envs args <<<"$v"
    xs=""
    for e in $envs; do xs="$xs -x $e"; done
    echo "=== np=$np env=[$envs] args=[$args]"
    timeout -s KILL ${SWEEP_TIMEOUT:-120} mpirun --oversubscribe --mca btl self,vader --bind-to none \
        --mca mca_base_component_path "$B/ompi_coll_dfccl/.libs:$SYS" \
        -x CUDA_MPS_PIPE_DIRECTORY -x LD_LIBRARY_PATH $xs -np "$np" "$B/bench/gpu_bench" $args ||
        echo "=== rc=$?"
done

#!/bin/bash
# Diagnostic runs of the device-buffer matrix under different daemon settings (one log each).
set -u
B=$1; shift
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export CUDA_MPS_PIPE_DIRECTORY=/tmp/dfccl-mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/dfccl-mps/log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
MPIRUN="mpirun --oversubscribe --mca btl self,vader --bind-to none -x CUDA_MPS_PIPE_DIRECTORY -x LD_LIBRARY_PATH"
i=0
for cfg in "$@"; do
    i=$((i + 1))
    # shellcheck disable=SC2086
    timeout -s KILL 200 $MPIRUN -np 2 $cfg $B/test/gpu/t_gpu matrix > $OUT/diag_$i.log 2>&1
    echo "== $cfg rc=$? $(grep -c 'elements differ' $OUT/diag_$i.log) failing cases"
done
echo quit | nvidia-cuda-mps-control

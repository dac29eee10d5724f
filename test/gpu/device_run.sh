#!/bin/bash
# What one device-tool call runs on the GPU machine: build the release tarball carried
# in .dist/, run the GPU suite, then the GPU benchmark (MODE: test, ompi, bench, all,
# multigpu, build). Logs go to $OUT.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
W=/tmp/dfccl-build; rm -rf $W; mkdir -p $W
tar xzf .dist/dfccl-*.tar.gz -C $W && cd $W/dfccl-* || exit 1
( ./configure --enable-werror && make -j16 ${MAKE_TARGETS:-} && { [ -n "${MAKE_TARGETS:-}" ] || make -j16 check TESTS=; } ) > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "build ok"
export LD_LIBRARY_PATH=$PWD/.libs
MODE=${1:-all}
if [ "$MODE" = all ] || [ "$MODE" = test ]; then
    bash test/gpu/run_gpu_tests.sh "$PWD" ${QUICK:-} 2>&1 | tee "$OUT/gpu_tests.log"
fi
if [ "$MODE" = all ] || [ "$MODE" = ompi ]; then
    # the component suite; its device-buffer part runs here, N ranks under MPS
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/dfccl-mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/dfccl-mps/log
    mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
    bash test/ompi/run_ompi_suite.sh "$PWD" ${OMPI_QUICK:-} 2>&1 | tee "$OUT/ompi_tests.log"
    echo quit | nvidia-cuda-mps-control; sleep 1
fi
if [ "$MODE" = multigpu ]; then
    # one rank per GPU against NCCL (a machine kind with several GPUs)
    bash test/gpu/run_multigpu.sh "$PWD" 2>&1 | tee "$OUT/multigpu.log"
fi
if [ "$MODE" = all ] || [ "$MODE" = bench ]; then
    bash bench/gpu_bench.sh "$PWD" 2>&1 | tee "$OUT/gpu_bench.log"
fi

# run AY: FIFO depth (and the GPU step size) over UCX loopback, eager pieces on, proxies auto
set -u; OUT=${OUT:-/tmp/out}; mkdir -p $OUT
S=$(date +%s)
MAKE_TARGETS="libdfccl.la bench/dfccl_bench bench/gpu_bench" timeout 200 bash test/gpu/device_run.sh build > $OUT/b.log 2>&1 || { tail -30 $OUT/b.log; exit 1; }
echo "build wall=$(( $(date +%s) - S ))s"
B=$(echo /tmp/dfccl-build/dfccl-0*); export LD_LIBRARY_PATH=$B/.libs PATH=/tmp/dfccl-build/ucx/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
perftest() {
    local port=$((13337 + RANDOM % 1000))
    timeout 20 ucx_perftest -p $port -t ucp_put_bw -s 16777216 -n 40 -w 5 >/dev/null 2>&1 &
    sleep 1
    timeout 15 ucx_perftest localhost -p $port -t ucp_put_bw -s 16777216 -n 40 -w 5 2>&1 | awk '/Final/ {printf "ucx_perftest ucp_put_bw 16 MiB: %.0f MB/s\n", $7}'
    wait
}
perftest
R="mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl self,vader --bind-to none -x LD_LIBRARY_PATH -x DFCCL_NET=ucx"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/dfccl-mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/dfccl-mps/log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
for v in "4 131072" "8 131072" "16 131072" "8 262144" "4 131072" "16 131072"; do set -- $v
    echo "== GPU daemon host-staged, depth=$1 gpu_chunk=$2"
    timeout 45 $R -x CUDA_MPS_PIPE_DIRECTORY -x DFCCL_FIFO_DEPTH=$1 -x DFCCL_GPU_CHUNK_SIZE=$2 $B/bench/gpu_bench -s -n 5 -w 2 -b 2M -e 128M -f 8 > $OUT/g.log 2>&1; echo "rc=$?"
    grep -E "^ +[0-9]" $OUT/g.log | awk '{print $1, $2, $3}'
done
echo quit | nvidia-cuda-mps-control
perftest
A="-c allreduce -d float -b 16M -e 128M -f 8 -n 8 -w 2"
for v in "4 65536" "8 65536" "16 65536" "8 131072" "4 65536" "16 65536"; do set -- $v
    echo "== CPU daemon 4 threads x 8 channels, depth=$1 chunk=$2"
    timeout 40 $R -x DFCCL_GPU=0 -x DFCCL_CPU_THREADS=4 -x DFCCL_CHANNELS=8 -x DFCCL_FIFO_DEPTH=$1 -x DFCCL_CHUNK_SIZE=$2 $B/bench/dfccl_bench $A 2>&1 | grep -v '^#' | awk '{print $1, $6, $8, $9}'
done
perftest
echo "total wall=$(( $(date +%s) - S ))s"

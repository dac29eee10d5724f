# run AX: the GPU suite on this session's start (validates the last session's proxy fixes and the
# 2-proxy hang proof) with the auto proxy count and eager pieces; then eager pieces on/off side by
# side over UCX loopback (CPU daemon and the GPU daemon's host-staged path)
set -u; OUT=${OUT:-/tmp/out}; mkdir -p $OUT
S=$(date +%s)
timeout 330 bash test/gpu/device_run.sh test > $OUT/test.log 2>&1
echo "suite rc=$? wall=$(( $(date +%s) - S ))s"
grep -E "^(PASS|FAIL)|passed, .* failed|build ok" $OUT/test.log | cut -c1-160
B=$(echo /tmp/dfccl-build/dfccl-0*); export LD_LIBRARY_PATH=$B/.libs PATH=/tmp/dfccl-build/ucx/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
(ucx_info -v | head -2; ucx_info -c | grep -E "SEG_SIZE|ERROR_HANDLING") 2>&1 | head -8
perftest() {
    local port=$((13337 + RANDOM % 1000))
    timeout 20 ucx_perftest -p $port -t ucp_put_bw -s 16777216 -n 40 -w 5 >/dev/null 2>&1 &
    sleep 1
    timeout 15 ucx_perftest localhost -p $port -t ucp_put_bw -s 16777216 -n 40 -w 5 2>&1 | awk '/Final/ {printf "ucx_perftest ucp_put_bw 16 MiB: %.0f MB/s\n", $7}'
    wait
}
perftest
R="mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl self,vader --bind-to none -x LD_LIBRARY_PATH -x DFCCL_NET=ucx"
A="-c allreduce -d float -b 16M -e 128M -f 8 -n 8 -w 2"
for v in "3 6 3" "4 8 4" "4 8 auto"; do set -- $v
  for pc in 0 8128 0 8128; do
    NT="-x DFCCL_NET_THREADS=$3"; [ "$3" = auto ] && NT=
    echo "== cpu_threads=$1 channels=$2 net_threads=$3 piece=$pc"
    timeout 40 $R -x DFCCL_GPU=0 -x DFCCL_CPU_THREADS=$1 -x DFCCL_CHANNELS=$2 $NT -x DFCCL_NET_PIECE=$pc $B/bench/dfccl_bench $A 2>&1 | grep -v '^#' | awk '{print $1, $6, $8, $9}'
  done
done
perftest
export CUDA_MPS_PIPE_DIRECTORY=/tmp/dfccl-mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/dfccl-mps/log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
for pc in 0 8128 0 8128; do echo "== GPU daemon, net forced (host-staged), net_threads auto, piece=$pc"
    timeout 45 $R -x CUDA_MPS_PIPE_DIRECTORY -x DFCCL_NET_PIECE=$pc -x DFCCL_LOG_LEVEL=info $B/bench/gpu_bench -s -n 5 -w 2 -b 2M -e 128M -f 8 > $OUT/g.log 2>&1; echo "rc=$?"
    grep -m1 -o "1 on this host.*" $OUT/g.log | cut -c1-150; grep -E "^ +[0-9]" $OUT/g.log | awk '{print $1, $2, $3}'
done
echo quit | nvidia-cuda-mps-control
perftest
echo "total wall=$(( $(date +%s) - S ))s"

# run AZ7: the GPU suite with the tcp segments (its mixed cases go over tcp), then the tcp path
# ("other hosts") and the forced same-host path with the defaults, interleaved with ucx_perftest
set -u; OUT=${OUT:-/tmp/out}; mkdir -p $OUT
S=$(date +%s)
timeout 330 bash test/gpu/device_run.sh test > $OUT/test.log 2>&1
echo "suite rc=$? wall=$(( $(date +%s) - S ))s"
grep -E "^(PASS|FAIL)|passed, .* failed|build ok" $OUT/test.log | cut -c1-160
B=$(echo /tmp/dfccl-build/dfccl-0*); export LD_LIBRARY_PATH=$B/.libs PATH=/tmp/dfccl-build/ucx/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
perftest() { # $1 test, $2 UCX_TLS or empty
    local port=$((13337 + RANDOM % 1000))
    env ${2:+UCX_TLS=$2} timeout 30 ucx_perftest -p $port -t $1 -s 16777216 -n 40 -w 5 >/dev/null 2>&1 &
    sleep 1
    env ${2:+UCX_TLS=$2} timeout 25 ucx_perftest localhost -p $port -t $1 -s 16777216 -n 40 -w 5 2>&1 | awk -v t="$1 ${2:-default}" '/Final/ {printf "ucx_perftest %s 16 MiB: %.0f MB/s\n", t, $7}'
    wait
}
W=/tmp/hostwrap.sh; printf '#!/bin/bash\nexport DFCCL_HOST=host${OMPI_COMM_WORLD_RANK:-0}\nexec "$@"\n' > $W; chmod +x $W
R="mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl self,vader --bind-to none -x LD_LIBRARY_PATH"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/dfccl-mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/dfccl-mps/log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
for rep in 1 2 3; do
  perftest ucp_put_bw tcp
  echo "== other hosts (tcp), defaults: GPU daemon"
  timeout 40 $R -x CUDA_MPS_PIPE_DIRECTORY $W $B/bench/gpu_bench -s -n 5 -w 2 -b 8 -e 128M -f 8 2>&1 | grep -E "^ +[0-9]" | awk '{print $1, $2, $3}' | tr '\n' ' '; echo
  echo "== other hosts (tcp): CPU daemon 3 x 6"
  timeout 40 $R -x DFCCL_GPU=0 -x DFCCL_CPU_THREADS=3 -x DFCCL_CHANNELS=6 $W $B/bench/dfccl_bench -c allreduce -d float -b 2M -e 128M -f 8 -n 6 -w 2 2>&1 | grep -E "^ +[0-9]" | awk '{print $1, $6, $8, $9}' | tr '\n' ' '; echo
done
perftest ucp_put_bw tcp
echo "== other hosts (tcp): CPU daemon, defaults"
timeout 60 $R -x DFCCL_GPU=0 $W $B/bench/dfccl_bench -c allreduce -d float -b 8 -e 128M -f 8 -n 6 -w 2 2>&1 | grep -E "^ +[0-9]" | awk '{print $1, $6, $8, $9}' | tr '\n' ' '; echo
perftest ucp_put_bw
echo "== same host forced, defaults: GPU daemon"
timeout 40 $R -x DFCCL_NET=ucx -x CUDA_MPS_PIPE_DIRECTORY $B/bench/gpu_bench -s -n 7 -w 2 -b 2M -e 128M -f 8 2>&1 | grep -E "^ +[0-9]" | awk '{print $1, $2, $3}' | tr '\n' ' '; echo
perftest ucp_put_bw
echo quit | nvidia-cuda-mps-control
echo "total wall=$(( $(date +%s) - S ))s"

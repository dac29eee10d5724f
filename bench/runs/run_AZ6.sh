# run AZ6: ranks on "other hosts" (tcp over loopback), GPU daemon: proxies, UCX's tcp segment size, channels and steps
set -u; OUT=${OUT:-/tmp/out}; mkdir -p $OUT
S=$(date +%s)
MAKE_TARGETS="libdfccl.la bench/dfccl_bench bench/gpu_bench" timeout 200 bash test/gpu/device_run.sh build > $OUT/b.log 2>&1 || { tail -30 $OUT/b.log; exit 1; }
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
perftest ucp_put_bw tcp
which perf strace gdb 2>&1 | head -3
for v in "none" "-x DFCCL_NET_THREADS=1" "-x DFCCL_NET_THREADS=2" "-x UCX_TCP_TX_SEG_SIZE=65536 -x UCX_TCP_RX_SEG_SIZE=65536" "-x DFCCL_GPU_CHANNELS=8" "-x DFCCL_GPU_CHANNELS=8 -x DFCCL_GPU_NET_CHUNK_SIZE=524288" "-x DFCCL_GPU_CHANNELS=16 -x DFCCL_NET_THREADS=8" "none"; do
  X=$v; [ "$X" = none ] && X=
  echo "== other hosts, $v: GPU daemon"
  timeout 40 $R $X -x CUDA_MPS_PIPE_DIRECTORY $W $B/bench/gpu_bench -s -n 5 -w 2 -b 2M -e 128M -f 8 2>&1 | grep -E "^ +[0-9]" | awk '{print $1, $2, $3}' | tr '\n' ' '; echo
done
perftest ucp_put_bw tcp
echo quit | nvidia-cuda-mps-control
echo "total wall=$(( $(date +%s) - S ))s"

# run AZ6: ranks on "other hosts" (tcp over loopback), GPU daemon: proxies, UCX's tcp segment size,
# channels and steps
. bench/runs/net_runs.sh
stage build
mps_on
perftest ucp_put_bw tcp
which perf strace gdb 2>&1 | head -3
for v in "none" "-x DFCCL_NET_THREADS=1" "-x DFCCL_NET_THREADS=2" "-x UCX_TCP_TX_SEG_SIZE=65536 -x UCX_TCP_RX_SEG_SIZE=65536" "-x DFCCL_GPU_CHANNELS=8" "-x DFCCL_GPU_CHANNELS=8 -x DFCCL_GPU_NET_CHUNK_SIZE=524288" "-x DFCCL_GPU_CHANNELS=16 -x DFCCL_NET_THREADS=8" "none"; do
  X=$v; [ "$X" = none ] && X=
  echo "== other hosts, $v: GPU daemon"
  timeout 40 $R $X -x CUDA_MPS_PIPE_DIRECTORY $W $B/bench/gpu_bench -s -n 5 -w 2 -b 2M -e 128M -f 8 2>&1 | gpu_cols
done
perftest ucp_put_bw tcp
mps_off

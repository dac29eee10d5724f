# run AZ3: the GPU daemon's host-staged path (same host, forced): step size and channel count at
# 16 MiB; the CPU daemon's step size
. bench/runs/net_runs.sh
stage build
mps_on
perftest ucp_put_bw
for v in "none" "-x DFCCL_GPU_CHUNK_SIZE=32768" "-x DFCCL_GPU_CHUNK_SIZE=65536" "-x DFCCL_GPU_CHANNELS=16" "-x DFCCL_GPU_CHANNELS=32" "-x DFCCL_GPU_CHANNELS=16 -x DFCCL_GPU_CHUNK_SIZE=65536" "-x DFCCL_FIFO_DEPTH=8 -x DFCCL_GPU_CHUNK_SIZE=32768" "none"; do
  X=$v; [ "$X" = none ] && X=
  echo "== same host forced, $v: GPU daemon"
  timeout 40 $R -x DFCCL_NET=ucx $X -x CUDA_MPS_PIPE_DIRECTORY $B/bench/gpu_bench -s -n 7 -w 2 -b 2M -e 128M -f 8 2>&1 | gpu_cols
done
perftest ucp_put_bw
for v in "none" "-x DFCCL_CHUNK_SIZE=32768" "-x DFCCL_CHUNK_SIZE=16384 -x DFCCL_FIFO_DEPTH=8" "none"; do
  X=$v; [ "$X" = none ] && X=
  echo "== same host forced, $v: CPU daemon 3 x 6"
  timeout 40 $R -x DFCCL_NET=ucx $X -x DFCCL_GPU=0 -x DFCCL_CPU_THREADS=3 -x DFCCL_CHANNELS=6 $B/bench/dfccl_bench -c allreduce -d float -b 2M -e 128M -f 8 -n 6 -w 2 2>&1 | cpu_cols
done
perftest ucp_put_bw
mps_off

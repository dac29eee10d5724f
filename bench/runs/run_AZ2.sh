# run AZ2: ranks on "other hosts" (tcp over loopback): rendezvous against eager, FIFO depth, step size
. bench/runs/net_runs.sh
stage build
mps_on
perftest ucp_put_bw tcp
for v in "none" "-x UCX_RNDV_THRESH=inf" "-x DFCCL_FIFO_DEPTH=16" "-x DFCCL_CHUNK_SIZE=524288 -x DFCCL_GPU_CHUNK_SIZE=524288" "-x UCX_RNDV_THRESH=inf -x DFCCL_FIFO_DEPTH=16" "none"; do
  X=$v; [ "$X" = none ] && X=
  echo "== other hosts, $v: CPU daemon 3 x 6"
  timeout 40 $R $X -x DFCCL_GPU=0 -x DFCCL_CPU_THREADS=3 -x DFCCL_CHANNELS=6 $W $B/bench/dfccl_bench -c allreduce -d float -b 2M -e 128M -f 8 -n 6 -w 2 2>&1 | cpu_cols
  echo "== other hosts, $v: GPU daemon"
  timeout 40 $R $X -x CUDA_MPS_PIPE_DIRECTORY $W $B/bench/gpu_bench -s -n 5 -w 2 -b 2M -e 128M -f 8 2>&1 | gpu_cols
done
perftest ucp_put_bw tcp
mps_off

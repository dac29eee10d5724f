# run AZ7: the GPU suite with the tcp segments (its mixed cases go over tcp), then the tcp path
# ("other hosts") and the forced same-host path with the defaults, interleaved with ucx_perftest
. bench/runs/net_runs.sh
stage test
mps_on
for rep in 1 2 3; do
  perftest ucp_put_bw tcp
  echo "== other hosts (tcp), defaults: GPU daemon"
  timeout 40 $R -x CUDA_MPS_PIPE_DIRECTORY $W $B/bench/gpu_bench -s -n 5 -w 2 -b 8 -e 128M -f 8 2>&1 | gpu_cols
  echo "== other hosts (tcp): CPU daemon 3 x 6"
  timeout 40 $R -x DFCCL_GPU=0 -x DFCCL_CPU_THREADS=3 -x DFCCL_CHANNELS=6 $W $B/bench/dfccl_bench -c allreduce -d float -b 2M -e 128M -f 8 -n 6 -w 2 2>&1 | cpu_cols
done
perftest ucp_put_bw tcp
echo "== other hosts (tcp): CPU daemon, defaults"
timeout 60 $R -x DFCCL_GPU=0 $W $B/bench/dfccl_bench -c allreduce -d float -b 8 -e 128M -f 8 -n 6 -w 2 2>&1 | cpu_cols
perftest ucp_put_bw
echo "== same host forced, defaults: GPU daemon"
timeout 40 $R -x DFCCL_NET=ucx -x CUDA_MPS_PIPE_DIRECTORY $B/bench/gpu_bench -s -n 7 -w 2 -b 2M -e 128M -f 8 2>&1 | gpu_cols
perftest ucp_put_bw
mps_off

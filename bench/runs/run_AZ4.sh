# run AZ4: the whole GPU suite, the component suite and the benchmark on this session's code
# (auto proxies, eager pieces, 64 KiB GPU steps on net communicators); then the net path with
# the defaults, interleaved with ucx_perftest
. bench/runs/net_runs.sh
OMPI_QUICK=--quick BENCH_ARGS="-o -b 8 -e 128M -f 8 -n 20 -w 5" STAGE_TIMEOUT=420 stage all
mps_on
for rep in 1 2 3; do
  perftest ucp_put_bw
  echo "== same host forced, defaults: GPU daemon"
  timeout 40 $R -x DFCCL_NET=ucx -x CUDA_MPS_PIPE_DIRECTORY $B/bench/gpu_bench -s -n 7 -w 2 -b 8 -e 256M -f 8 2>&1 | gpu_cols
  echo "== same host forced: CPU daemon 3 x 6"
  timeout 40 $R -x DFCCL_NET=ucx -x DFCCL_GPU=0 -x DFCCL_CPU_THREADS=3 -x DFCCL_CHANNELS=6 $B/bench/dfccl_bench -c allreduce -d float -b 2M -e 256M -f 8 -n 6 -w 2 2>&1 | cpu_cols
done
perftest ucp_put_bw
perftest ucp_put_bw tcp
echo "== other hosts (tcp), defaults: GPU daemon"
timeout 40 $R -x CUDA_MPS_PIPE_DIRECTORY $W $B/bench/gpu_bench -s -n 5 -w 2 -b 2M -e 128M -f 8 2>&1 | gpu_cols
perftest ucp_put_bw tcp
mps_off

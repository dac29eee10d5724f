# run AZ: ranks that report different hosts (DFCCL_HOST by rank: error-reporting endpoints,
# UCX excludes shared memory and cma, so tcp over loopback, rendezvous for large steps) against
# ucx_perftest over tcp; forced same-host UCX again for medians
. bench/runs/net_runs.sh
stage build
mps_on
A="-c allreduce -d float -b 8 -e 128M -f 8 -n 8 -w 2"
for rep in 1 2; do
  perftest ucp_put_bw tcp; perftest ucp_am_bw tcp
  echo "== other hosts: CPU daemon, defaults"
  timeout 60 $R -x DFCCL_GPU=0 -x DFCCL_LOG_LEVEL=debug $W $B/bench/dfccl_bench $A > $OUT/c.log 2>&1; echo rc=$?
  grep -m1 -o "1 on other hosts.*" $OUT/c.log | cut -c1-60; grep -m2 -o "worker 0: .*" $OUT/c.log; cpu_cols < $OUT/c.log
  echo "== other hosts: CPU daemon, 3 threads x 6 channels"
  timeout 60 $R -x DFCCL_GPU=0 -x DFCCL_CPU_THREADS=3 -x DFCCL_CHANNELS=6 $W $B/bench/dfccl_bench -c allreduce -d float -b 2M -e 128M -f 8 -n 8 -w 2 2>&1 | cpu_cols
  echo "== other hosts: GPU daemon, host-staged"
  timeout 60 $R -x CUDA_MPS_PIPE_DIRECTORY $W $B/bench/gpu_bench -s -n 5 -w 2 -b 8 -e 128M -f 8 2>&1 | gpu_cols
  perftest ucp_put_bw tcp
  perftest ucp_put_bw
  echo "== same host forced: GPU daemon host-staged"
  timeout 60 $R -x DFCCL_NET=ucx -x CUDA_MPS_PIPE_DIRECTORY $B/bench/gpu_bench -s -n 5 -w 2 -b 2M -e 128M -f 8 2>&1 | gpu_cols
  echo "== same host forced: CPU daemon 3 x 6"
  timeout 60 $R -x DFCCL_NET=ucx -x DFCCL_GPU=0 -x DFCCL_CPU_THREADS=3 -x DFCCL_CHANNELS=6 $B/bench/dfccl_bench -c allreduce -d float -b 2M -e 128M -f 8 -n 8 -w 2 2>&1 | cpu_cols
  perftest ucp_put_bw
done
mps_off

# run AZ8: more rounds of the CPU daemon over tcp ("other hosts") against ucx_perftest over tcp:
# 3 threads x 6 channels with the auto proxies (4) and with 3 (one per two channels), 4 x 8
. bench/runs/net_runs.sh
stage build
C="-c allreduce -d float -b 16M -e 128M -f 8 -n 6 -w 2"
for rep in 1 2 3 4; do
  perftest ucp_put_bw tcp
  echo "== other hosts (tcp): CPU daemon 3 x 6, proxies auto"
  timeout 40 $R -x DFCCL_GPU=0 -x DFCCL_CPU_THREADS=3 -x DFCCL_CHANNELS=6 $W $B/bench/dfccl_bench $C 2>&1 | cpu_cols
  echo "== other hosts (tcp): CPU daemon 3 x 6 x 3 proxies"
  timeout 40 $R -x DFCCL_GPU=0 -x DFCCL_CPU_THREADS=3 -x DFCCL_CHANNELS=6 -x DFCCL_NET_THREADS=3 $W $B/bench/dfccl_bench $C 2>&1 | cpu_cols
  echo "== other hosts (tcp): CPU daemon 4 x 8"
  timeout 40 $R -x DFCCL_GPU=0 -x DFCCL_CPU_THREADS=4 -x DFCCL_CHANNELS=8 $W $B/bench/dfccl_bench $C 2>&1 | cpu_cols
done
perftest ucp_put_bw tcp
echo "total wall=$(( $(date +%s) - S ))s"

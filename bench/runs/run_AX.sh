# run AX: the GPU suite on this session's start (validates the last session's proxy fixes and the
# 2-proxy hang proof) with the auto proxy count and eager pieces; then eager pieces on/off side by
# side over UCX loopback (CPU daemon and the GPU daemon's host-staged path)
. bench/runs/net_runs.sh
stage test
perftest ucp_put_bw
A="-c allreduce -d float -b 16M -e 128M -f 8 -n 8 -w 2"
for v in "3 6 3" "4 8 4" "4 8 auto"; do set -- $v
  for pc in 0 8128 0 8128; do
    NT="-x DFCCL_NET_THREADS=$3"; [ "$3" = auto ] && NT=
    echo "== cpu_threads=$1 channels=$2 net_threads=$3 piece=$pc"
    timeout 40 $R -x DFCCL_NET=ucx -x DFCCL_GPU=0 -x DFCCL_CPU_THREADS=$1 -x DFCCL_CHANNELS=$2 $NT -x DFCCL_NET_PIECE=$pc $B/bench/dfccl_bench $A 2>&1 | cpu_cols
  done
done
perftest ucp_put_bw
mps_on
for pc in 0 8128 0 8128; do echo "== GPU daemon, net forced (host-staged), net_threads auto, piece=$pc"
    timeout 45 $R -x DFCCL_NET=ucx -x CUDA_MPS_PIPE_DIRECTORY -x DFCCL_NET_PIECE=$pc -x DFCCL_LOG_LEVEL=info $B/bench/gpu_bench -s -n 5 -w 2 -b 2M -e 128M -f 8 > $OUT/g.log 2>&1; echo "rc=$?"
    grep -m1 -o "1 on this host.*" $OUT/g.log | cut -c1-150; gpu_cols < $OUT/g.log
done
perftest ucp_put_bw
mps_off

# run AY: FIFO depth (and the GPU step size) over UCX loopback, eager pieces on, proxies auto
. bench/runs/net_runs.sh
stage build
perftest ucp_put_bw
mps_on
for v in "4 131072" "8 131072" "16 131072" "8 262144" "4 131072" "16 131072"; do set -- $v
    echo "== GPU daemon host-staged, depth=$1 gpu_chunk=$2"
    timeout 45 $R -x DFCCL_NET=ucx -x CUDA_MPS_PIPE_DIRECTORY -x DFCCL_FIFO_DEPTH=$1 -x DFCCL_GPU_CHUNK_SIZE=$2 $B/bench/gpu_bench -s -n 5 -w 2 -b 2M -e 128M -f 8 2>&1 | gpu_cols
done
perftest ucp_put_bw
A="-c allreduce -d float -b 16M -e 128M -f 8 -n 8 -w 2"
for v in "4 65536" "8 65536" "16 65536" "8 131072" "4 65536" "16 65536"; do set -- $v
    echo "== CPU daemon 4 threads x 8 channels, depth=$1 chunk=$2"
    timeout 40 $R -x DFCCL_NET=ucx -x DFCCL_GPU=0 -x DFCCL_CPU_THREADS=4 -x DFCCL_CHANNELS=8 -x DFCCL_FIFO_DEPTH=$1 -x DFCCL_CHUNK_SIZE=$2 $B/bench/dfccl_bench $A 2>&1 | cpu_cols
done
perftest ucp_put_bw
mps_off

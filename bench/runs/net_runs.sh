# Sourced by the run scripts of bench/runs/ (on the GPU machine, from the repository root,
# with the release tarball and Debian's UCX packages in .dist/): what they share.
#   stage MODE   test/gpu/device_run.sh MODE (build: only the libraries and benchmarks of
#                MAKE_TARGETS; test, all: the suites, their PASS/FAIL lines printed), then
#                sets B (the build), R (mpirun, 2 ranks, unbound) and W (a wrapper giving
#                each rank its own DFCCL_HOST, so that peers are "on other hosts": tcp)
#   perftest T [TLS]  ucx_perftest test T (ucp_put_bw, ucp_am_bw) at 16 MiB over loopback
#   gpu_cols, cpu_cols  filters: one line of size/time/busbw from gpu_bench or dfccl_bench
#   mps_on, mps_off     the MPS daemon for several ranks on the GPU
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
S=$(date +%s)
stage() {
    if [ "$1" = build ]; then
        MAKE_TARGETS=${MAKE_TARGETS:-libdfccl.la bench/dfccl_bench bench/gpu_bench} timeout 200 \
            bash test/gpu/device_run.sh build > "$OUT/b.log" 2>&1 || { tail -30 "$OUT/b.log"; exit 1; }
        echo "build wall=$(( $(date +%s) - S ))s"
    else
        timeout "${STAGE_TIMEOUT:-330}" bash test/gpu/device_run.sh "$1" > "$OUT/$1.log" 2>&1
        echo "$1 rc=$? wall=$(( $(date +%s) - S ))s"
        grep -E "^(PASS|FAIL)|passed, .* failed|build ok" "$OUT/$1.log" | cut -c1-160
    fi
    B=$(echo /tmp/dfccl-build/dfccl-0*)
    export LD_LIBRARY_PATH=$B/.libs PATH=/tmp/dfccl-build/ucx/bin:$PATH
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    R="mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl self,vader --bind-to none -x LD_LIBRARY_PATH"
    W=/tmp/hostwrap.sh
    printf '#!/bin/bash\nexport DFCCL_HOST=host${OMPI_COMM_WORLD_RANK:-0}\nexec "$@"\n' > $W
    chmod +x $W
}
perftest() {
    local port=$((13337 + RANDOM % 1000))
    env ${2:+UCX_TLS=$2} timeout 30 ucx_perftest -p $port -t "$1" -s 16777216 -n 40 -w 5 >/dev/null 2>&1 &
    sleep 1
    env ${2:+UCX_TLS=$2} timeout 25 ucx_perftest localhost -p $port -t "$1" -s 16777216 -n 40 -w 5 2>&1 |
        awk -v t="$1 ${2:-default}" '/Final/ {printf "ucx_perftest %s 16 MiB: %.0f MB/s\n", t, $7}'
    wait
}
gpu_cols() { grep -E "^ +[0-9]" | awk '{print $1, $2, $3}' | tr '\n' ' '; echo; }
cpu_cols() { grep -E "^ +[0-9]" | awk '{print $1, $6, $8, $9}' | tr '\n' ' '; echo; }
mps_on() {
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/dfccl-mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/dfccl-mps/log
    mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
    nvidia-cuda-mps-control -d
}
mps_off() { echo quit | nvidia-cuda-mps-control; echo "total wall=$(( $(date +%s) - S ))s"; }

#!/bin/bash
# Net transport measured side by side on one machine (loopback): UCX's own put bandwidth
# (ucx_perftest ucp_put_bw, from Debian's ucx-utils or the UCX wheel) and dfccl's allreduce
# with every peer forced onto UCX (DFCCL_NET=ucx) against the shared-memory peer transport.
#   net_bench.sh BUILD_DIR [NP]
# Environment:
#   NET_MEM   host (default): host buffers on the CPU daemon, for UCX's default transports
#             and for UCX_TLS=tcp; cuda: device buffers on the GPU daemon (N ranks on one
#             GPU under MPS, started here), ucx_perftest -m cuda as the anchor, and dfccl
#             with its net steps host-staged (DFCCL_NET_PUT=off) and by put from device
#             memory (on), where UCX carries device memory (a UCX built with CUDA)
#   NET_VARIANTS with NET_MEM=cuda: the DFCCL_* settings of each dfccl run, ';' between
#             runs (DFCCL_NET_PUT=off;DFCCL_NET_PUT=on;DFCCL_NET_PUT=on DFCCL_NET_PUT_MIN=0)
#   NET_BIND  mpirun's --bind-to (none)
#   BENCH_ARGS dfccl-bench's size and collective flags (-k allreduce -d float -b 8 -e 256M -f 8)
set -u -o pipefail
B=${1:?usage: net_bench.sh BUILD_DIR [NP]}
NP=${2:-2}
MEM=${NET_MEM:-host}
# each rank runs three busy threads over UCX (application, daemon, proxy): Open MPI's
# default binding (one core per rank at np <= 2) would put them on one core
RUN="mpirun --allow-run-as-root --oversubscribe -np $NP --mca btl self,vader --bind-to ${NET_BIND:-none}"
ARGS=${BENCH_ARGS:--k allreduce -d float -b 8 -e 256M -f 8}
perftest() { # $1: UCX_TLS value or empty, $2: the memory type
    local tls=$1 port=$((13337 + RANDOM % 1000))
    env ${tls:+UCX_TLS=$tls} ucx_perftest -p $port -t ucp_put_bw -m "$2" -s 16777216 -n 40 -w 5 >/dev/null 2>&1 &
    sleep 1
    env ${tls:+UCX_TLS=$tls} ucx_perftest localhost -p $port -t ucp_put_bw -m "$2" -s 16777216 -n 40 -w 5 2>&1 |
        awk -v m="$2" '/Final/ {printf "ucx_perftest ucp_put_bw -m %s 16 MiB: %.0f MB/s\n", m, $7; got = 1}
            END {if (!got) printf "ucx_perftest ucp_put_bw -m %s: no result (with -m cuda: a UCX without CUDA?)\n", m}'
    wait
}
rc=0
if [ "$MEM" = cuda ]; then
    # the anchor first, a plain CUDA process each side (not an MPS client)
    command -v ucx_perftest >/dev/null && perftest "" cuda
    export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/dfccl-mps/pipe}
    export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/dfccl-mps/log}
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    # (an MPS daemon already running is left as it is)
    nvidia-cuda-mps-control -d && trap 'echo quit | nvidia-cuda-mps-control' EXIT
    export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-$B/.libs}
    RUN+=" -x CUDA_MPS_PIPE_DIRECTORY -x LD_LIBRARY_PATH"
    BUF="-B device"
    # host-staged; by put, small steps host-staged (the default DFCCL_NET_PUT_MIN); every
    # step by put (NET_VARIANTS: other settings, ';' between runs)
    IFS=';' read -r -a variants <<< "${NET_VARIANTS:-DFCCL_NET_PUT=off;DFCCL_NET_PUT=on;DFCCL_NET_PUT=on DFCCL_NET_PUT_MIN=0}"
    for v in "${variants[@]}"; do
        echo "# dfccl, device buffers, every peer over UCX, $v"
        # (the info lines say where the FIFOs are and how steps go)
        # shellcheck disable=SC2086 # v and xs: several words
        xs=$(printf '%s\n' $v | sed 's/=.*//; s/^/-x /' | tr '\n' ' ') # mpirun's -x of each
        # shellcheck disable=SC2086
        out=$(env $v $RUN -x DFCCL_NET=ucx $xs -x DFCCL_LOG_LEVEL=info $B/bench/dfccl-bench $BUF $ARGS 2>&1) ||
            rc=1
        echo "$out" | grep -E "net peers|memory types" |
            sed -E 's/^\[dfccl [0-9]+\] //; s/communicator [0-9a-f]+ rank [0-9]+/communicator, rank/' | sort -u
        echo "$out" | grep -v -E '^#|^\[dfccl [0-9]+\] INFO'
    done
    echo "## peer transport (CUDA IPC), for comparison"
else
    BUF=
    for tls in "" tcp; do
        echo "## UCX_TLS=${tls:-default}"
        command -v ucx_perftest >/dev/null && perftest "$tls" host
        echo "# dfccl, every peer over UCX"
        $RUN -x DFCCL_NET=ucx ${tls:+-x UCX_TLS=$tls} $B/bench/dfccl-bench $ARGS | grep -v '^#'
    done
    echo "## peer transport (shared memory), for comparison"
fi
$RUN $B/bench/dfccl-bench $BUF $ARGS | grep -v '^#' || rc=1
exit $rc

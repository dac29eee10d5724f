#!/bin/bash
# Net transport measured side by side on one machine (loopback): UCX's own put bandwidth
# (ucx_perftest ucp_put_bw, from Debian's ucx-utils) and dfccl's allreduce with every
# peer forced onto UCX (DFCCL_NET=ucx) against the shared-memory peer transport, for
# UCX's default transports and for UCX_TLS=tcp.   net_bench.sh BUILD_DIR [NP]
# (NET_BIND: mpirun's --bind-to, default none)
set -u
B=${1:?usage: net_bench.sh BUILD_DIR [NP]}
NP=${2:-2}
# each rank runs three busy threads over UCX (application, daemon, proxy): Open MPI's
# default binding (one core per rank at np <= 2) would put them on one core
RUN="mpirun --allow-run-as-root --oversubscribe -np $NP --mca btl self,vader --bind-to ${NET_BIND:-none}"
ARGS=${BENCH_ARGS:--k allreduce -d float -b 8 -e 256M -f 8}
perftest() { # $1: UCX_TLS value or empty
    local tls=$1 port=$((13337 + RANDOM % 1000))
    env ${tls:+UCX_TLS=$tls} ucx_perftest -p $port -t ucp_put_bw -s 16777216 -n 40 -w 5 >/dev/null 2>&1 &
    sleep 1
    env ${tls:+UCX_TLS=$tls} ucx_perftest localhost -p $port -t ucp_put_bw -s 16777216 -n 40 -w 5 2>&1 |
        awk '/Final/ {printf "ucx_perftest ucp_put_bw 16 MiB: %.0f MB/s\n", $7}'
    wait
}
for tls in "" tcp; do
    echo "## UCX_TLS=${tls:-default}"
    command -v ucx_perftest >/dev/null && perftest "$tls"
    echo "# dfccl, every peer over UCX"
    $RUN -x DFCCL_NET=ucx ${tls:+-x UCX_TLS=$tls} $B/bench/dfccl-bench $ARGS | grep -v '^#'
done
echo "## peer transport (shared memory), for comparison"
$RUN $B/bench/dfccl-bench $ARGS | grep -v '^#'

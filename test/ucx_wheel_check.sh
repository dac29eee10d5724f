#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# dfccl built against the other UCX users have: PyPI's libucx-cu13 wheel (UCX 1.22
# built with CUDA: cuda_copy, cuda_ipc, gdr_copy), where CI's main build uses Debian's
# UCX 1.13 (no CUDA). A separate build (configure --with-ucx=<wheel>/libucx, with CUDA
# when nvcc is found), then:
#   - the library and the programs find the wheel's libucp through the rpath alone
#     (no LD_LIBRARY_PATH);
#   - detection: at DFCCL_LOG_LEVEL=info every rank names the UCX in use (1.22) and the
#     memory types it carries: host only on a node without a GPU (the wheel's CUDA
#     transports do not load there, so device memory would stay host-staged), cuda too
#     where nvidia-smi sees a GPU;
#   - the net suite's core over this UCX (every peer forced onto it): the matrix at 2
#     and 4 ranks, the chaos order and its hang proof with preemption off, a killed peer
#     (waiting and mid-ring), the communicator churn on shared endpoints; and with steps
#     by put (DFCCL_NET_PUT=on, every rank a host of its own): the matrix, the chaos
#     order, teardown races, a killed peer.
# The wheel comes from DFCCL_UCX_WHEEL (a .whl file) or `pip download libucx-cu13`;
# with neither (no pip, no network) every case is a SKIP line.
# One line per case, "PASS: ..." / "FAIL: ..." (or "SKIP: ..."), and "N passed, N
# failed" at the end.
#
# usage: ucx_wheel_check.sh BUILD_DIR
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
B=${1:?usage: ucx_wheel_check.sh BUILD_DIR}
mkdir -p "$B" && B=$(cd "$B" && pwd)
WHEEL_VERSION=1.22.0
LOGDIR=$(mktemp -d /tmp/dfccl-ucxwheel.XXXXXX)
jobs=$(nproc 2> /dev/null || echo 2)
# shellcheck disable=SC2034 # read by suite_lib.sh
npass=0 nfail=0
# pass, fail, finish
# shellcheck source=suite_lib.sh
. "$SRC/test/suite_lib.sh"

# ---- the wheel: a zip whose libucx/ folder is a UCX prefix
W="$B/wheel"
if [ ! -f "$W/libucx/include/ucp/api/ucp.h" ]; then
    rm -rf "$W" && mkdir -p "$W"
    whl=${DFCCL_UCX_WHEEL:-}
    if [ -z "$whl" ]; then
        if ! timeout 300 python3 -m pip download -q --no-deps -d "$W" "libucx-cu13==$WHEEL_VERSION" \
            > "$LOGDIR/pip.log" 2>&1; then
            echo "SKIP: UCX wheel: pip download libucx-cu13==$WHEEL_VERSION failed (no pip or no network): $(tail -n 1 "$LOGDIR/pip.log")"
            finish
        fi
        whl=$(ls "$W"/libucx_cu13-*.whl 2> /dev/null | head -n 1)
    fi
    if [ ! -f "$whl" ] || ! python3 -m zipfile -e "$whl" "$W" > "$LOGDIR/unzip.log" 2>&1; then
        fail "UCX wheel: unpacking the wheel ${whl:-(none)} (log $LOGDIR/unzip.log)"
        finish
    fi
fi
UCX="$W/libucx"

# ---- the build: CUDA as the main build has it (nvcc found), UCX from the wheel
if ! (cd "$B" && { [ -f Makefile ] || "$SRC/configure" --enable-werror --with-ucx="$UCX"; } &&
    make -j"$jobs" && make -j"$jobs" check TESTS=) > "$LOGDIR/build.log" 2>&1; then
    tail -20 "$LOGDIR/build.log"
    fail "UCX wheel: configure --with-ucx=$UCX and build (log $LOGDIR/build.log)"
    finish
fi
if ! grep -qE '^HAVE_UCX_FLAG = -DDFCCL_HAVE_UCX' "$B/Makefile"; then
    fail "UCX wheel: configure --with-ucx=$UCX left the net transport out (log $LOGDIR/build.log)"
    finish
fi
libs=$(env -u LD_LIBRARY_PATH ldd "$B/.libs/libdfccl.so" 2> /dev/null)
netkill=$(env -u LD_LIBRARY_PATH ldd "$B/test/net/.libs/t_netkill" "$B/test/net/t_netkill" 2> /dev/null)
if grep -q "libucp.so.0 => $UCX/lib/libucp.so.0" <<< "$libs" && ! grep -q 'not found' <<< "$libs$netkill"; then
    pass "UCX wheel: configure --with-ucx=<wheel>/libucx: libdfccl links the wheel's libucp through its rpath"
else
    fail "UCX wheel: libdfccl does not load the wheel's libucp without LD_LIBRARY_PATH: $(grep -E 'libucp|not found' <<< "$libs" | tr '\n' ' ')"
fi

# ---- detection, as a communicator reports it
export OMPI_MCA_btl="${OMPI_MCA_btl:-self,vader}" OMPI_MCA_btl_vader_single_copy_mechanism=none
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
log="$LOGDIR/probe.log"
env -u LD_LIBRARY_PATH timeout 60 mpirun --oversubscribe --bind-to none -np 2 -x DFCCL_NET=ucx \
    -x DFCCL_LOG_LEVEL=info "$B/test/net/t_netkill" --probe > "$log" 2>&1
rc=$?
lines=$(grep -E 'net transport: UCX [0-9.]+, memory types:' "$log")
if command -v nvidia-smi > /dev/null 2>&1 && nvidia-smi -L > /dev/null 2>&1; then
    want="host cuda" # the wheel's cuda transports load where a driver and a GPU are
else
    want="host"
fi
nright=$(grep -cE "net transport: UCX ${WHEEL_VERSION//./\\.}, memory types: ${want// /( [a-z-]+)* }( |$)" <<< "$lines")
ncuda=$(grep -c 'memory types:.* cuda' <<< "$lines")
if [ $rc -ne 0 ] || ! grep -qx OK "$log"; then
    fail "UCX wheel: probe over the wheel's UCX (2 ranks) exit $rc; log $log"
elif [ "$nright" -ne 2 ] || { [ "$want" = host ] && [ "$ncuda" -ne 0 ]; }; then
    fail "UCX wheel: detection: expected 'UCX $WHEEL_VERSION, memory types: $want' from both ranks, got: $(tr '\n' '|' <<< "$lines"); log $log"
else
    pass "UCX wheel: detection: both ranks report 'UCX $WHEEL_VERSION, memory types: $want'$([ "$want" = host ] && echo ' (no GPU here: the CUDA transports stay unloaded, device memory would be host-staged)')"
fi

# ---- the net suite's core over this UCX
SUITE_FILTER='^(t_matrix\[net=ucx\] np=(2|4)|t_chaos\[net=ucx\] np=4|t_chaos\[net=ucx,DFCCL_PREEMPT=0 must hang\] np=4|t_netkill\[(victim waits\] np=2|mid ring allreduce\] np=4|1000 communicators, shared endpoints\] np=2)|t_matrix\[hosts,put\] np=4|t_chaos\[hosts,put\] np=4|t_netkill\[(teardown race, hosts, put|two communicators destroyed in opposite orders, hosts, put|victim waits, hosts, put)\] np=(2|4))' \
    SUITE_LOGDIR="$LOGDIR/net" SUITE_NPS="2 4" env -u LD_LIBRARY_PATH \
    bash "$SRC/test/net/run_net_suite.sh" "$B/test/mpi" "$B/test/net" > "$LOGDIR/net.log" 2>&1
while IFS= read -r line; do
    case "$line" in
    PASS:*) pass "UCX wheel: ${line#PASS: }" ;;
    FAIL:*) fail "UCX wheel: ${line#FAIL: }" ;;
    SKIP:*) echo "SKIP: UCX wheel: ${line#SKIP: }" ;;
    esac
done < "$LOGDIR/net.log"
grep -qE '^[0-9]+ passed, [0-9]+ failed' "$LOGDIR/net.log" || fail "UCX wheel: the net suite ended without its summary; log $LOGDIR/net.log"
finish

#!/bin/bash
# What one device-tool call runs on the GPU machine: build the release tarball carried
# in .dist/, run the GPU suite, then the GPU benchmark (MODES, several allowed: test,
# ompi, bench, all, multigpu, net, osu, osusuite, build). Logs go to $OUT. UCX: Debian's
# headers carried in .dist/ over the machine's runtime, or with UCX_WHEEL=1 the libucx-cu13
# wheel carried there (pip download libucx-cu13==1.22.0).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
REPO=$PWD
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
W=/tmp/dfccl-build
# REUSE=1: a warm machine's previous build of the same tarball is used as it is
if [ "${REUSE:-}" = 1 ] && [ "$(cat $W/built 2>/dev/null)" = "ucx_wheel=${UCX_WHEEL:-0}" ]; then
    cd $W/dfccl-* && export LD_LIBRARY_PATH=$PWD/.libs PATH=$W/ucx/bin:$W/ucxwheel/bin:$PATH && echo "build reused"
else
rm -rf $W; mkdir -p $W
# UCX: the machine has the runtime only; Debian's headers (and ucx_perftest) carried in
# .dist/ are unpacked into a prefix whose libraries are links to the system's
UCX_CONF=
WHEEL=$(ls .dist/libucx_cu*.whl 2>/dev/null | head -n 1)
[ "${UCX_WHEEL:-}" = 1 ] && [ -z "$WHEEL" ] && echo "UCX_WHEEL=1 but no .dist/libucx_cu*.whl: Debian's UCX instead"
if [ "${UCX_WHEEL:-}" = 1 ] && [ -n "$WHEEL" ]; then
    # UCX_WHEEL=1: PyPI's libucx-cu13 wheel carried in .dist/ instead, a UCX built with
    # CUDA (cuda_copy, cuda_ipc, gdr_copy) whose ucx_perftest takes -m cuda
    U=$W/ucxwheel; mkdir -p $U
    python3 -m zipfile -e "$WHEEL" $U && chmod +x $U/libucx/bin/*
    # its programs find their libraries through a path the wheel does not hold: wrapped
    mkdir -p $U/bin
    for t in ucx_perftest ucx_info; do
        printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$U/libucx/lib" "$U/libucx/bin/$t" > $U/bin/$t
        chmod +x $U/bin/$t
    done
    export PATH=$U/bin:$PATH
    UCX_CONF=--with-ucx=$U/libucx
elif ls .dist/libucx-dev_*.deb >/dev/null 2>&1; then
    U=$W/ucx; mkdir -p $U/lib $U/bin
    for d in .dist/libucx-dev_*.deb .dist/ucx-utils_*.deb; do [ -f "$d" ] && dpkg -x "$d" $U/root; done
    ln -s $U/root/usr/include $U/include
    for l in ucp ucs uct ucm; do ln -sf /usr/lib/x86_64-linux-gnu/lib$l.so.0 $U/lib/lib$l.so; done
    [ -x $U/root/usr/bin/ucx_perftest ] && ln -s $U/root/usr/bin/ucx_perftest $U/bin/
    export PATH=$U/bin:$PATH
    UCX_CONF=--with-ucx=$U
fi
tar xzf .dist/dfccl-*.tar.gz -C $W && cd $W/dfccl-* || exit 1
# the tarball is what gets built, not the tree carried with it: a tarball older than the
# tree's last commit would measure the old code (DIST_STALE_OK=1: on purpose)
stale=$(for f in $(find engine cuda cpu ucx_transport ompi_coll_dfccl include -type f); do
    cmp -s "$f" "$REPO/$f" || echo "$f"; done | head -n 5 | tr '\n' ' ')
if [ -n "$stale" ] && [ "${DIST_STALE_OK:-}" != 1 ]; then
    echo "the tarball in .dist/ differs from the tree in: $stale(make -C build dist; cp build/dfccl-*.tar.gz .dist/)"
    exit 1
fi
# shellcheck disable=SC2086 # MAKE_TARGETS: several targets, split on purpose
build() { make -j16 ${MAKE_TARGETS:-} && { [ -n "${MAKE_TARGETS:-}" ] || make -j16 check TESTS=; }; }
if ! ( ./configure --enable-werror $UCX_CONF && build ) > "$OUT/build.log" 2>&1; then
    # this machine's compiler may warn where CI's does not: say so (CI would fail on it),
    # and build without -Werror so that the call's device time is not lost
    grep -B1 -A3 -E "error:|warning:" "$OUT/build.log" | head -n 30
    # shellcheck disable=SC2086,SC2015
    make -j16 WERROR_CFLAGS= ${MAKE_TARGETS:-} >> "$OUT/build.log" 2>&1 &&
        { [ -n "${MAKE_TARGETS:-}" ] || make -j16 WERROR_CFLAGS= check TESTS= >> "$OUT/build.log" 2>&1; } ||
        { tail -40 "$OUT/build.log"; exit 1; }
    echo "build ok WITHOUT -Werror: fix the warnings above before CI sees them"
else
    echo "build ok"
fi
echo "ucx_wheel=$([ -d $W/ucxwheel ] && echo 1 || echo 0)" > $W/built # the UCX built against, for REUSE=1
export LD_LIBRARY_PATH=$PWD/.libs
fi
unset UCX_WHEEL # read: every rank's UCX would warn of a UCX_* variable it does not know
MODES=" ${*:-all} "
# want MODE: MODE is among the arguments (or all is)
want() { [[ "$MODES" == *" $1 "* ]] || { [[ "$MODES" == *" all "* ]] && [ "${2:-}" != explicit ]; }; }
if want test; then
    bash test/gpu/run_gpu_tests.sh "$PWD" ${QUICK:-} 2>&1 | tee "$OUT/gpu_tests.log"
fi
if want ompi; then
    # the component suite; its device-buffer part runs here, N ranks under MPS
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/dfccl-mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/dfccl-mps/log
    mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
    bash test/ompi/run_ompi_suite.sh "$PWD" ${OMPI_QUICK:-} 2>&1 | tee "$OUT/ompi_tests.log"
    echo quit | nvidia-cuda-mps-control; sleep 1
fi
if want multigpu explicit; then
    # one rank per GPU against NCCL (a machine kind with several GPUs)
    bash test/gpu/run_multigpu.sh "$PWD" 2>&1 | tee "$OUT/multigpu.log"
fi
if want net explicit; then
    # the net transport over loopback UCX: the CPU daemon (this machine's cores), or with
    # NET_MEM=cuda the GPU daemon on device buffers (with UCX_WHEEL=1: UCX's cuda transports)
    bash bench/net_bench.sh "$PWD" ${NET_NP:-2} 2>&1 | tee "$OUT/net_bench.log"
fi
if want bench; then
    bash bench/gpu_bench.sh "$PWD" 2>&1 | tee "$OUT/gpu_bench.log"
fi
if want osu explicit; then
    # OSU 7.4 (its tarball and build script carried in .dist/osu/) through the component
    OSU=/tmp/osu/osu-micro-benchmarks-7.4/c/mpi/collective
    [ -x $OSU/blocking/osu_gather ] || OSU=$(sh "$REPO/.dist/osu/build.sh" /tmp/osu --cuda | tail -1)
    bash "$REPO/bench/osu_run.sh" "$PWD" "$OSU" 2>&1 | tee "$OUT/osu.log"
fi
if want osusuite explicit; then
    # the OSU suite on device buffers with the defaults (OSU's validation, every call on
    # the engine), N ranks under MPS
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/dfccl-mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/dfccl-mps/log
    mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d
    OSU_SRC=$REPO/.dist/osu bash test/ompi/run_osu_suite.sh "$PWD" --cuda 2>&1 | tee "$OUT/osu_suite.log"
    echo quit | nvidia-cuda-mps-control; sleep 1
fi

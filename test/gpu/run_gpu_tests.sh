#!/bin/bash
# GPU test suite, for a machine with a CUDA device (test/gpu/device_run.sh): starts MPS so
# that N ranks share one GPU, runs the device-buffer tests with 2, 4 and 8 ranks, the
# deadlock scenarios with their preempt-off hang proofs, the same over the net transport
# (when libdfccl has UCX: by default device FIFOs by put where that UCX carries device
# memory, else host-staged FIFOs; host-staged ones with DFCCL_NET_PUT=off; steps by put
# to ranks that are each a host of their own), then stops MPS.
#   run_gpu_tests.sh BUILD_DIR [quick]
# Environment: NPS, CHAOS_NPS, COMMS_NPS, NET_NPS, READ_NPS, WIDE_NPS (rank counts of the matrix,
# chaos, 100-communicator, net-matrix, zero-copy read and split LL cases; empty skips), SANITIZER=0 (no compute-sanitizer),
# NET_ONLY=1 (only the net-transport cases), NO_NET=1 (none of them), GPU_FILTER (only
# the cases whose name matches this extended regex, e.g. '^(matrix|chaos)$').
# Prints "PASS: ..." / "FAIL: ..." per case and ends with "N passed, N failed".
set -u
B=${1:?usage: run_gpu_tests.sh BUILD_DIR [quick]}
QUICK=${2:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/dfccl-mps/pipe}
export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/dfccl-mps/log}
MPIRUN="mpirun --oversubscribe --mca btl self,vader --bind-to none -x CUDA_MPS_PIPE_DIRECTORY -x LD_LIBRARY_PATH"
# DFCCL_* settings of the caller's environment reach every rank (DFCCL_DIRECT_MAX=4194304
# bash run_gpu_tests.sh ...: the whole suite with that setting)
for v in $(compgen -e | grep '^DFCCL_'); do MPIRUN+=" -x $v"; done
# pass, fail, relay_verdicts, finish; selected picks the cases by FILTER
# shellcheck source=../suite_lib.sh
. "$(dirname "$0")/../suite_lib.sh"
FILTER=${GPU_FILTER:-}

LOGDIR=${OUT:-/tmp}/gpu_case_logs; mkdir -p "$LOGDIR"
mps_start() { mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"; nvidia-cuda-mps-control -d && echo "mps: started"; }
mps_stop() { echo quit | nvidia-cuda-mps-control; for i in $(seq 50); do pgrep -f nvidia-cuda-mps-server >/dev/null || break; sleep 0.2; done; }
# a hung job is killed with its kernels still spinning: give the GPU a fresh MPS server
mps_restart() { pkill -9 -f "$B/test/gpu/t_" 2>/dev/null; sleep 1; mps_stop; sleep 1; mps_start; }
mps_start
trap 'mps_stop; pkill -9 -f test/gpu/t_ 2>/dev/null' EXIT

# run NAME TIMEOUT EXPECT(ok|hang) NP ARGS... ; hang: exit 3 or a timeout proves it
run() {
    local name=$1 to=$2 expect=$3 np=$4; shift 4
    local out rc log
    selected "$name" || return 0
    out=$(timeout -s KILL "$to" $MPIRUN -np "$np" "$@" 2>&1); rc=$?
    if [ $rc -eq 77 ]; then
        # a rank saw no device: MPS was still settling after the previous job; once more
        sleep 2
        out=$(timeout -s KILL "$to" $MPIRUN -np "$np" "$@" 2>&1); rc=$?
    fi
    pkill -9 -f "$B/test/gpu/t_" 2>/dev/null
    log=$LOGDIR/$(echo "$name-np$np" | tr ' =/' '___').log
    echo "$out" > "$log"
    echo "$out" | grep -E "^t_gpu|^t_vcolls|HANG|FAIL|elements differ|error" | head -n 20
    if [ "$expect" = ok ]; then
        if [ $rc -eq 0 ]; then pass "$name np=$np"; else fail "$name np=$np" "rc=$rc" "$log"; fi
    else
        if [ $rc -ne 0 ] && { echo "$out" | grep -q HANG || [ $rc -eq 137 ]; }; then
            pass "$name np=$np hangs without preemption (rc=$rc)"
        else
            fail "$name np=$np was expected to hang" "rc=$rc" "$log"
        fi
    fi
}

T=$B/test/gpu/t_gpu
NET_ONLY=${NET_ONLY:-} # 1: only the net-transport cases
# the block move on its own (the copy engine's bulk moves and the threads' copy), one block
[ -z "$NET_ONLY" ] && [ -x "$B/test/gpu/t_dxmove" ] && run "dxmove" 120 ok 1 "$B/test/gpu/t_dxmove" 50
NPS=${NPS-2 4 8}
[ -n "$NET_ONLY" ] && NPS= CHAOS_NPS= COMMS_NPS=
for np in $NPS; do
    run "matrix" 300 ok $np $T matrix
done
for np in ${CHAOS_NPS-2 4 8}; do
    run "chaos" 180 ok $np $T chaos --iters 10
done
# LL rounds split over the channels (DFCCL_LL_WIDE_MAX, auto by default): every piece of 4-64 KiB;
# the timeline (DFCCL_TRACE names each stretch's algorithm) shows that the GPU daemon ran them
llw_ran() {
    selected "$1" || return 0
    if cat "$2".*.json 2>/dev/null | grep -q '"algo": "llw", "daemon": "gpu"'; then
        pass "$1 ran split LL rounds on the GPU daemon (DFCCL_TRACE)"
    else
        fail "$1: no split LL round in the GPU daemon's timeline of $2"
    fi
}
for np in ${WIDE_NPS-2 8}; do
    [ -z "$NET_ONLY" ] || continue
    rm -f "$LOGDIR"/llw_np$np.*.json
    run "matrix ll_wide" 300 ok $np -x DFCCL_LL_WIDE_MAX=65536 -x DFCCL_TRACE="$LOGDIR/llw_np$np" $T matrix
    llw_ran "matrix ll_wide" "$LOGDIR/llw_np$np"
    rm -f "$LOGDIR"/llw_np$np.*.json
done
[ -z "$NET_ONLY" ] && run "chaos ll_wide" 180 ok 4 -x DFCCL_LL_WIDE_MAX=65536 $T chaos --iters 10 --ll-sizes
# the zero-copy read forced on every alltoall and allgather (DFCCL_READ_MIN=1): the matrix
# (each buffer once: the staged path), buffers reused, cycled past the export slots,
# reallocated and from a pool (the mapped path)
if [ -z "$NET_ONLY" ]; then
    for np in ${READ_NPS-2 4 8}; do
        run "matrix read_min=1" 300 ok $np -x DFCCL_READ_MIN=1 $T matrix
        run "readreuse read_min=1" 180 ok $np -x DFCCL_READ_MIN=1 $T readreuse
    done
    run "readreuse read_min=1 channels=3" 180 ok 4 -x DFCCL_READ_MIN=1 -x DFCCL_GPU_CHANNELS=3 $T readreuse
fi
if [ -z "$NET_ONLY" ]; then
    run "sync" 60 ok 2 $T sync --deadline 30
    run "reuse" 120 ok 2 $T reuse
    run "reuse" 120 ok 8 $T reuse
    run "deplete" 120 ok 4 $T deplete
    # a peer destroys a communicator rank 0 waits on: the wait ends with an error
    run "left" 60 ok 3 $T left
fi
# the GPU backend off on the last rank only (its GPU set-up's all-gathers would be missing
# there: the others hung): every rank fails with dfcclInvalidUsage naming it
[ -z "$NET_ONLY" ] && run "DFCCL_GPU=0 on the last rank only" 60 ok 2 $B/test/mpi/t_mismatch DFCCL_GPU 1 0 \
    --refused --refused-code usage
for np in ${COMMS_NPS-2 8}; do
    run "100 communicators" 180 ok $np $T comms --comms 100
done
# one rank out of memory during dfcclCommInit, each of its set-up's allocations in turn
# (the GPU part's among them): every rank comes back with the same verdict
[ -z "$NET_ONLY" ] && [ -x "$B/test/mpi/t_setupoom" ] && run "setupoom" 180 ok 3 $B/test/mpi/t_setupoom 1
# gather(v), scatter(v), allgatherv, alltoallv/w, scan, exscan on device buffers
V=$B/test/gpu/t_vcolls_dev
for np in ${VCOLLS_NPS-1 2 4 8}; do
    run "vcolls" 300 ok $np $V
done
[ -z "$NET_ONLY" ] && run "vcolls chaos" 180 ok 4 $V --chaos 6 --scale 400000 --deadline 120
# one collective called differently on the last rank, device buffers (the GPU daemon's
# in-band signatures; the waiting thread's diagnosis): every rank errors at that call or
# its next, naming the difference (docs/usage.md, "Mismatched collectives")
if [ -z "$NET_ONLY" ]; then
    # memkind: the last rank passes host memory (its CPU daemon), the others device memory;
    # two-roots: two ranks take themselves for a bcast's root (found at the next call);
    # vcounts: reduce_scatterv counts that differ with the same largest block
    for m in count reduce-root bcast-root kind op datatype refused commrefuse refused-ahead none refused-all memkind two-roots \
        vcounts; do
        run "collmismatch $m" 90 ok 3 $B/test/gpu/t_collmismatch_dev $m
        run "collmismatch $m, 65536 elements" 90 ok 4 $B/test/gpu/t_collmismatch_dev $m --elems 65536
    done
fi
# DFCCL_TRACE on device buffers: the deadlock demo's timeline (4 ranks, 8 communicators
# in a different order on every rank) with the GPU daemon's run stretches in it, checked
# by tools/dfccl-trace as on the CPU (every collective submitted and completed, every
# stretch set aside resumed, every rank named late really late, on the host's clock);
# the check must fail on a copy with one completion taken out.
trace_dev() {
    local name="trace deadlock demo, device buffers"
    selected "$name" || return 0
    local dir=$LOGDIR/trace_dev tool out rc ngpu
    tool="$(cd "$(dirname "$0")/../.." && pwd)/tools/dfccl-trace"
    rm -rf "$dir" && mkdir -p "$dir/cut"
    out=$(timeout -s KILL 120 $MPIRUN -np 4 -x DFCCL_TRACE="$dir/demo" "$B/examples/deadlock_demo" 2>&1); rc=$?
    if [ $rc -eq 77 ]; then # a rank saw no device: MPS still settling (as in run)
        sleep 2
        rm -f "$dir"/demo.*.json
        out=$(timeout -s KILL 120 $MPIRUN -np 4 -x DFCCL_TRACE="$dir/demo" "$B/examples/deadlock_demo" 2>&1); rc=$?
    fi
    [ $rc -eq 137 ] && mps_restart # killed with its kernels spinning
    echo "$out" > "$LOGDIR/trace_dev.log"
    local files=("$dir"/demo.*.json)
    ngpu=$(cat "${files[@]}" 2>/dev/null | grep -c '"cat": "run".*"daemon": "gpu"')
    out=$(python3 "$tool" check "${files[@]}" 2>&1)
    echo "$out" >> "$LOGDIR/trace_dev.log"
    cp "${files[@]}" "$dir/cut/" 2>/dev/null
    local cut=("$dir"/cut/demo.*.json)
    sed -i '0,/"cat": "complete"/{/"cat": "complete"/d}' "${cut[0]}"
    echo "$out" | tail -n 3
    if [ $rc -ne 0 ] || [ "${#files[@]}" -ne 4 ] || [ "$ngpu" -eq 0 ]; then
        fail "$name np=4" "rc=$rc, ${#files[@]} files, $ngpu GPU run stretches" "$LOGDIR/trace_dev.log"
    elif ! echo "$out" | grep -q 'consistent$' || ! echo "$out" | grep -qE '[1-9][0-9]* stretches set aside' ||
        ! echo "$out" | grep -qE '[1-9][0-9]* late ranks named'; then
        fail "$name np=4: $(echo "$out" | tail -n 1)"
    elif python3 "$tool" check "${cut[@]}" > /dev/null 2>&1; then
        fail "$name np=4: the check passed a trace with a completion taken out"
    else
        pass "$name np=4 ($ngpu GPU run stretches; $(echo "$out" | sed -n 's/^dfccl-trace check: //p'))"
    fi
}
[ -z "$NET_ONLY" ] && trace_dev
# the net transport with the GPU daemon (a build with UCX): every peer forced onto UCX
# over loopback, so device buffers travel through the net FIFOs and the proxy (by
# default device FIFOs by put where this UCX carries device memory, else host-staged;
# DFCCL_NET_PUT=off: host-staged); and mixed locality (ranks of equal parity on "one
# host": CUDA IPC, the others UCX)
NET=
ldd "$B/.libs/libdfccl.so" 2>/dev/null | grep -q libucp && [ -z "${NO_NET:-}" ] && NET=1 # NO_NET=1: skip
if [ -n "$NET" ]; then
    HOSTWRAP=$LOGDIR/hostwrap.sh
    printf '%s\n' '#!/bin/sh' 'r=${OMPI_COMM_WORLD_RANK:-0}' \
        'if [ $((r % 2)) -eq 0 ]; then export DFCCL_HOST=hostA; else export DFCCL_HOST=hostB; fi' \
        'exec "$@"' > "$HOSTWRAP"
    chmod +x "$HOSTWRAP"
    STAGED="-x DFCCL_NET_PUT=off" # host-staged FIFOs whatever UCX carries
    # placed NAME NP: the case's log must show puts, and device FIFOs on every rank where
    # UCX says it carries device memory
    placed() {
        local log nput ndev ncuda
        log=$LOGDIR/$(echo "$1-np$2" | tr ' =/' '___').log
        selected "$1" && [ -f "$log" ] || return 0
        nput=$(grep -cE "steps by RDMA put|steps by put" "$log")
        ndev=$(grep -c "net peers: device FIFOs" "$log")
        ncuda=$(grep -cE "memory types:.* cuda" "$log")
        echo "  placement: $ndev rank(s) with device FIFOs, $nput set-up line(s) saying puts, $ncuda saying UCX carries cuda"
        if [ "$nput" -lt "$2" ]; then
            fail "$1 np=$2: steps by put on every rank" "$nput set-up line(s) say puts" "$log"
        elif [ "$ncuda" -gt 0 ] && [ "$ndev" -lt "$2" ]; then
            fail "$1 np=$2: device FIFOs where UCX carries cuda" "$ndev of $2 ranks" "$log"
        fi
    }
    for np in ${NET_NPS-2 4}; do
        run "matrix net=ucx" 300 ok $np -x DFCCL_NET=ucx -x DFCCL_LOG_LEVEL=info $T matrix
        # the default (DFCCL_NET_PUT auto) takes device FIFOs by put wherever UCX carries cuda
        grep -qE "memory types:.* cuda" "$LOGDIR/matrix_net_ucx-np$np.log" 2> /dev/null && placed "matrix net=ucx" $np
    done
    run "matrix net=ucx staged" 300 ok 2 -x DFCCL_NET=ucx $STAGED $T matrix
    run "chaos net=ucx staged" 180 ok 4 -x DFCCL_NET=ucx $STAGED $T chaos --iters 10
    run "chaos net=ucx" 180 ok 4 -x DFCCL_NET=ucx $T chaos --iters 10
    [ -x "$B/test/mpi/t_setupoom" ] && run "setupoom net=ucx" 180 ok 3 -x DFCCL_NET=ucx $B/test/mpi/t_setupoom 1
    # host-staged steps on 2 proxy threads (connection group g on proxy g mod 2)
    NT="-x DFCCL_NET=ucx $STAGED -x DFCCL_NET_THREADS=2"
    run "matrix net=ucx net_threads=2" 300 ok 2 $NT $T matrix
    run "chaos net=ucx net_threads=2" 180 ok 4 $NT $T chaos --iters 10
    run "matrix mixed" 300 ok 4 $HOSTWRAP $T matrix
    run "chaos mixed" 180 ok 4 $HOSTWRAP $T chaos --iters 10
    # steps by put (DFCCL_NET_PUT=on): into device FIFOs where this UCX carries device
    # memory (the wheel's: then to same-host peers too, by cuda_ipc), else into the
    # host-staged ones, to peers on other hosts only (every rank a host of its own here:
    # UCX over tcp)
    HOSTSWRAP=$LOGDIR/hostswrap.sh
    printf '%s\n' '#!/bin/sh' 'export DFCCL_HOST=host${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-0}}' 'exec "$@"' \
        > "$HOSTSWRAP"
    chmod +x "$HOSTSWRAP"
    for np in ${NET_NPS-2 4}; do
        run "matrix hosts put" 300 ok $np -x DFCCL_NET_PUT=on -x DFCCL_LOG_LEVEL=info $HOSTSWRAP $T matrix
        placed "matrix hosts put" $np
    done
    run "chaos hosts put" 180 ok 4 -x DFCCL_NET_PUT=on $HOSTSWRAP $T chaos --iters 10
    run "matrix mixed put" 300 ok 4 -x DFCCL_NET_PUT=on $HOSTWRAP $T matrix
    # every peer forced onto UCX on one host: device FIFOs by cuda_ipc where UCX carries
    # them (else active messages, host-staged: this case then shows nothing new)
    run "matrix net=ucx put" 300 ok 2 -x DFCCL_NET=ucx -x DFCCL_NET_PUT=on -x DFCCL_LOG_LEVEL=info $T matrix
    grep -qE "memory types:.* cuda" "$LOGDIR/matrix_net_ucx_put-np2.log" 2> /dev/null && placed "matrix net=ucx put" 2
else
    if [ -n "${NO_NET:-}" ]; then
        echo "SKIP: net transport with the GPU daemon (NO_NET=1)"
    else
        echo "SKIP: net transport with the GPU daemon (libdfccl built without UCX)"
    fi
fi
# A rank dies by SIGKILL with device-buffer allreduces pending on the others (the GPU
# daemon's side of the dead-peer watch, no DFCCL_TIMEOUT): every survivor's allreduce
# must fail within the deadline, an error line must name rank 1, nothing may hang.
# killed NAME NET NP ARGS... (NET: auto = CUDA IPC peers, ucx = every peer over UCX; KILL_X:
# more mpirun arguments, DFCCL_NET_PUT among them)
KN=$B/test/gpu/t_netkill_dev
killed() {
    local name=$1 net=$2 np=$3; shift 3
    selected "killed $name" || return 0
    local out rc nok worst log
    # shellcheck disable=SC2086 # KILL_X: extra mpirun arguments, split on purpose
    out=$(timeout -s KILL 120 $MPIRUN --enable-recovery ${KILL_X:-} -np "$np" -x DFCCL_NET="$net" ${KILL_WRAP:-} "$KN" \
        --deadline 20 "$@" 2>&1)
    rc=$?
    pkill -9 -f "$B/test/gpu/t_" 2>/dev/null
    log=$LOGDIR/killed_$(echo "$name-np$np" | tr -c 'A-Za-z0-9=.\n-' '_').log
    echo "$out" > "$log"
    nok=$(echo "$out" | grep -c '^OK: peer failure reported')
    worst=$(echo "$out" | sed -n 's/^OK: peer failure reported on rank [0-9]* after \([0-9.]*\) s.*/\1/p' | sort -n | tail -n 1)
    echo "$out" | grep -E "^OK|HANG|FAIL|^\[dfccl [0-9]+\] (error|warn)" | head -n 8
    if [ $rc -eq 137 ] || echo "$out" | grep -qE "^HANG|FAIL"; then
        fail "killed peer, $name np=$np" "rc=$rc" "$log"
    elif [ -n "${KILL_STEPS:-}" ] && [ "$(echo "$out" | grep -cE "steps by RDMA put|steps by put")" -lt "$np" ]; then
        fail "killed peer, $name np=$np: steps by put on every rank" "see the set-up lines" "$log"
    elif ! echo "$out" | grep -q '^t_netkill: victim rank 1 '; then
        fail "killed peer, $name np=$np: the victim never got to the kill"
    elif [ "$nok" -ne $((np - 1)) ]; then
        fail "killed peer, $name np=$np: $nok of $((np - 1)) survivors reported the failure"
    elif ! echo "$out" | grep -iE '^\[dfccl [0-9]+\] (error|warn)' | grep -qE '(peer|rank) 1([^0-9]|$)'; then
        fail "killed peer, $name np=$np: no error line names rank 1"
    else
        pass "killed peer, $name np=$np (reported after ${worst} s at most)"
    fi
}
if [ -z "$NET_ONLY" ]; then
    killed "device buffers, CUDA IPC, victim waits" auto 2
    killed "device buffers, CUDA IPC, mid ring allreduce" auto 4 --mid --count 67108864 --kill-after-us 0
    killed "device buffers, CUDA IPC, survivors' communicator" auto 3 --survivor-comm
    # killed while its kernel moves the steps (the victim's kernel may finish the first
    # allreduce after the process is gone; the next one must fail)
    killed "device buffers, CUDA IPC, killed 5 ms into a ring allreduce" auto 4 --mid --count 4194304 \
        --kill-after-us 5000
    mps_restart # a killed client's kernels
fi
if [ -n "$NET" ]; then
    KILL_X=$STAGED killed "device buffers, UCX host-staged, victim waits" ucx 2
    KILL_X=$STAGED killed "device buffers, UCX host-staged, mid ring allreduce" ucx 4 --mid --count 4194304 \
        --kill-after-us 0
    # under MPS this one may leave every survivor's context with a sticky error: the
    # host's look at the daemon's stream must fail the pending allreduce, not wait forever
    KILL_X=$STAGED killed "device buffers, UCX host-staged, killed 5 ms into a ring allreduce" ucx 4 --mid \
        --count 4194304 --kill-after-us 5000
    mps_restart
    PK="-x DFCCL_NET_PUT=on -x DFCCL_LOG_LEVEL=info"
    KILL_X=$PK KILL_WRAP=$HOSTSWRAP KILL_STEPS=put killed "device buffers, UCX steps by put, victim waits" ucx 2
    KILL_X=$PK KILL_WRAP=$HOSTSWRAP KILL_STEPS=put killed "device buffers, UCX steps by put, mid ring allreduce" \
        ucx 4 --mid --count 4194304 --kill-after-us 0
    mps_restart
fi
# the deadlock fuzzer on device buffers (docs/fuzzing.md): random programs, with device
# synchronizations between submissions while collectives are pending (bench/RESULTS.md, section 15)
if [ -z "$NET_ONLY" ] && [ -x "$B/test/fuzz/fz_native_dev" ] &&
    selected "fuzz --device"; then
    out=$(python3 "$(dirname "$0")/../fuzz/fuzz_run.py" --build "$B" --device --seeds 1:41 --np 2,4,8 --quiet \
        --time-limit 400 --timeout 120 --logdir "$LOGDIR/fuzz" --name "fuzz --device: seeds 1-40, np 2/4/8" \
        --mpirun-args "--bind-to none" --env CUDA_MPS_PIPE_DIRECTORY="$CUDA_MPS_PIPE_DIRECTORY" 2>&1)
    relay_verdicts < <(grep -v '^fuzz: ' <<< "$out") || fail "fuzz --device: no verdict from test/fuzz/fuzz_run.py"
    mps_restart # the kernels of a program that hung
fi
# the hang proofs last: each leaves kernels spinning until MPS is restarted
if [ -z "$NET_ONLY" ]; then
    run "chaos preempt=0" 90 hang 4 -x DFCCL_PREEMPT=0 $T chaos --iters 5 --deadline 20
    mps_restart
    run "chaos ll_wide preempt=0" 90 hang 4 -x DFCCL_LL_WIDE_MAX=65536 -x DFCCL_PREEMPT=0 $T chaos --iters 5 \
        --ll-sizes --deadline 20
    mps_restart
    run "sync preempt=0" 60 hang 2 -x DFCCL_PREEMPT=0 $T sync --deadline 15
    mps_restart
    run "vcolls chaos preempt=0" 90 hang 4 -x DFCCL_PREEMPT=0 $V --chaos 6 --scale 400000 --deadline 20
    mps_restart
fi
if [ -n "$NET" ]; then
    run "chaos net=ucx preempt=0" 90 hang 4 -x DFCCL_NET=ucx -x DFCCL_PREEMPT=0 $T chaos --iters 5 --deadline 20
    mps_restart
    run "chaos net=ucx staged preempt=0" 90 hang 4 -x DFCCL_NET=ucx $STAGED -x DFCCL_PREEMPT=0 $T chaos --iters 5 \
        --deadline 20
    mps_restart
    run "chaos net=ucx net_threads=2 preempt=0" 90 hang 4 $NT -x DFCCL_PREEMPT=0 $T chaos --iters 5 --deadline 20
    mps_restart
    run "chaos hosts put preempt=0" 90 hang 4 -x DFCCL_NET_PUT=on -x DFCCL_PREEMPT=0 $HOSTSWRAP $T chaos \
        --iters 5 --deadline 20
    mps_restart
fi
# compute-sanitizer on a small run, without MPS (the tools do not attach to MPS clients;
# two ranks then time-slice the GPU, slow but correct): memcheck and racecheck with 2
# ranks (the FIFOs, IPC peers, every algorithm; the LL round's shared-memory state only
# exists with peers)
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -n "$CS" ] && [ "${SANITIZER:-1}" = 1 ] && [ -z "$NET_ONLY" ]; then
    mps_stop
    for spec in "memcheck 2" "racecheck 2"; do
        set -- $spec
        run "compute-sanitizer $1" ${SANITIZER_TIMEOUT:-200} ok $2 $CS --tool $1 --error-exitcode 9 $T matrix --small
        grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$LOGDIR"/compute-sanitizer_$1-np$2.log | sort | uniq -c | sed 's/^/    /'
    done
    # the LL round split over the channels: several blocks' writes to one output
    run "compute-sanitizer racecheck ll_wide" ${SANITIZER_TIMEOUT:-200} ok 2 -x DFCCL_LL_WIDE_MAX=65536 $CS \
        --tool racecheck --error-exitcode 9 $T matrix --small
    mps_start
fi
finish

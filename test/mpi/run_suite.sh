#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Multi-process test suite of dfccl.
#
# usage: run_suite.sh BUILD_BIN_DIR
#   BUILD_BIN_DIR holds the compiled programs t_matrix, t_comms, t_chaos, t_random,
#   t_badinput, t_killed, t_large, t_threads, t_mismatch, t_vcolls, t_config, t_firstfail, t_left,
#   t_collmismatch
#   (named like their .c files).
#
# Every case runs under mpirun inside `timeout`, so a hang fails fast; processes of
# the test binaries left behind by a killed job are killed by pid afterwards. One
# line per case: "PASS: name np=N" or "FAIL: name np=N (reason)"; at the end
# "N passed, N failed"; the exit status is non-zero if any case failed.
#
# Environment:
#   DFCCL_*            passed to every rank (mpirun -x)
#   SUITE_NPS          rank counts of the general cases (default "2 3 4 8")
#   SUITE_FILTER       only run cases whose name matches this extended regex
#   SUITE_LOGDIR       where the logs go (default: a new /tmp/dfccl-suite.XXXXXX)
#   SUITE_HANG_RUNS    how many times the preemption-off hang proof runs (default 1)
#   SUITE_MPIRUN_ARGS  replaces "--mca btl self,vader"
#   SUITE_VERBOSE=1    print the tail of the log of every failing case
set -u

if [ $# -lt 1 ] || [ ! -d "$1" ]; then
    echo "usage: $0 BUILD_BIN_DIR" >&2
    exit 2
fi
BIN=$(cd "$1" && pwd)
NPS=${SUITE_NPS:-"2 3 4 8"}
FILTER=${SUITE_FILTER:-}
HANG_RUNS=${SUITE_HANG_RUNS:-1}
LOGDIR=${SUITE_LOGDIR:-$(mktemp -d /tmp/dfccl-suite.XXXXXX)}
mkdir -p "$LOGDIR"
read -r -a MPI_EXTRA <<< "${SUITE_MPIRUN_ARGS:---mca btl self,vader}"

MPIRUN=(mpirun --allow-run-as-root --oversubscribe "${MPI_EXTRA[@]}")
# pass the caller's DFCCL_* variables through explicitly
for v in $(compgen -e | grep '^DFCCL_' || true); do
    MPIRUN+=(-x "$v")
done

npass=0
nfail=0
FAILED=()

for p in t_matrix t_comms t_chaos t_random t_badinput t_killed t_large t_threads t_mismatch t_vcolls t_config \
    t_firstfail t_left t_collmismatch; do
    if [ ! -x "$BIN/$p" ]; then
        echo "FAIL: $p (missing program $BIN/$p)"
        nfail=$((nfail + 1))
        FAILED+=("$p")
    fi
done

# ------------------------------------------------------------------ helpers

# shellcheck disable=SC2034 # read by suite_lib.sh
ORPHAN_DIRS=("$BIN")
# shellcheck source=../suite_lib.sh
. "$(dirname "$0")/../suite_lib.sh"
# sweep_bound_case, debug_file_safety_case (the hostile suite runs them too)
# shellcheck source=../files_cases.sh
. "$(dirname "$0")/../files_cases.sh"

# run_case NAME NP TIMEOUT [mpirun args...] -- PROGRAM [args...]
# PASS when the job exits 0 with a final "OK" (or "SKIP") line and no dfccl segment
# of a dead process is left in /dev/shm.
run_case() {
    local name=$1 np=$2 tmo=$3
    shift 3
    local id="$name np=$np"
    selected "$id" || return 0
    local log
    log="$LOGDIR/$(printf '%s' "${name}_np$np" | tr -c 'A-Za-z0-9_.=-' '_').log"
    local before after leaked
    before=$(shm_list)
    local t0=$SECONDS
    run_mpi "$log" "$tmo" "$np" "$@"
    local dt=$((SECONDS - t0))
    after=$(shm_list)
    leaked=$(shm_leaked_since "$before" "$after")
    if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then
        fail "$id" "timed out after ${tmo}s: $(reason_of "$log"); log $log" "$log"
    elif [ "$RC" -ne 0 ]; then
        fail "$id" "exit $RC: $(reason_of "$log"); log $log" "$log"
    elif grep -q '^SKIP' "$log"; then
        pass "$id ($(grep -m1 '^SKIP' "$log"))"
    elif ! grep -qx 'OK' "$log"; then
        fail "$id" "exit 0 without an OK line; log $log" "$log"
    elif [ -n "$leaked" ]; then
        fail "$id" "shared memory left behind: ${leaked//$'\n'/ }; log $log" "$log"
    else
        pass "$id [${dt}s]"
    fi
}

# ------------------------------------------------------------------ general cases

echo "dfccl MPI suite: binaries $BIN, logs $LOGDIR, np in {$NPS}"

for np in $NPS; do
    tm=60
    [ "$np" -ge 8 ] && tm=120
    run_case t_matrix "$np" "$tm" -- t_matrix
    run_case t_comms "$np" 60 -- t_comms
    run_case t_chaos "$np" "$tm" -- t_chaos 20 --deadline 60
    run_case t_random "$np" "$tm" -- t_random --rounds 8 --deadline 60
    run_case t_badinput "$np" 60 -- t_badinput
    run_case t_vcolls "$np" "$tm" -- t_vcolls
done
run_case t_vcolls 1 60 -- t_vcolls
# dfcclConfig_t: field over environment, the first communicator fixes, bad values
for np in 1 3; do
    run_case t_config "$np" 60 -x DFCCL_SLOTS=3 -x DFCCL_FIFO_DEPTH=8 -- t_config
done
# a failed first dfcclCommInit (bad variable, failed all-gather, a knob that differs)
# fixes nothing: the next one with good settings works
for m in env bootstrap shape; do
    run_case "t_firstfail[$m]" 3 60 -- t_firstfail "$m"
done
# a peer that destroys a communicator another rank waits on: that wait ends with an
# error naming it (it hung before), the communicator refuses more, others are untouched
for m in never pending; do
    run_case "t_left[$m]" 3 60 -- t_left "$m"
done
run_case "t_vcolls[chaos]" 4 120 -- t_vcolls --chaos 10 --deadline 60
run_case "t_vcolls[chaos]" 8 120 -- t_vcolls --chaos 4 --scale 40000 --deadline 60
run_case "t_vcolls[threads=3,channels=4,chunk=4096]" 4 120 -x DFCCL_CPU_THREADS=3 -x DFCCL_CHANNELS=4 \
    -x DFCCL_CHUNK_SIZE=4096 -- t_vcolls --quick
run_case "t_vcolls[slots=1,channels=3,chaos]" 3 120 -x DFCCL_SLOTS=1 -x DFCCL_CHANNELS=3 -- t_vcolls --chaos 5 \
    --deadline 60

for np in 2 4; do
    run_case t_threads "$np" 60 -- t_threads --threads 2 --iters 40
done
run_case t_threads-4threads 3 60 -- t_threads --threads 4 --iters 20

# configuration variants: small chunks, ring for every allreduce, one slot, two channels
run_case "t_matrix[chunk=4096,oneshot=0]" 4 120 -x DFCCL_CHUNK_SIZE=4096 -x DFCCL_ONESHOT_MAX=0 -- t_matrix
# the direct exchange (off by default until measured on a GPU): results, chaos order, threads
run_case "t_matrix[direct_max=4M]" 4 120 -x DFCCL_DIRECT_MAX=4194304 -- t_matrix
run_case "t_matrix[direct_max=4M,direct_ranks=2,channels=3]" 3 120 -x DFCCL_DIRECT_MAX=4194304 -x DFCCL_DIRECT_RANKS=2 -x DFCCL_CHANNELS=3 -- t_matrix --quick
run_case "t_matrix[direct_max=0]" 4 120 -x DFCCL_DIRECT_MAX=0 -- t_matrix --quick
run_case "t_chaos[direct_max=4M]" 4 120 -x DFCCL_DIRECT_MAX=4194304 -- t_chaos 10 --deadline 60
run_case "t_threads[direct_max=4M,direct_ranks=2]" 2 60 -x DFCCL_DIRECT_MAX=4194304 -x DFCCL_DIRECT_RANKS=2 -- t_threads --threads 2 --iters 40
# the zero-copy read forced on every alltoall and allgather (read_min=1): results (process_vm_readv
# between ranks), several channels and workers, random order over many communicators, threads
run_case "t_matrix[read_min=1]" 4 120 -x DFCCL_READ_MIN=1 -- t_matrix
run_case "t_matrix[read_min=1,channels=3,threads=2]" 3 120 -x DFCCL_READ_MIN=1 -x DFCCL_CHANNELS=3 -x DFCCL_CPU_THREADS=2 -- t_matrix --quick
run_case "t_random[read_min=1]" 4 120 -x DFCCL_READ_MIN=1 -- t_random --rounds 6 --deadline 60
run_case "t_threads[read_min=1]" 3 60 -x DFCCL_READ_MIN=1 -- t_threads --threads 2 --iters 40
# each rank in its own pid namespace: a peer's pid means nothing here (every rank is pid 1
# in its own), so every read must be refused and every block pushed through the FIFOs
# (without the namespace check a rank reads its own memory at the peer's address: wrong
# results or a crash). Open MPI's vader BTL fails across pid namespaces: tcp.
read_pidns_case() {
    local id="t_matrix[read_min=1,a pid namespace per rank] np=3"
    selected "$id" || return 0
    if [ "$(id -u)" != 0 ] || ! unshare --pid --fork true 2>/dev/null; then
        pass "$id (skipped: needs root and unshare --pid)"
        return 0
    fi
    local log="$LOGDIR/t_matrix_read_pidns_np3.log" t0=$SECONDS
    timeout -s TERM -k 10 120 mpirun --allow-run-as-root --oversubscribe --mca btl self,tcp -x DFCCL_READ_MIN=1 \
        -np 3 unshare --pid --fork "$BIN/t_matrix" --quick > "$log" 2>&1 < /dev/null
    local rc=$?
    kill_orphans
    if [ "$rc" -ne 0 ] || ! grep -qx 'OK' "$log"; then
        fail "$id" "exit $rc: $(reason_of "$log"); log $log" "$log"
    else
        pass "$id [$((SECONDS - t0))s]"
    fi
}
read_pidns_case
run_case "t_matrix[slots=1,channels=2]" 3 120 -x DFCCL_SLOTS=1 -x DFCCL_CHANNELS=2 -- t_matrix --quick
run_case "t_random[slots=1,chunk=1024]" 4 120 -x DFCCL_SLOTS=1 -x DFCCL_CHUNK_SIZE=1024 -- t_random --rounds 4 --deadline 60
run_case "t_chaos[channels=4,slots=4]" 4 120 -x DFCCL_CHANNELS=4 -x DFCCL_SLOTS=4 -- t_chaos 10 --deadline 60
# several CPU daemon threads (channel c on thread c mod threads): results, chaos order,
# communicators created and destroyed with collectives pending
run_case "t_matrix[threads=3,channels=4]" 3 120 -x DFCCL_CPU_THREADS=3 -x DFCCL_CHANNELS=4 -- t_matrix --quick
run_case "t_chaos[threads=2,channels=4,slots=4]" 4 120 -x DFCCL_CPU_THREADS=2 -x DFCCL_CHANNELS=4 \
    -x DFCCL_SLOTS=4 -- t_chaos 10 --deadline 60
run_case "t_comms[threads=2,channels=3]" 3 120 -x DFCCL_CPU_THREADS=2 -x DFCCL_CHANNELS=3 -- t_comms
# LL rounds split over the channels (never on host buffers by default): every collective
# through the API, pieces of 4-32 KiB over up to 4 channels on 2 threads, and under chaos; the timeline
# (DFCCL_TRACE names each stretch's algorithm) shows that they ran
run_case "t_matrix[ll_wide_max=32K,channels=4,threads=2]" 3 120 -x DFCCL_LL_WIDE_MAX=32768 -x DFCCL_CHANNELS=4 \
    -x DFCCL_CPU_THREADS=2 -x DFCCL_TRACE="$LOGDIR/llw" -- t_matrix --quick
if selected "t_matrix[ll_wide_max=32K,channels=4,threads=2] np=3"; then
    if cat "$LOGDIR"/llw.*.json 2>/dev/null | grep -q '"algo": "llw", "daemon": "cpu"'; then
        pass "t_matrix[ll_wide_max=32K] ran split LL rounds (DFCCL_TRACE)"
    else
        fail "t_matrix[ll_wide_max=32K] ran no split LL round (DFCCL_TRACE $LOGDIR/llw.*.json)"
    fi
    rm -f "$LOGDIR"/llw.*.json
fi
run_case "t_chaos[ll_wide_max=32K,channels=3]" 4 120 -x DFCCL_LL_WIDE_MAX=32768 -x DFCCL_CHANNELS=3 \
    -- t_chaos 10 --ll-sizes --deadline 60

# a knob that shapes the communicator, different on the last rank: every rank's
# dfcclCommInit fails with a message naming it (run_case also checks /dev/shm)
run_case "t_mismatch[DFCCL_CHANNELS]" 3 60 -- t_mismatch DFCCL_CHANNELS 2 1
# one rank out of memory during dfcclCommInit, each of its set-up's allocations in turn:
# every rank comes back with the same verdict (before: the others waited for ever in the
# all-gather that the rank skipped), nothing is left behind
run_case "t_setupoom[rank 1 out of memory]" 3 90 -- t_setupoom 1
run_case "t_setupoom[rank 0 out of memory]" 2 90 -- t_setupoom 0
run_case "t_mismatch[DFCCL_CHUNK_SIZE]" 2 60 -- t_mismatch DFCCL_CHUNK_SIZE 65536 32768
run_case "t_mismatch[DFCCL_ONESHOT_MAX]" 4 60 -- t_mismatch DFCCL_ONESHOT_MAX 32768 0
run_case "t_mismatch[DFCCL_LL_WIDE_MAX auto]" 2 60 -- t_mismatch DFCCL_LL_WIDE_MAX auto 32768
# a value refused on the last rank only (before: the others hung in the first
# all-gather): every rank fails alike, naming that rank and its value
run_case "t_mismatch[DFCCL_SLOTS=abc on the last rank]" 3 60 -- t_mismatch DFCCL_SLOTS 2 abc --refused
run_case "t_mismatch[DFCCL_CHUNK_SIZE=-1 on the last rank]" 2 60 -- t_mismatch DFCCL_CHUNK_SIZE 65536 -1 --refused
run_case "t_mismatch[DFCCL_LOG_LEVEL=loud on the last rank]" 4 60 -- t_mismatch DFCCL_LOG_LEVEL warn loud --refused
# the GPU backend off on the last rank only, in a build with it (a CPU-only build has no
# GPU part anywhere): the others would run the GPU set-up's all-gathers without it
if "$BIN/../../tools/dfccl-info" -b 2>/dev/null | grep -q 'GPU backend (CUDA) yes'; then
    run_case "t_mismatch[DFCCL_GPU=0 on the last rank]" 2 60 -- t_mismatch DFCCL_GPU 1 0 --refused --refused-code usage
fi

# one collective called differently on the last rank, default settings (in-band
# signatures): every rank errors at that call or its next one, naming the difference,
# within seconds (a wait past 20 s prints HANG); the communicator is refused from then
# on; others and new ones work. 64 elements: one LL round; 65536: ring and chain.
# two-roots: two ranks take themselves for a bcast's root; nobody stalls, the roots find
# it at their next call (engine/sig.c, eng_sig_verify)
for m in count reduce-root bcast-root kind op datatype refused commrefuse refused-ahead none refused-all two-roots vcounts; do
    run_case "t_collmismatch[$m]" 3 60 -- t_collmismatch "$m"
    run_case "t_collmismatch[$m,65536 elements]" 4 60 -- t_collmismatch "$m" --elems 65536
done
run_case "t_collmismatch[op,threads=2,channels=4]" 2 60 -x DFCCL_CPU_THREADS=2 -x DFCCL_CHANNELS=4 -- \
    t_collmismatch op --elems 65536
run_case "t_collmismatch[datatype,direct_max=4M]" 4 60 -x DFCCL_DIRECT_MAX=4194304 -- t_collmismatch datatype \
    --elems 65536
run_case "t_collmismatch[two-roots]" 2 60 -- t_collmismatch two-roots
run_case "t_collmismatch[two-roots,direct_max=4M]" 4 60 -x DFCCL_DIRECT_MAX=4194304 -- t_collmismatch two-roots \
    --elems 65536

# more than 2^31 bytes: 2 ranks only
run_case t_large 2 400 -- t_large

# ------------------------------------------------------------------ hang proof
# With preemption off, ranks that submit the chaos collectives in different orders
# must deadlock: the program reports HANG and exits 3 (or the watchdog kills it).
# HANG_PROG / HANG_ARGS: the chaos program and its arguments (t_chaos 20).
hang_proof() {
    local np=4 i tag=${1:-}
    shift || true
    local prog=${HANG_PROG:-t_chaos} pargs
    read -r -a pargs <<< "${HANG_ARGS:-20}"
    local id="$prog[${tag:+$tag,}DFCCL_PREEMPT=0 must hang] np=$np"
    selected "$id" || return 0
    local ok=1 why="" vb va f
    for i in $(seq 1 "$HANG_RUNS"); do
        local log="$LOGDIR/${prog}_nopreempt${tag:+_$tag}_np${np}_$i.log"
        vb=$(vader_list)
        run_mpi "$log" 60 "$np" "$@" -x DFCCL_PREEMPT=0 -- "$prog" "${pargs[@]}" --deadline 10
        # ranks that _exit without MPI_Finalize leave Open MPI's vader segments
        # behind; the job is gone (kill_orphans), so remove the ones it created
        va=$(vader_list)
        for f in $va; do
            grep -qxF "$f" <<< "$vb" || rm -f "/dev/shm/$f"
        done
        if [ "$RC" -eq 3 ] || [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ] || grep -q '^HANG:' "$log"; then
            if [ "$RC" -eq 0 ]; then
                ok=0
                why="run $i exit 0 despite HANG lines; log $log"
            fi
        elif [ "$RC" -eq 0 ] || grep -qx 'OK' "$log"; then
            ok=0
            why="run $i completed with preemption off: no deadlock; log $log"
        else
            ok=0
            why="run $i exit $RC without a HANG report: $(reason_of "$log"); log $log"
        fi
    done
    if [ "$ok" = 1 ]; then
        pass "$id (hung as expected in $HANG_RUNS run(s))"
    else
        fail "$id" "$why"
    fi
}
hang_proof
hang_proof "threads=2,channels=4" -x DFCCL_CPU_THREADS=2 -x DFCCL_CHANNELS=4
HANG_ARGS="20 --ll-sizes" hang_proof "ll_wide_max=32K,channels=3" -x DFCCL_LL_WIDE_MAX=32768 -x DFCCL_CHANNELS=3
# the v-collectives, gather/scatter and all-to-all-w in the chaos order
HANG_PROG=t_vcolls HANG_ARGS="--chaos 10" hang_proof

# With preemption off and DFCCL_TIMEOUT set, the same deadlock ends in dfcclTimeout.
run_case "t_chaos[DFCCL_PREEMPT=0,DFCCL_TIMEOUT=2000 must time out]" 4 120 \
    -x DFCCL_PREEMPT=0 -x DFCCL_TIMEOUT=2000 -- t_chaos 20 --deadline 90 --expect-timeout
run_case "t_chaos[threads=2,channels=4,DFCCL_PREEMPT=0,DFCCL_TIMEOUT=2000 must time out]" 4 120 \
    -x DFCCL_CPU_THREADS=2 -x DFCCL_CHANNELS=4 -x DFCCL_PREEMPT=0 -x DFCCL_TIMEOUT=2000 -- t_chaos 20 \
    --deadline 90 --expect-timeout

# ------------------------------------------------------------------ busy machine
# Two busy-loop processes beside the ranks, so runnable threads outnumber the cores:
# waits block on doorbells instead of spinning out time slices. Results stay exact,
# the chaos order still completes, and with preemption off it still hangs (a worker
# that blocks on a contended core stays with its task).
BUSY=()
busy_start() {
    for _ in 1 2; do
        sh -c 'while :; do :; done' &
        BUSY+=($!)
    done
}
busy_stop() {
    [ ${#BUSY[@]} -gt 0 ] || return 0
    kill "${BUSY[@]}" 2>/dev/null
    wait "${BUSY[@]}" 2>/dev/null
    BUSY=()
}
trap busy_stop EXIT
busy_start
run_case "t_chaos[2 busy processes]" 4 120 -- t_chaos 20 --deadline 90
run_case "t_vcolls[2 busy processes,chaos]" 3 120 -- t_vcolls --chaos 6 --deadline 90
run_case "t_matrix[2 busy processes,threads=2,channels=4]" 2 180 -x DFCCL_CPU_THREADS=2 -x DFCCL_CHANNELS=4 \
    -- t_matrix --quick
hang_proof "2 busy processes"
busy_stop

# ------------------------------------------------------------------ killed ranks
# Ranks raise SIGKILL with communicators alive: no segment of theirs may remain.
killed_case() {
    local mode=$1 np=2
    local id="t_killed${mode:+[$mode]} np=$np"
    selected "$id" || return 0
    local log="$LOGDIR/t_killed${mode}_np$np.log"
    local before after leaked p
    local -a pids=()
    before=$(shm_list)
    run_mpi "$log" 60 "$np" -- t_killed ${mode:+"$mode"}
    after=$(shm_list)
    mapfile -t pids < <(sed -n 's/^t_killed: rank [0-9]* pid \([0-9]*\)$/\1/p' "$log")
    leaked=$(shm_leaked_since "$before" "$after")
    local own=""
    for p in "${pids[@]}"; do
        own+=$(grep "^dfccl-$p-" <<< "$after" | tr '\n' ' ')
    done
    if [ "$RC" -eq 124 ]; then
        fail "$id" "timed out: $(reason_of "$log"); log $log" "$log"
    elif [ "$RC" -eq 0 ]; then
        fail "$id" "mpirun exit 0 although every rank killed itself; log $log" "$log"
    elif [ "${#pids[@]}" -lt "$np" ]; then
        fail "$id" "only ${#pids[@]} of $np ranks got to the kill: $(reason_of "$log"); log $log" "$log"
    elif [ -n "$own" ] || [ -n "$leaked" ]; then
        fail "$id" "segments of killed ranks remain in /dev/shm: $own ${leaked//$'\n'/ }; log $log" "$log"
    else
        pass "$id (ranks ${pids[*]} killed, no segment left)"
    fi
}
killed_case ""
killed_case --mid

# The next normal run must leave no dfccl segment at all.
followup_case() {
    local id="t_killed[follow-up normal run] np=2"
    selected "$id" || return 0
    local log="$LOGDIR/t_killed_followup_np2.log"
    run_mpi "$log" 60 2 -- t_killed --normal
    local after dead="" live="" name pid
    after=$(shm_list)
    for name in $after; do
        pid=${name#dfccl-}
        pid=${pid%%-*}
        if pid_alive "$pid"; then live="$live $name"; else dead="$dead $name"; fi
    done
    if [ "$RC" -ne 0 ] || ! grep -qx OK "$log"; then
        fail "$id" "exit $RC: $(reason_of "$log"); log $log" "$log"
    elif [ -n "$dead" ]; then
        fail "$id" "dfccl segments remain after a normal run:$dead; log $log" "$log"
    else
        pass "$id (no dfccl segment left${live:+; segments of other live processes:$live})"
    fi
}
followup_case

# Segments of a dead process are removed at the next start; a live process's are kept,
# and so are other pid namespaces' (containers sharing /dev/shm). Names:
# dfccl-<pid>-<start time>-<pid namespace>-<random>; a live pid whose start time differs
# is a reused pid: its segment is dead too.
dead_pid_cleanup_case() {
    local id="shm_dead_pid_cleanup np=2"
    selected "$id" || return 0
    local log="$LOGDIR/shm_dead_pid_cleanup_np2.log"
    local dead
    sleep 0 &
    dead=$!
    wait "$dead" 2>/dev/null
    if pid_alive "$dead"; then
        pass "$id (skipped: could not find a dead pid)"
        return 0
    fi
    local ns start
    ns=$(stat -L -c %i /proc/self/ns/pid)
    start=$(sed 's/.*) //' /proc/$$/stat | awk '{print $20}')
    local rnd=0123456789abcdef0123456789abcdef
    local fake_dead="/dev/shm/dfccl-$dead-12345-$ns-$rnd"
    local fake_live="/dev/shm/dfccl-$$-$start-$ns-$rnd"
    local fake_reused="/dev/shm/dfccl-$$-$((start + 1))-$ns-$rnd"
    local fake_other_ns="/dev/shm/dfccl-$dead-12345-$((ns + 1))-$rnd"
    for f in "$fake_dead" "$fake_live" "$fake_reused" "$fake_other_ns"; do head -c 4096 /dev/zero > "$f"; done
    run_mpi "$log" 60 2 -- t_killed --normal
    local dead_left=0 live_left=0 reused_left=0 other_left=0
    [ -e "$fake_dead" ] && dead_left=1
    [ -e "$fake_live" ] && live_left=1
    [ -e "$fake_reused" ] && reused_left=1
    [ -e "$fake_other_ns" ] && other_left=1
    rm -f "$fake_dead" "$fake_live" "$fake_reused" "$fake_other_ns"
    if [ "$RC" -ne 0 ] || ! grep -qx OK "$log"; then
        fail "$id" "exit $RC: $(reason_of "$log"); log $log" "$log"
    elif [ "$dead_left" = 1 ]; then
        fail "$id" "$fake_dead (pid $dead is dead) was not removed by the next start; log $log" "$log"
    elif [ "$reused_left" = 1 ]; then
        fail "$id" "$fake_reused (pid $$ now another process) was not removed; log $log" "$log"
    elif [ "$live_left" = 0 ]; then
        fail "$id" "$fake_live (pid $$ is alive: the suite) was removed; log $log" "$log"
    elif [ "$other_left" = 0 ]; then
        fail "$id" "$fake_other_ns (another pid namespace) was removed; log $log" "$log"
    else
        pass "$id (dead and reused pids' segments removed; a live one and another namespace's kept)"
    fi
}
dead_pid_cleanup_case

sweep_bound_case

# A malformed configuration value, number or word, fails dfcclCommInit with a message that
# names the variable (a misspelled log level was taken silently as the default before).
bad_config_case() {
    local var=$1 value=$2 id="bad_config[$1=$2] np=2"
    selected "$id" || return 0
    local log="$LOGDIR/bad_config_$1.log"
    run_mpi "$log" 60 2 -x "$var=$value" -- t_matrix
    if [ "$RC" -ne 0 ] && [ "$RC" -ne 124 ] && [ "$RC" -ne 137 ] && grep -q "$var=$value" "$log"; then
        pass "$id (refused: $(grep -m1 -o "$var=$value[^;]*" "$log" | head -c 90))"
    else
        fail "$id" "exit $RC without naming $var; log $log" "$log"
    fi
}
bad_config_case DFCCL_LOG_LEVEL verbose
bad_config_case DFCCL_SLOTS two
bad_config_case DFCCL_DEBUG loud

# A DFCCL_ name dfccl does not read is a warning naming it and the closest real one (the
# job runs); DFCCL_DEMO_ / DFCCL_BENCH_ names belong to the example and benchmark programs.
unknown_var_case() {
    local id="unknown_var[DFCCL_CHANELS,DFCCL_DEBUG_FIL] np=2"
    selected "$id" || return 0
    local log="$LOGDIR/unknown_var.log"
    run_mpi "$log" 60 2 -x DFCCL_CHANELS=2 -x DFCCL_DEBUG_FIL=x -x DFCCL_DEMO_ANYTHING=1 -- t_matrix --quick
    if [ "$RC" -eq 0 ] && grep -qx OK "$log" &&
        grep -q 'DFCCL_CHANELS is not a dfccl variable and is ignored (did you mean DFCCL_CHANNELS?)' "$log" &&
        grep -q 'DFCCL_DEBUG_FIL is not a dfccl variable and is ignored (did you mean DFCCL_DEBUG_FILE?)' "$log" &&
        ! grep -q 'DFCCL_DEMO_ANYTHING' "$log"; then
        pass "$id (warned, with the names meant; DFCCL_DEMO_ left alone)"
    else
        fail "$id" "exit $RC, or the warnings are missing; log $log" "$log"
    fi
}
unknown_var_case

# NCCL's diagnostics conventions: DFCCL_DEBUG=INFO (NCCL's spelling of DFCCL_LOG_LEVEL)
# gives the version banner and the info lines without a warning; DFCCL_DEBUG_FILE with
# %h and %p takes them off stderr into one file per process; DFCCL_DEBUG_SUBSYS=NET drops
# the INIT lines that INIT keeps; DFCCL_DEBUG=VERSION prints the banner alone.
debug_vars_case() {
    local id="debug_vars[DFCCL_DEBUG,DFCCL_DEBUG_FILE,DFCCL_DEBUG_SUBSYS] np=2"
    selected "$id" || return 0
    local log="$LOGDIR/debug_vars.log" dir="$LOGDIR/debug_files" why=
    rm -rf "$dir" && mkdir -p "$dir"
    run_mpi "$log.info" 60 2 -x DFCCL_DEBUG=INFO -- t_matrix --quick
    { [ "$RC" -eq 0 ] && [ "$(grep -c 'INFO config.c.*print_banner() dfccl [0-9.]*, pid' "$log.info")" -eq 2 ] &&
        grep -q 'INFO comm.c.*transport shm' "$log.info" && ! grep -q 'not a dfccl variable' "$log.info"; } ||
        why="$why DFCCL_DEBUG=INFO: no banner or info lines, or a warning;"
    run_mpi "$log.file" 60 2 -x DFCCL_DEBUG=INFO -x DFCCL_DEBUG_FILE="$dir/log.%h.%p" -- t_matrix --quick
    local files=("$dir"/log.*)
    { [ "$RC" -eq 0 ] && [ "${#files[@]}" -eq 2 ] && ! grep -q '^\[dfccl' "$log.file" &&
        grep -q 'transport shm' "${files[0]}" && [[ "${files[0]}" == "$dir/log.$(hostname)."* ]]; } ||
        why="$why DFCCL_DEBUG_FILE: ${#files[@]} files, or lines still on stderr;"
    run_mpi "$log.net" 60 2 -x DFCCL_DEBUG=INFO -x DFCCL_DEBUG_SUBSYS=NET -- t_matrix --quick
    { [ "$RC" -eq 0 ] && ! grep -q 'INFO comm.c' "$log.net"; } || why="$why DFCCL_DEBUG_SUBSYS=NET kept INIT lines;"
    run_mpi "$log.init" 60 2 -x DFCCL_DEBUG=INFO -x DFCCL_DEBUG_SUBSYS=INIT -- t_matrix --quick
    { [ "$RC" -eq 0 ] && grep -q 'INFO comm.c' "$log.init"; } || why="$why DFCCL_DEBUG_SUBSYS=INIT dropped them;"
    run_mpi "$log.version" 60 2 -x DFCCL_DEBUG=VERSION -- t_matrix --quick
    { [ "$RC" -eq 0 ] && [ "$(grep -c '^\[dfccl' "$log.version")" -eq 2 ] && grep -q 'print_banner' "$log.version"; } ||
        why="$why DFCCL_DEBUG=VERSION: not the banner alone;"
    if [ -z "$why" ]; then
        pass "$id (banner, info lines, one file per process, subsystem filter)"
    else
        fail "$id" "$why logs $log.*" "$log.info"
    fi
}
debug_vars_case

debug_file_safety_case

# DFCCL_TRACE: the deadlock demo's timeline (4 ranks, 8 communicators in a different
# order on every rank), checked by tools/dfccl-trace: every collective submitted and
# completed, every stretch set aside resumed, every rank named late really late; and the
# same check must fail on a copy with one completion taken out (it bites). Then
# `dfccl-trace svg` draws it: well-formed XML with one lane (<g class="lane">) per rank,
# each with run stretches drawn in it. Each file is a complete JSON array once its process
# has exited normally (strict json.load, and jq where installed), and `summary` names a
# stall once however many identical stretches it has (a copy of the longest one added to
# a file: one line, "2 such stretches").
# dfccl-trace phases on two made-up ranks' files of known times: three whole allreduces
# 100 us apart (rank 0 submits at 0, runs 3-10, sees completion at 11; rank 1 submits at
# 1, runs 5-12 in two stretches, sees it at 14) and a fourth only rank 0 has (left out).
phases_exact() {
    local tool=$1 dir=$2
    python3 - "$dir" << 'EOF' || return 1
import json, sys
d = sys.argv[1]
def ev(cat, ts, rank, seq, **kw):
    e = {"name": "allreduce", "cat": cat, "ph": "X" if cat == "run" else "i", "ts": ts, "pid": rank,
         "args": {"comm": "c", "rank": rank, "nranks": 2, "seq": seq, "coll": "allreduce"}}
    if cat == "run":
        e["dur"] = kw["dur"]
        e["args"].update(outcome="finished", worker=0, late_ranks=[])
    return e
for rank, (sub, runs, comp) in enumerate([(0, [(3, 7)], 11), (1, [(5, 3), (9, 3)], 14)]):
    out = []
    for seq in range(4 if rank == 0 else 3):
        t = 100 * seq
        out.append(ev("submit", t + sub, rank, seq))
        out += [ev("run", t + a, rank, seq, dur=b) for a, b in runs]
        out.append(ev("complete", t + comp, rank, seq))
    json.dump(out, open("%s/phases.%d.json" % (d, rank), "w"))
EOF
    local got want
    got=$(python3 "$tool" phases "$dir"/phases.0.json "$dir"/phases.1.json) || return 1
    echo "$got"
    # medians (nearest rank, the upper one of two): pick-up 3/4 -> 4, completion 1/2 -> 2,
    # call 11/13 -> 13, between calls 89/87 -> 89; rank 1's 2 stretches
    for want in "allreduce, 2 ranks: 3 collectives" "submit skew 1.00" "pick-up 4.00" "last rank reached 2.00" \
        "run after the last 7.00" "ends apart 2.00" "completion seen 2.00" "call 13.00" \
        "host between calls 89.00" "stretches 2"; do
        tr -s ' ' <<< "$got" | grep -qF -- "$want" || { echo "missing: $want"; return 1; }
    done
}

trace_case() {
    local id="trace[deadlock demo, DFCCL_TRACE] np=4"
    selected "$id" || return 0
    local log="$LOGDIR/trace.log" dir="$LOGDIR/trace" tool demo
    tool="$(dirname "$0")/../../tools/dfccl-trace"
    demo="$BIN/../../examples/deadlock_demo"
    rm -rf "$dir" && mkdir -p "$dir/cut"
    # staggered ranks (rank r submits r x 5 ms late): the early ranks' collectives stall
    # on ranks that have not submitted them, which the trace must name; unstaggered, an
    # idle machine can have every rank submit all before any stall (none named)
    run_mpi "$log" 120 4 -x DFCCL_TRACE="$dir/demo" -x DFCCL_GPU=0 -- "$demo" --stagger 5
    local files=("$dir"/demo.*.json) out cut lanes
    if [ "$RC" -ne 0 ] || [ "${#files[@]}" -ne 4 ] || [ ! -f "${files[0]}" ]; then
        fail "$id" "exit $RC, ${#files[@]} trace files; log $log" "$log"
        return
    fi
    local unclosed
    unclosed=$(python3 - "${files[@]}" 2>&1 << 'EOF'
import json, sys
for p in sys.argv[1:]:
    try:
        with open(p) as f:
            ev = json.load(f)
        if not isinstance(ev, list) or len(ev) < 2:
            print(p, "not an array of events")
    except ValueError as e:
        print(p, e)
EOF
    )
    if [ -z "$unclosed" ] && command -v jq > /dev/null; then
        for f in "${files[@]}"; do jq length "$f" > /dev/null 2>&1 || unclosed="$unclosed $f(jq)"; done
    fi
    if [ -n "$unclosed" ]; then
        fail "$id" "trace files not complete JSON after a normal exit: $unclosed" "$log"
        return
    fi
    python3 - "${files[0]}" "$dir/dup.json" << 'EOF'
import json, sys
ev = json.load(open(sys.argv[1]))
stalls = [e for e in ev if e.get("cat") == "run" and e["args"]["outcome"] == "stalled"]
if stalls:
    ev.append(max(stalls, key=lambda e: e["dur"]))
json.dump(ev, open(sys.argv[2], "w"))
EOF
    local dup
    dup=$(python3 "$tool" summary -n 5 "$dir/dup.json" 2>&1 | sed -n '/^longest stalls:/,/^$/p' | grep '^  rank')
    echo "$dup" >> "$log"
    # the copy joins the longest stall's line: its count is one more than without it (the
    # stall may already have had copies, same communicator, collective and duration)
    local orig top ndup norig
    orig=$(python3 "$tool" summary -n 5 "${files[0]}" 2>&1 | sed -n '/^longest stalls:/,/^$/p' | grep '^  rank')
    top=$(head -n 1 <<< "$dup")
    ndup=$(grep -oE '\([0-9]+ such stretches\)$' <<< "$top" | grep -oE '[0-9]+')
    norig=$(grep -F -- "${top% (* such stretches)}" <<< "$orig" | head -n 1 | grep -oE '\([0-9]+ such stretches\)$' |
        grep -oE '[0-9]+')
    if [ -n "$dup" ] && { [ "$(sort <<< "$dup" | uniq -d | wc -l)" -ne 0 ] ||
        [ "${ndup:-0}" != "$((${norig:-1} + 1))" ]; }; then
        fail "$id" "summary repeats a stall or does not count its copies: $(head -n 2 <<< "$dup")" "$log"
        return
    fi
    out=$(python3 "$tool" check "${files[@]}" 2>&1)
    echo "$out" >> "$log"
    python3 "$tool" summary "${files[@]}" >> "$log" 2>&1 || out="$out; summary failed"
    cp "${files[@]}" "$dir/cut/"
    cut=("$dir"/cut/demo.*.json)
    sed -i '0,/"cat": "complete"/{/"cat": "complete"/d}' "${cut[0]}"
    if ! grep -q 'consistent$' <<< "$out" || ! grep -qE '[1-9][0-9]* stretches set aside' <<< "$out" ||
        ! grep -qE '[1-9][0-9]* late ranks named' <<< "$out"; then
        fail "$id" "$(tail -n 1 <<< "$out"); log $log" "$log"
    elif python3 "$tool" check "${cut[@]}" > "$dir/cut.log" 2>&1; then
        fail "$id" "the check passed a trace with a completion taken out; $dir/cut.log" "$log"
    elif ! python3 "$tool" phases "${files[@]}" >> "$log" 2>&1; then
        fail "$id" "dfccl-trace phases failed on the demo's trace; log $log" "$log"
    elif ! phases_exact "$tool" "$dir" >> "$log" 2>&1; then
        fail "$id" "dfccl-trace phases: wrong figures for a made-up trace of known times; log $log" "$log"
    elif ! python3 "$tool" svg -o "$dir/demo.svg" "${files[@]}" >> "$log" 2>&1; then
        fail "$id" "dfccl-trace svg failed; log $log" "$log"
    elif ! lanes=$(python3 - "$dir/demo.svg" 2>> "$log" << 'EOF'
import sys
import xml.dom.minidom
doc = xml.dom.minidom.parse(sys.argv[1])  # raises on XML that is not well-formed
lanes = [g for g in doc.getElementsByTagName("g") if g.getAttribute("class") == "lane"]
# a lane counts when it has bars in it: an empty one would be no picture of that rank
print(sum(1 for g in lanes if any(r.getAttribute("class").startswith("run ") for r in g.getElementsByTagName("rect"))),
      len(lanes))
EOF
    ) || [ "$lanes" != "4 4" ]; then
        fail "$id" "$dir/demo.svg: not well-formed XML, or not 4 rank lanes with bars (${lanes:-none}); log $log" \
            "$log"
    else
        pass "$id ($(sed -n 's/^dfccl-trace check: //p' <<< "$out"))"
    fi
}
trace_case

# The same demo with preemption off hangs (every rank on another communicator) until
# DFCCL_TIMEOUT fails it; the processes then end through MPI_Abort, which runs no exit
# handler, so the trace must have been written when the collective failed: each file
# that exists ends with a failed completion, and at least one exists.
trace_hang_case() {
    local id="trace[deadlock demo, DFCCL_PREEMPT=0: the trace of the hang] np=4"
    selected "$id" || return 0
    local log="$LOGDIR/trace_hang.log" dir="$LOGDIR/trace_hang" demo nfailed
    demo="$BIN/../../examples/deadlock_demo"
    rm -rf "$dir" && mkdir -p "$dir"
    run_mpi "$log" 60 4 -x DFCCL_TRACE="$dir/off" -x DFCCL_GPU=0 -x DFCCL_PREEMPT=0 -x DFCCL_TIMEOUT=2000 \
        -- "$demo"
    local files=("$dir"/off.*.json)
    nfailed=$(cat "${files[@]}" 2>/dev/null | grep -c '"cat": "complete".*"result": -')
    if [ "$RC" -eq 0 ]; then
        fail "$id" "the demo exited 0 without preemption (it must hang until the timeout); log $log" "$log"
    elif [ ! -f "${files[0]}" ] || [ "$nfailed" -lt 1 ]; then
        fail "$id" "exit $RC, ${#files[@]} trace files, $nfailed failed completions in them; log $log" "$log"
    else
        pass "$id (exit $RC, ${#files[@]} trace files, $nfailed failed completions)"
    fi
}
trace_hang_case

# ------------------------------------------------------------------ summary
kill_orphans
echo "$npass passed, $nfail failed"
if [ "$nfail" -gt 0 ]; then
    for f in "${FAILED[@]}"; do echo "  failed: $f"; done
    exit 1
fi
exit 0

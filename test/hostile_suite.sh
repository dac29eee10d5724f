#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The hostile suite: what a careless or hostile program does to dfccl, case by case, and
# what each case gave. None may crash, hang, return wrong data or spoil another
# communicator: each must end in an error on every rank that names the cause (or, where
# the case says so, in no error at all). One line per case,
#
#   case: NAME -> WHAT IT GAVE
#
# then "PASS: NAME" or "FAIL: NAME (why)" when that is not what the case expects, and at
# the end a count of the cases tried by outcome and "N passed, N failed". Cases so far
# (issue 30, item 2: mismatched collectives, default settings):
#
#   native, shared memory   t_collmismatch: the last rank calls one collective with
#                           another count, root, kind, op or datatype, or its call is
#                           refused, or two ranks take themselves for a bcast's root
#   native, over UCX        the same with every peer on the net (DFCCL_NET=ucx)
#   native, mixed           shared-memory and net peers in one communicator
#   native, memory kinds    host memory on one rank, device memory on the others
#                           (t_collmismatch_dev: GPU machines only, else tried as SKIP)
#   through MPI             t_sigmismatch with mca_coll_dfccl loaded: every case
#
# and the rest of issue 30, each by the program (or suite case) that checks it, with
# what it gave:
#   1   a bad DFCCL_* value on one rank (native: a word, -1; through MPI), the GPU
#       backend off on one rank only (CUDA builds)
#   3   a peer that destroyed the communicator with a collective pending
#   4   request handles: a copy of a finished request, one request twice in
#       dfcclWaitAll, forged ones
#   5   stray UCX active messages (UCX builds)
#   6   20,000 dfccl-named files of another user in /dev/shm (files_cases.sh)
#   7   a failed first dfcclCommInit (bad variable, failed all-gather, a knob that differs)
#   8   malformed and misspelled coll_dfccl_* MCA values
#   9   DFCCL_DEBUG_FILE at a symbolic link, or another user's file (files_cases.sh)
#   10  --mca coll dfccl alone on an intercommunicator
#   11  the reasons given: a 2^40 count, nranks larger than the processes
#   12  one rank out of memory for a call's temporary, through MPI (its peers' calls fail
#       naming it, none waits)
#
# usage: test/hostile_suite.sh BUILD_DIR
#   SUITE_FILTER  only the cases whose name matches this extended regex
#   SUITE_LOGDIR  where the logs go (default: a new /tmp/dfccl-hostile.XXXXXX)
set -u

B=${1:?usage: hostile_suite.sh BUILD_DIR}
B=$(cd "$B" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
BIN=$B/test/mpi
FILTER=${SUITE_FILTER:-}
LOGDIR=${SUITE_LOGDIR:-$(mktemp -d /tmp/dfccl-hostile.XXXXXX)}
mkdir -p "$LOGDIR"
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --mca btl self,vader)
# shellcheck disable=SC2034 # read by suite_lib.sh
ORPHAN_DIRS=("$BIN" "$B/test/gpu" "$B/test/ompi")
# shellcheck source=suite_lib.sh
. "$SRC/test/suite_lib.sh"
# shellcheck source=files_cases.sh
. "$SRC/test/files_cases.sh"

declare -A GAVE_COUNT=()
tried() {
    echo "case: $1 -> $2"
    GAVE_COUNT[$3]=$((${GAVE_COUNT[$3]:-0} + 1))
    [ "$3" != skip ] || echo "SKIP: $1"
}

# What a run gave, by its exit status and its lines: crash, hang, wrong (an error it
# should not have, or none where it should: the program's FAIL line), or the summary
# GIVEN (the caller's, from the lines). Sets OUTCOME (crash|hang|wrong|ok) and WHAT.
judge() {
    local log=$1 np=$2
    if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ] || grep -q '^HANG' "$log"; then
        OUTCOME=hang WHAT="a hang ($(grep -m1 '^HANG' "$log" | cut -c1-120))"
    elif grep -qE 'Segmentation|SIGSEGV|SIGBUS|signal [0-9]+|core dumped|Aborted' "$log" ||
        { [ "$RC" -gt 128 ] && [ "$RC" -ne 137 ]; }; then
        OUTCOME=crash WHAT="a crash (exit $RC: $(reason_of "$log"))"
    elif [ "$RC" -ne 0 ] || ! grep -qE '^OK' "$log"; then
        OUTCOME=wrong WHAT="exit $RC: $(grep -m1 'FAIL' "$log" | cut -c1-200)"
    else
        OUTCOME=ok WHAT=
    fi
    : "$np"
}

# collmismatch NAME NP MODE [mpirun args...] -- COMMAND...: COMMAND MODE (t_collmismatch or
# its device twin, maybe behind a wrapper) must fail on every rank, at the call or a later
# one, naming the reason of MODE
collmismatch() {
    local name=$1 np=$2 mode=$3
    shift 3
    selected "$name" || return 0
    local margs=() reason
    reason=$(reason_for "$mode")
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        margs+=("$1")
        shift
    done
    shift
    local log=$LOGDIR/${name//[^A-Za-z0-9]/_}.log
    if [ ! -x "${*: -1}" ]; then
        tried "$name" "SKIP (no ${*: -1})" skip
        return 0
    fi
    run_mpi "$log" 90 "$np" "${margs[@]}" -- "$@" "$mode"
    if grep -q '^SKIP' "$log"; then
        tried "$name" "SKIP ($(grep -m1 '^SKIP' "$log" | cut -c7-120))" skip
        return 0
    fi
    judge "$log" "$np"
    if [ "$OUTCOME" = ok ]; then
        local n at_call slow
        n=$(grep -c "^t_collmismatch $mode rank [0-9]*: .*$reason" "$log")
        at_call=$(grep -c "^t_collmismatch $mode rank [0-9]*: the call failed" "$log")
        slow=$(sed -n -E "s/^t_collmismatch $mode rank [0-9]+: the call failed after ([0-9.]+) s: .*/\1/p" "$log" |
            sort -n | tail -1)
        WHAT="$n of $np ranks failed naming '$reason': $at_call at the call${slow:+ (within $slow s)}, $((np - at_call)) at a later call"
        [ "$n" -eq "$np" ] || OUTCOME=wrong
    fi
    tried "$name" "$WHAT" "$OUTCOME"
    if [ "$OUTCOME" = ok ]; then pass "$name"; else fail "$name" "$WHAT; log $log"; fi
}

reason_for() {
    case $1 in
    count) echo "the counts differ" ;;
    reduce-root | bcast-root | two-roots) echo "the roots differ" ;;
    kind) echo "the collectives differ" ;;
    op) echo "the ops differ" ;;
    datatype) echo "the datatypes differ" ;;
    memkind) echo "the memory kinds differ" ;;
    refused | refused-ahead) echo "refused its call" ;;
    esac
}

MODES="count reduce-root bcast-root kind op datatype refused refused-ahead two-roots"
NET=0
"$B/tools/dfccl-info" -b 2> /dev/null | grep -q 'net transport (UCX) yes' && NET=1

echo "dfccl hostile suite: binaries $B, logs $LOGDIR"
for m in $MODES; do
    collmismatch "mismatch $m, native, shared memory" 3 "$m" -- "$BIN/t_collmismatch"
done
for m in $MODES; do
    if [ "$NET" = 1 ]; then
        collmismatch "mismatch $m, native, UCX" 3 "$m" -x DFCCL_NET=ucx -- "$BIN/t_collmismatch"
    elif selected "mismatch $m, native, UCX"; then
        tried "mismatch $m, native, UCX" "SKIP (no UCX in this build)" skip
    fi
done
# mixed: even ranks "hostA", odd ones "hostB" (the net suite's wrapper, written here)
WRAP=$LOGDIR/hostwrap.sh
printf '#!/bin/sh\nr=${OMPI_COMM_WORLD_RANK:-0}\nif [ $((r %% 2)) -eq 0 ]; then DFCCL_HOST=hostA; else DFCCL_HOST=hostB; fi\nexport DFCCL_HOST\nexec "$@"\n' > "$WRAP"
chmod +x "$WRAP"
for m in count two-roots; do
    [ "$NET" = 1 ] && collmismatch "mismatch $m, native, mixed" 4 "$m" -- "$WRAP" "$BIN/t_collmismatch"
done
if nvidia-smi -L > /dev/null 2>&1; then
    collmismatch "mismatch memkind, native, GPU" 3 memkind -- "$B/test/gpu/t_collmismatch_dev"
elif selected "mismatch memkind, native, GPU"; then
    tried "mismatch memkind, native, GPU" "SKIP (no GPU here: test/gpu/run_gpu_tests.sh runs it)" skip
fi

# through MPI, the default settings: t_sigmismatch's cases on a communicator each
name="mismatches through MPI (t_sigmismatch)"
COMPDIR=$B/ompi_coll_dfccl/.libs
if selected "$name" && [ -f "$COMPDIR/mca_coll_dfccl.so" ]; then
    mkdir -p "$B/test/ompi"
    mpicc -std=gnu11 -O2 -I"$SRC/test/ompi" "$SRC/test/ompi/t_sigmismatch.c" -o "$B/test/ompi/t_sigmismatch" -lm -lpthread 2> "$LOGDIR/cc.err"
    CP=$COMPDIR:$(ompi_info --path pkglibdir 2> /dev/null | sed -e 's/.*: *//')
    log=$LOGDIR/sigmismatch.log
    run_mpi "$log" 120 3 --mca mca_base_component_path "$CP" -x LD_LIBRARY_PATH="$B/.libs" \
        --mca coll_dfccl_host_buffers 1 -- "$B/test/ompi/t_sigmismatch" 10
    judge "$log" 3
    [ "$OUTCOME" = ok ] && WHAT=$(grep -m1 -o 'OK t_sigmismatch: .*' "$log" | cut -c4-)
    tried "$name" "$WHAT" "$OUTCOME"
    if [ "$OUTCOME" = ok ]; then pass "$name"; else fail "$name" "$WHAT; log $log"; fi
elif selected "$name"; then
    tried "$name" "SKIP (no component built)" skip
fi

# hcase NAME NP TIMEOUT PATTERN [mpirun args...] -- PROGRAM [args...]: PROGRAM (from BIN
# unless a path) checks the case itself and ends with an OK line; what it gave is its
# lines matching PATTERN (at least HNEED of them: 1 unless set, the ranks where each must
# say it)
hcase() {
    local name=$1 np=$2 tmo=$3 pat=$4
    shift 4
    selected "$name" || return 0
    local a prog= after=0
    for a in "$@"; do # the program: the word after "--" (run_mpi takes it from BIN without a slash)
        [ "$after" = 1 ] && prog=$a && break
        [ "$a" = -- ] && after=1
    done
    case "$prog" in */*) ;; *) prog=$BIN/$prog ;; esac
    if [ ! -x "$prog" ]; then
        tried "$name" "SKIP (no $prog)" skip
        return 0
    fi
    local log=$LOGDIR/${name//[^A-Za-z0-9]/_}.log n
    run_mpi "$log" "$tmo" "$np" "$@"
    judge "$log" "$np"
    if [ "$OUTCOME" = ok ]; then
        n=$(grep -cE "$pat" "$log")
        WHAT=$(grep -E "$pat" "$log" | sed -e 's/^ *case: //' -e 's/^\[dfccl [0-9]*\] //' | sort -u | head -n 2 |
            cut -c1-260 | paste -sd'|' | sed 's/|/ | /g')
        if [ "$n" -lt "${HNEED:-1}" ]; then
            OUTCOME=wrong WHAT="$n lines matching '$pat', ${HNEED:-1} expected: ${WHAT:-nothing said}"
        fi
    fi
    tried "$name" "$WHAT" "$OUTCOME"
    if [ "$OUTCOME" = ok ]; then pass "$name"; else fail "$name" "$WHAT; log $log"; fi
}

# fcase NAME FUNCTION: a case of files_cases.sh (the MPI suite runs them too); what it
# gave is its PASS or FAIL line
fcase() {
    local name=$1 func=$2 out line
    selected "$name" || return 0
    out=$(FILTER= "$func" 2>&1)
    line=$(grep -m1 -E '^(PASS|FAIL): ' <<< "$out" | cut -c1-300)
    if [[ "$line" == PASS:*skipped* ]]; then
        tried "$name" "SKIP (${line#PASS: })" skip
        return 0
    elif [[ "$line" == PASS:* ]]; then
        OUTCOME=ok WHAT=${line#PASS: }
    elif [[ "$line" == *"timed out"* ]]; then
        OUTCOME=hang WHAT=${line#FAIL: }
    else
        OUTCOME=wrong WHAT=${line#FAIL: }
        WHAT=${WHAT:-nothing said}
    fi
    tried "$name" "$WHAT" "$OUTCOME"
    if [ "$OUTCOME" = ok ]; then pass "$name"; else fail "$name" "$WHAT"; fi
}

# 1: a bad value on one rank fails every rank alike, naming that rank and value
hcase "bad DFCCL_SLOTS=abc on the last rank, native" 3 60 '^t_mismatch: .*refused on 3 ranks' -- \
    t_mismatch DFCCL_SLOTS 2 abc --refused
hcase "bad DFCCL_CHUNK_SIZE=-1 on the last rank, native" 2 60 '^t_mismatch: .*refused on 2 ranks' -- \
    t_mismatch DFCCL_CHUNK_SIZE 65536 -1 --refused
if "$B/tools/dfccl-info" -b 2> /dev/null | grep -q 'GPU backend (CUDA) yes'; then
    hcase "the GPU backend off on the last rank only" 2 60 '^t_mismatch: .*refused on 2 ranks' -- \
        t_mismatch DFCCL_GPU 1 0 --refused --refused-code usage
fi
# 3: the wait on a communicator a peer destroyed ends with an error naming it
for m in never pending; do
    hcase "a peer destroys the communicator, its collective $m submitted" 3 60 "^t_left $m: wait ended" -- t_left "$m"
done
# 4, 11: request handles, and the reasons given for a huge count and a wrong nranks
hcase "request handles: a copy of a finished one, one twice in dfcclWaitAll" 2 60 \
    '^case: dfccl(Wait\(&copy\)|WaitAll\(3, twice\))' -- t_badinput
hcase "reasons: a 2^40 count, nranks larger than the processes" 3 60 \
    '^case: dfcclAllReduce\(sb, rb, huge|^case: dfcclCommInit\(&x, P \+ 1' -- t_badinput
# 5: stray active messages at a rank's UCX worker are dropped
if [ "$NET" = 1 ]; then
    hcase "stray UCX active messages" 2 60 '^t_netstray: ' -x DFCCL_NET=ucx -- "$B/test/net/t_netstray"
elif selected "stray UCX active messages"; then
    tried "stray UCX active messages" "SKIP (no UCX in this build)" skip
fi
# 6, 9: files another user controls (files_cases.sh)
fcase "20,000 dfccl-named files of another user in /dev/shm" sweep_bound_case
fcase "DFCCL_DEBUG_FILE at a symbolic link, another user's file" debug_file_safety_case
# 7: a failed first init fixes nothing
for m in env bootstrap shape; do
    hcase "a failed first dfcclCommInit ($m), then a good one" 3 60 '^case: (next init|a later init)' -- t_firstfail "$m"
done
# 8, 10, and 1 through MPI: the component (the programs of test/ompi)
if [ -f "$COMPDIR/mca_coll_dfccl.so" ]; then
    for t in t_nb t_alone t_nomem; do
        [ -x "$B/test/ompi/$t" ] || mpicc -std=gnu11 -O2 -I"$SRC/test/ompi" "$SRC/test/ompi/$t.c" -o "$B/test/ompi/$t" \
            -lm -lpthread 2> "$LOGDIR/cc.err"
    done
    CP=$COMPDIR:$(ompi_info --path pkglibdir 2> /dev/null | sed -e 's/.*: *//')
    MCA=(--mca mca_base_component_path "$CP" -x LD_LIBRARY_PATH="$B/.libs" --mca coll_dfccl_host_buffers 1)
    for kv in "oneshot_max abc" "slots -1" "channels banana"; do
        read -r k v <<< "$kv"
        HNEED=2 hcase "--mca coll_dfccl_$k $v" 2 60 "MCA parameter coll_dfccl_$k=$v: expected" "${MCA[@]}" \
            --mca coll_dfccl_verbose 2 --mca "coll_dfccl_$k" "$v" -- "$B/test/ompi/t_nb" --rounds 1
    done
    HNEED=2 hcase "--mca coll_dfccl_chanels 2 (a misspelled name)" 2 60 'coll_dfccl_chanels is not a dfccl MCA parameter' \
        "${MCA[@]}" --mca coll_dfccl_verbose 2 --mca coll_dfccl_chanels 2 -- "$B/test/ompi/t_nb" --rounds 1
    printf '#!/bin/sh\n[ "${OMPI_COMM_WORLD_RANK:-0}" = "$((${OMPI_COMM_WORLD_SIZE:-1} - 1))" ] && export DFCCL_SLOTS=abc\nexec "$@"\n' \
        > "$LOGDIR/lastrank.sh"
    chmod +x "$LOGDIR/lastrank.sh"
    HNEED=3 hcase "bad DFCCL_SLOTS=abc on the last rank, through MPI" 3 60 \
        'no engine communicator for MPI_COMM_WORLD.*rank 2 of 3 cannot create the communicator.*DFCCL_SLOTS=abc' \
        "${MCA[@]}" -- "$LOGDIR/lastrank.sh" "$B/test/ompi/t_nb" --rounds 2
    hcase "--mca coll dfccl alone on an intercommunicator" 2 60 'does not serve intercommunicators' \
        "${MCA[@]}" --mca coll dfccl -- "$B/test/ompi/t_alone" --inter
    HNEED=2 hcase "one rank out of memory for an in-place MPI_Alltoallv's temporary, through MPI" 3 60 \
        'rank 2 refused its call \(its MPI_Alltoallv failed before the engine call: no memory' \
        "${MCA[@]}" -- "$B/test/ompi/t_nomem" alltoallv-inplace
else
    for n in "--mca coll_dfccl_oneshot_max abc" "--mca coll_dfccl_slots -1" "--mca coll_dfccl_channels banana" \
        "--mca coll_dfccl_chanels 2 (a misspelled name)" "bad DFCCL_SLOTS=abc on the last rank, through MPI" \
        "--mca coll dfccl alone on an intercommunicator" \
        "one rank out of memory for an in-place MPI_Alltoallv's temporary, through MPI"; do
        selected "$n" && tried "$n" "SKIP (no component built)" skip
    done
fi

total=0 summary=
for k in ok skip wrong hang crash; do
    total=$((total + ${GAVE_COUNT[$k]:-0}))
    summary+=" ${GAVE_COUNT[$k]:-0} $k,"
done
echo "hostile: $total cases tried:${summary%,} (ok: the error each case must give; wrong: another result)"
finish

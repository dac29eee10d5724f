#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# run_demo.sh DEMO_BINARY
#
# Runs the deadlock demo on 4 ranks twice:
#   1. with preemption (DFCCL_PREEMPT=1): every collective must complete;
#   2. without preemption (DFCCL_PREEMPT=0): the ranks must deadlock; the demo's
#      own watchdog (--deadline 5) stops it, and `timeout` guards the watchdog.
# Exits 0 when run 1 completed and run 2 hung, non-zero otherwise.
#
# Run 2 ends the way a deadlocked MPI job ends: the watchdog exits one rank, the others
# report that peer as dead (dfccl's ERROR lines) and mpirun prints its abort notice. That
# is the expected outcome here, so only the demo's own lines are shown, with one line
# counting the rest; the whole output stays in a file (its path is printed).
#
# Environment: MPIRUN (default mpirun), NP (default 4),
#              MPIRUN_ARGS (default "--allow-run-as-root --oversubscribe --mca btl self,vader"),
#              DEADLINE (default 5), GUARD (timeout of each run in s, default 60).
set -u

if [ $# -lt 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 DEMO_BINARY   (path to the built deadlock_demo)" >&2
    exit 2
fi
BIN=$(readlink -f "$1")
MPIRUN=${MPIRUN:-mpirun}
NP=${NP:-4}
MPIRUN_ARGS=${MPIRUN_ARGS:---allow-run-as-root --oversubscribe --mca btl self,vader}
DEADLINE=${DEADLINE:-5}
GUARD=${GUARD:-60}

# Open MPI: forward the variable explicitly (harmless on one host, needed on several).
FORWARD=()
if "$MPIRUN" --version 2>/dev/null | grep -q "Open MPI"; then
    FORWARD=(-x DFCCL_PREEMPT)
fi

LOG1=$(mktemp) LOG2=$(mktemp "${TMPDIR:-/tmp}/dfccl-demo-no-preemption.XXXXXX.log")
trap 'rm -f "$LOG1"' EXIT

# Kill what a killed mpirun may have left behind: processes running this binary.
# The pattern is the binary's absolute path at the start of the command line.
cleanup_orphans() {
    local pat
    pat="^$(printf '%s' "$BIN" | sed 's/[][\.*^$+?(){}|]/\\&/g')( |\$)"
    sleep 1
    if pgrep -f -- "$pat" >/dev/null 2>&1; then
        echo "    (killing leftover demo processes: $(pgrep -f -- "$pat" | tr '\n' ' '))"
        pkill -KILL -f -- "$pat" 2>/dev/null
        sleep 1
    fi
}

# The demo's own lines of a log: without dfccl's log lines ("[dfccl PID] LEVEL ..."),
# Open MPI's notices (boxes between dashed lines) and its "[host:pid]" lines.
demo_lines() {
    awk '/^-+$/ && length($0) >= 20 { box = !box; next } box { next }
         /^\[dfccl [0-9]+\] / || /^\[[^] ]+:[0-9]+\] / { next } { print }' "$1"
}

# $1: preempt value, $2: log, $3: full (print the whole log) or calm (the demo's lines
# and a count of the others), rest: demo arguments. Sets RC and SECS.
run_demo() {
    local preempt=$1 log=$2 show=$3
    shift 3
    local t0 t1
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086  # MPIRUN_ARGS is a list of words
    DFCCL_PREEMPT=$preempt timeout -s KILL "$GUARD" \
        "$MPIRUN" -np "$NP" $MPIRUN_ARGS "${FORWARD[@]}" "$BIN" "$@" >"$log" 2>&1
    RC=$?
    t1=$(date +%s.%N)
    SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    if [ "$show" = full ]; then
        sed 's/^/    | /' "$log"
        return
    fi
    demo_lines "$log" | sed 's/^/    | /'
    local nerr nother
    nerr=$(grep -c '^\[dfccl [0-9]*\] ERROR' "$log")
    nother=$(($(wc -l < "$log") - $(demo_lines "$log" | wc -l) - nerr))
    echo "    (then, as expected once the watchdog has ended one rank: $nerr dfccl error lines from"
    echo "    the ranks still waiting, saying that peer died, and $nother lines of mpirun's notice"
    echo "    that the job was stopped; the whole output is in $log)"
}

echo "=== 1/2: $NP ranks, chaos order, WITH preemption (DFCCL_PREEMPT=1) ==="
run_demo 1 "$LOG1" full
RC1=$RC SECS1=$SECS
cleanup_orphans
ok1=0
if [ "$RC1" -eq 0 ] && grep -q "results correct" "$LOG1"; then
    ok1=1
fi
echo

echo "=== 2/2: same program, WITHOUT preemption (DFCCL_PREEMPT=0, --deadline $DEADLINE) ==="
run_demo 0 "$LOG2" calm --deadline "$DEADLINE"
RC2=$RC SECS2=$SECS
cleanup_orphans
hung=0 watchdog=0
if grep -q "deadlocked" "$LOG2" || [ "$RC2" -eq 3 ]; then # 3: the demo's watchdog
    hung=1 watchdog=1
elif [ "$RC2" -eq 137 ] || [ "$RC2" -eq 124 ]; then
    hung=1 # the watchdog did not fire, the timeout guard did
fi
echo

echo "=== what happened ==="
if [ $ok1 -eq 1 ]; then
    line=$(grep "completed on every rank" "$LOG1" | head -1 | sed 's/^dfccl: //')
    pre=$(awk '/total preemptions/ { print $3 }' "$LOG1" | tr -d ,)
    echo "with preemption: completed: $line;"
    echo "    dfccl preempted stalled collectives ${pre:-?} times (summed over ranks)"
    echo "    and ran the others, so the different orders did not matter (${SECS1} s)."
elif [ "$RC1" -eq 137 ]; then
    echo "with preemption: FAILED: still running after ${GUARD} s, killed by the timeout guard."
else
    echo "with preemption: FAILED (exit status $RC1); see the output above."
fi
if [ $watchdog -eq 1 ]; then
    echo "without preemption: hung as expected; stopped by the watchdog after ${DEADLINE} s"
    echo "    (each rank waited in the collective it submitted first for ranks that were"
    echo "    waiting in another one; total ${SECS2} s including start-up)."
elif [ $hung -eq 1 ]; then
    echo "without preemption: hung as expected, but the watchdog did not fire;"
    echo "    killed by the timeout guard after ${GUARD} s."
elif [ "$RC2" -eq 0 ]; then
    echo "without preemption: UNEXPECTED: it completed, no deadlock happened."
else
    echo "without preemption: UNEXPECTED: failed with exit status $RC2 (not a hang); see above."
fi

if [ $ok1 -eq 1 ] && [ $hung -eq 1 ]; then
    echo "demo OK"
    exit 0
fi
echo "demo FAILED"
exit 1

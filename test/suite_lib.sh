#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Helpers shared by the suites (test/mpi/run_suite.sh, test/net/run_net_suite.sh,
# test/asan_suite.sh, test/hostile_suite.sh, test/ompi/run_ompi_suite.sh,
# test/install_check.sh, test/ucx_wheel_check.sh, test/slurm_check.sh,
# test/fuzz/run_fuzz_suite.sh, test/gpu/run_gpu_tests.sh, test/gpu/run_multigpu.sh):
# sourced, not run. Every suite counts its cases with pass and fail (skip where a case
# cannot run) and ends with finish. For run_mpi and kill_orphans the caller sets MPIRUN
# (an array), BIN (directory of the test programs), ORPHAN_DIRS (directories whose t_*
# programs are killed when a job leaves them behind); FILTER for selected.
npass=${npass:-0}
nfail=${nfail:-0}
nskip=${nskip:-0}
[ -n "${FAILED+x}" ] || FAILED=()

# Kill, by pid, every process still running a test program of ORPHAN_DIRS (ranks
# orphaned by a killed mpirun).
kill_orphans() {
    local d pid exe dir left=0
    for d in /proc/[0-9]*; do
        pid=${d#/proc/}
        exe=$(readlink "$d/exe" 2>/dev/null) || continue
        for dir in "${ORPHAN_DIRS[@]}"; do
            case "$exe" in
            "$dir"/t_* | "$dir"/.libs/t_* | "$dir"/.libs/lt-t_*)
                kill -KILL "$pid" 2>/dev/null && left=$((left + 1))
                ;;
            esac
        done
    done
    if [ "$left" -gt 0 ]; then
        sleep 0.5
        echo "  (killed $left leftover test processes)" >&2
    fi
}

# dfccl segments in /dev/shm, one name a line
shm_list() {
    local f
    for f in /dev/shm/dfccl-*; do
        [ -e "$f" ] && echo "${f#/dev/shm/}"
    done
    return 0
}

# Open MPI shared-memory BTL segments
vader_list() {
    local f
    for f in /dev/shm/vader_segment.*; do
        [ -e "$f" ] && echo "${f#/dev/shm/}"
    done
    return 0
}

pid_alive() { kill -0 "$1" 2>/dev/null; }

# names of segments in $2 (a list) not in $1 (a list) whose owner pid is dead
shm_leaked_since() {
    local before="$1" after="$2" name pid
    for name in $after; do
        if ! grep -qxF "$name" <<< "$before"; then
            pid=${name#dfccl-}
            pid=${pid%%-*}
            if ! pid_alive "$pid"; then
                echo "$name"
            fi
        fi
    done
}

selected() { [ -z "$FILTER" ] || [[ "$1" =~ $FILTER ]]; }

pass() {
    echo "PASS: $1"
    npass=$((npass + 1))
}

# fail NAME [REASON [LOG]]: "FAIL: NAME (REASON)" ("FAIL: NAME" without a reason); the
# tail of LOG with SUITE_VERBOSE=1; then the suite's own on_fail, where it defines one
# (called with the same arguments).
fail() {
    if [ $# -ge 2 ]; then
        echo "FAIL: $1 ($2)"
    else
        echo "FAIL: $1"
    fi
    nfail=$((nfail + 1))
    FAILED+=("$1")
    if [ "${SUITE_VERBOSE:-0}" = 1 ] && [ -n "${3:-}" ] && [ -f "$3" ]; then
        tail -n 25 "$3" | sed 's/^/    | /'
    fi
    if declare -F on_fail > /dev/null; then
        on_fail "$@"
    fi
    return 0
}

# skip NAME: "SKIP: NAME", a case that cannot run here (not counted as passed or failed)
skip() {
    echo "SKIP: $1"
    nskip=$((nskip + 1))
}

# relay_verdicts < OUTPUT: a driver's output (test/fuzz/fuzz_run.py) printed as it is, its
# "PASS: ..." / "FAIL: ..." lines counted through pass and fail; non-zero without any.
relay_verdicts() {
    local line n0=$((npass + nfail))
    while IFS= read -r line || [ -n "$line" ]; do
        case "$line" in
        "PASS: "*) pass "${line#PASS: }" ;;
        "FAIL: "*) fail "${line#FAIL: }" ;;
        *) printf '%s\n' "$line" ;;
        esac
    done
    [ $((npass + nfail)) -gt "$n0" ]
}

# The suite's last lines: "skipped: N" where skip was called, "N passed, N failed", then
# the failed cases' names; exits non-zero when any failed.
finish() {
    [ "$nskip" -gt 0 ] && echo "skipped: $nskip (see the SKIP lines)"
    echo "$npass passed, $nfail failed"
    if [ "$nfail" -gt 0 ]; then
        for f in "${FAILED[@]}"; do echo "  failed: $f"; done
        exit 1
    fi
    exit 0
}

# A short reason from a log: the first mismatch / failure / hang line, then the first
# error; the engine's INFO, WARN, TRACE and DEBUG lines never (an INFO line may say
# "error-reporting").
reason_of() {
    local log=$1 line
    line=$(grep -v -E '\] (INFO|WARN|TRACE|DEBUG) ' "$log" 2>/dev/null | grep -m1 -E 'MISMATCH|FAIL|HANG:|Segmentation|signal' | cut -c1-300)
    [ -n "$line" ] || line=$(grep -v -E '\] (INFO|WARN|TRACE|DEBUG) ' "$log" 2>/dev/null | grep -m1 -E 'ERROR|error' | cut -c1-300)
    echo "${line:-see $log}"
}

# run_mpi LOG TIMEOUT NP [mpirun args...] -- PROGRAM [program args...]; sets RC.
# PROGRAM without a slash is taken from BIN.
run_mpi() {
    local log=$1 tmo=$2 np=$3
    shift 3
    local margs=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        margs+=("$1")
        shift
    done
    shift
    local prog=$1
    shift
    case "$prog" in */*) ;; *) prog=$BIN/$prog ;; esac
    timeout -s TERM -k 10 "$tmo" "${MPIRUN[@]}" "${margs[@]}" -np "$np" "$prog" "$@" > "$log" 2>&1 < /dev/null
    RC=$?
    kill_orphans
}

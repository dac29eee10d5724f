#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Two cases about files another user controls, sourced by test/mpi/run_suite.sh and by
# test/hostile_suite.sh (issue 30, items 6 and 9): the stale-segment sweep against
# 20,000 files of another user in /dev/shm, and DFCCL_DEBUG_FILE at a symbolic link or
# at another user's file. They need what both suites set: BIN (the MPI test programs),
# LOGDIR, MPIRUN, and suite_lib.sh's run_mpi, selected, pass, fail, reason_of and
# kill_orphans.
# shellcheck shell=bash disable=SC2154 # BIN, LOGDIR, MPIRUN, RC: set by the caller

# The sweep of stale segments is bounded: 20,000 dfccl-named files of another user in
# /dev/shm (a private tmpfs in a mount namespace of its own, so nobody else's /dev/shm
# is touched; root only, else skipped) and 20 communicators created and destroyed in
# turn: each process sweeps once (one "stale-segment sweep" line each at info), leaves
# the other user's files alone, and the 20 rounds take under SUITE_SWEEP_MAX_S (5) s
# (11.7 s when every init read all of /dev/shm and /proc for each name).
sweep_bound_case() {
    local id="shm_sweep_bounded[20000 files of another user, 20 inits] np=2"
    selected "$id" || return 0
    local log="$LOGDIR/shm_sweep_bounded_np2.log" prog="$BIN/../net/t_netkill"
    if [ "$(id -u)" != 0 ] || ! unshare --mount --propagation private true 2>/dev/null; then
        pass "$id (skipped: needs root and unshare --mount)"
        return 0
    fi
    if [ ! -x "$prog" ]; then
        fail "$id" "missing program $prog"
        return 0
    fi
    local script="$LOGDIR/sweep_bound.sh"
    cat > "$script" << 'EOS'
#!/bin/bash
mount -t tmpfs -o size=256m tmpfs /dev/shm || exit 99
ns=$(stat -L -c %i /proc/self/ns/pid)
start=$(sed 's/.*) //' /proc/$$/stat | awk '{print $20}')
python3 - "$$" "$start" "$ns" << 'PY' || exit 98
import os, sys
pid, start, ns = sys.argv[1:4]
for i in range(20000):
    fd = os.open("/dev/shm/dfccl-%s-%s-%s-%032x" % (pid, start, ns, i), os.O_CREAT | os.O_WRONLY, 0o600)
    os.fchown(fd, 65534, 65534)
    os.close(fd)
PY
t0=$(date +%s%N)
"$@"
rc=$?
t1=$(date +%s%N)
echo "sweep_bound: rounds took $(((t1 - t0) / 1000000)) ms; $(ls /dev/shm | grep -c '^dfccl-') dfccl-named files left"
exit $rc
EOS
    chmod +x "$script"
    local mpirun_unshared=(unshare --mount --propagation private "$script" "${MPIRUN[@]}")
    timeout -s TERM -k 10 120 "${mpirun_unshared[@]}" -np 2 -x DFCCL_NET=auto -x DFCCL_LOG_LEVEL=info \
        "$prog" --teardown 20 > "$log" 2>&1 < /dev/null
    local rc=$? ms left sweeps max_ms=$((${SUITE_SWEEP_MAX_S:-5} * 1000))
    kill_orphans
    ms=$(sed -n 's/^sweep_bound: rounds took \([0-9]*\) ms.*/\1/p' "$log")
    left=$(sed -n 's/.*ms; \([0-9]*\) dfccl-named files left/\1/p' "$log")
    sweeps=$(grep -c 'stale-segment sweep of /dev/shm' "$log")
    if [ "$rc" -eq 98 ] || [ "$rc" -eq 99 ]; then
        pass "$id (skipped: could not set up the private /dev/shm, exit $rc)"
    elif [ "$rc" -ne 0 ] || ! grep -qx OK "$log"; then
        fail "$id" "exit $rc: $(reason_of "$log"); log $log" "$log"
    elif [ "$sweeps" != 2 ]; then
        fail "$id" "$sweeps 'stale-segment sweep' lines, expected 2 (once per process); log $log" "$log"
    elif [ "${left:-0}" -lt 20000 ]; then
        fail "$id" "only ${left:-0} of the other user's 20000 files left; log $log" "$log"
    elif [ -z "$ms" ] || [ "$ms" -gt "$max_ms" ]; then
        fail "$id" "20 rounds took ${ms:-?} ms, more than $max_ms; log $log" "$log"
    else
        pass "$id (${ms} ms; $(grep -m1 -o '[0-9]* entries looked at.*' "$log"))"
    fi
}
# Log files are not followed through symbolic links nor opened when another user owns
# them (a local user could point DFCCL_DEBUG_FILE's known name at a file of ours): a
# warning naming why, the lines stay on stderr, the target is untouched; a new file is
# created 0600. (DFCCL_TRACE's file goes through the same open: unit test
# trace_refuses_a_symlink.)
debug_file_safety_case() {
    local id="debug_file_safety[symlink, another user's file, mode 0600] np=2"
    selected "$id" || return 0
    local log="$LOGDIR/debug_file_safety.log" dir="$LOGDIR/debug_file_safety" why=
    rm -rf "$dir" && mkdir -p "$dir"
    echo precious > "$dir/victim"
    ln -s "$dir/victim" "$dir/link.log"
    run_mpi "$log.link" 60 2 -x DFCCL_DEBUG=INFO -x DFCCL_DEBUG_FILE="$dir/link.log" -- t_matrix --quick
    echo "case: DFCCL_DEBUG_FILE at a symbolic link -> exit $RC: $(grep -m1 'DFCCL_DEBUG_FILE' "$log.link")"
    { [ "$RC" -eq 0 ] && [ "$(cat "$dir/victim")" = precious ] &&
        [ "$(grep -c 'DFCCL_DEBUG_FILE=.*is a symbolic link.*logging to stderr' "$log.link")" -eq 2 ] &&
        grep -q 'INFO comm.c' "$log.link"; } ||
        why="$why a symbolic link was followed, or no warning, or no lines on stderr;"
    if [ "$(id -u)" = 0 ]; then
        : > "$dir/other.log"
        chown 65534 "$dir/other.log"
        run_mpi "$log.other" 60 2 -x DFCCL_DEBUG=INFO -x DFCCL_DEBUG_FILE="$dir/other.log" -- t_matrix --quick
        echo "case: DFCCL_DEBUG_FILE at another user's file -> exit $RC: $(grep -m1 'DFCCL_DEBUG_FILE' "$log.other")"
        { [ "$RC" -eq 0 ] && [ ! -s "$dir/other.log" ] &&
            [ "$(grep -c 'DFCCL_DEBUG_FILE=.*belongs to uid 65534.*logging to stderr' "$log.other")" -eq 2 ]; } ||
            why="$why another user's file was written, or no warning;"
    fi
    run_mpi "$log.new" 60 2 -x DFCCL_DEBUG=INFO -x DFCCL_DEBUG_FILE="$dir/new.%p.log" -- t_matrix --quick
    local files=("$dir"/new.*.log) modes
    modes=$(stat -c %a "${files[@]}" 2>/dev/null | sort -u | tr '\n' ' ')
    echo "case: DFCCL_DEBUG_FILE at a new name -> exit $RC: ${#files[@]} files, mode $modes"
    { [ "$RC" -eq 0 ] && [ "${#files[@]}" -eq 2 ] && [ "$modes" = "600 " ]; } ||
        why="$why new log files: ${#files[@]}, mode $modes (expected 2, 600);"
    if [ -z "$why" ]; then
        pass "$id (refused with a warning, target untouched; new files 0600)"
    else
        fail "$id" "$why logs $log.*" "$log.link"
    fi
}

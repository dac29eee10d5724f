#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The Open MPI component suite: plain MPI programs run with mca_coll_dfccl loaded
# from the build tree. No GPU is needed: coll_dfccl_host_buffers=1 sends host
# buffers to the engine's CPU backend, coll_dfccl_fake_device=1 runs the device
# staging paths on host memory, coll_dfccl_fake_device=2 the GPU daemon's path (host
# buffers taken for device ones, handed to the engine as they are).
#
#   test/ompi/run_ompi_suite.sh BUILD_DIR [--quick]
#
# Prints one "PASS: name np=N" or "FAIL: name np=N (why)" line per run, then
# "N passed, N failed"; exits non-zero if anything failed. Every run is under
# `timeout`. Programs missing from BUILD_DIR/test/ompi are compiled with mpicc.
set -u

BUILD=${1:?usage: run_ompi_suite.sh BUILD_DIR [--quick]}
BUILD=$(cd "$BUILD" && pwd)
QUICK=${2:-}
SRC=$(cd "$(dirname "$0")" && pwd)
BIN=$BUILD/test/ompi
MPICC=${MPICC:-mpicc}
MPIRUN=${MPIRUN:-mpirun}
OMPI_INFO=${OMPI_INFO:-ompi_info}

COMPDIR=$BUILD/ompi_coll_dfccl/.libs
if [ ! -f "$COMPDIR/mca_coll_dfccl.so" ]; then
    echo "FAIL: setup ($COMPDIR/mca_coll_dfccl.so not built: run make in $BUILD)"
    echo "0 passed, 1 failed"
    exit 1
fi
SYSDIR=$($OMPI_INFO --path pkglibdir 2>/dev/null | sed -e 's/.*: *//')
CPATH_MCA=$COMPDIR:$SYSDIR
LIBDIR=$BUILD/.libs

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dfccl-ompi-suite.XXXXXX")
# vader's segments of runs we kill on purpose (hang tests) stay in here, not in /dev/shm
mkdir -p "$WORK/vader"
trap 'rm -rf "$WORK"' EXIT

ROOT_FLAGS=()
[ "$(id -u)" = 0 ] && ROOT_FLAGS=(--allow-run-as-root)

# shellcheck disable=SC2034 # read by suite_lib.sh
npass=0 nfail=0 FAILED=()
# pass, fail, finish
# shellcheck source=../suite_lib.sh
. "$SRC/../suite_lib.sh"
# after a FAIL line (suite_lib.sh's fail): the run's last lines of output
on_fail() {
    if [ -f "$WORK/out" ]; then
        echo "---- last lines of output ----"
        grep -v 'help message\|help_aggregate' "$WORK/out" | tail -15
        echo "------------------------------"
    fi
}

# ---------------------------------------------------------------- build the programs
PROGS="t_colls t_fallback t_nb t_chaos t_commfree t_check t_sigmismatch t_allcolls t_teardown t_alone t_inter t_peerloss t_nomem t_reqoom"
mkdir -p "$BIN"
for p in $PROGS; do
    if [ ! -x "$BIN/$p" ] || [ "$SRC/$p.c" -nt "$BIN/$p" ] || [ "$SRC/ompi_test.h" -nt "$BIN/$p" ]; then
        if ! $MPICC -std=gnu11 -O2 -Wall -Wextra -I"$SRC" "$SRC/$p.c" -o "$BIN/$p" -lm -lpthread 2>"$WORK/cc.err"; then
            cat "$WORK/cc.err"
            fail "build $p" "mpicc failed"
        fi
    fi
done

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
# device-buffer variants (GPU machines): t_device, and with -DOT_DEVICE the collective
# matrix (every buffer a device copy), the chaos order and the communicator churn
if [ -f "$CUDA_HOME/include/cuda_runtime.h" ]; then
    for spec in t_device:t_device t_colls_dev:t_colls t_chaos_dev:t_chaos t_commfree_dev:t_commfree t_allcolls_dev:t_allcolls t_inter_dev:t_inter t_sigmismatch_dev:t_sigmismatch; do
        exe=${spec%%:*} src=${spec#*:}
        def=-DOT_DEVICE
        [ "$exe" = t_device ] && def=
        if [ ! -x "$BIN/$exe" ] || [ "$SRC/$src.c" -nt "$BIN/$exe" ]; then
            $MPICC -std=gnu11 -O2 -Wall -Wextra $def -I"$SRC" -I"$CUDA_HOME/include" "$SRC/$src.c" -o "$BIN/$exe" \
                -L"$CUDA_HOME/lib64" -lcudart_static -ldl -lrt -lpthread -lm 2>"$WORK/cc.err" || cat "$WORK/cc.err"
        fi
    done
fi

# mpirun with the component loaded from the build tree; MCA arguments then program
# run NAME NP TIMEOUT [--mca k v ...] [-x VAR=v] -- PROGRAM ARGS
run() {
    local tmo=$1 np=$2
    shift 2
    local mca=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do mca+=("$1"); shift; done
    shift
    local prog=$1
    shift
    case $prog in /*) ;; *) prog=$BIN/$prog ;; esac
    timeout -k 5 "$tmo" "${RUN_PREFIX[@]}" $MPIRUN "${ROOT_FLAGS[@]}" --oversubscribe -np "$np" \
        --mca btl self,vader --mca btl_vader_backing_directory "$WORK/vader" \
        --mca mca_base_component_path "$CPATH_MCA" -x LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        ${CUDA_MPS_PIPE_DIRECTORY:+-x CUDA_MPS_PIPE_DIRECTORY} "${mca[@]}" "$prog" "$@" >"$WORK/out" 2>&1
}

# expect success and an "OK" line
check_ok() {
    local name=$1 rc=$2
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        fail "$name" "timed out"
    elif [ "$rc" != 0 ]; then
        fail "$name" "exit $rc"
    elif ! grep -q '^OK ' "$WORK/out"; then
        fail "$name" "no OK line"
    else
        pass "$name"
        grep '^OK \|^note:' "$WORK/out" | sed 's/^/    /'
    fi
}

# expect success, an "OK" line, and calls on the engine with KIND (host|device) memory
# (verbose lines of another rank may share a line with the OK: no ^ anchor)
check_engine() {
    local name=$1 rc=$2 kind=$3
    if [ "$rc" = 0 ] && grep -q 'OK t_' "$WORK/out" && grep -q -- "-> engine ($kind memory" "$WORK/out"; then
        pass "$name"
        grep -o 'OK t_.*' "$WORK/out" | sed 's/^/    /'
    else
        fail "$name" "rc $rc, $(grep -c -- "-> engine ($kind memory" "$WORK/out") calls on the engine"
    fi
}

# expect success and a line matching each PATTERN (grep; the first is usually the
# program's OK line, unanchored: verbose lines of another rank may share its line)
check_lines() {
    local name=$1 rc=$2 p
    shift 2
    if [ "$rc" != 0 ]; then
        fail "$name" "rc $rc"
        return
    fi
    for p in "$@"; do
        if ! grep -q -- "$p" "$WORK/out"; then
            fail "$name" "no line matching '$p'"
            return
        fi
    done
    pass "$name"
    grep -o 'OK t_.*' "$WORK/out" | head -1 | sed 's/^/    /'
}

# expect the watchdog's hang (exit 3) or a timeout
check_hang() {
    local name=$1 rc=$2
    if [ "$rc" = 3 ] || [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        pass "$name hangs (rc $rc)"
        grep '^HANG' "$WORK/out" | head -1 | sed 's/^/    /'
    else
        fail "$name hangs" "rc $rc: it did not hang"
    fi
}

RUN_PREFIX=() # a command the run goes through (a private mount namespace, ...)
HB=(--mca coll_dfccl_host_buffers 1)
FAKE=(--mca coll_dfccl_fake_device 1)
FAKE_DIRECT=(--mca coll_dfccl_fake_device 2)

# DEVICE_ONLY=1 (GPU machines): only the device-buffer part at the end
if [ -z "${DEVICE_ONLY:-}" ]; then
# ---------------------------------------------------------------- the component loads
if OMPI_MCA_mca_base_component_path=$CPATH_MCA $OMPI_INFO 2>&1 | grep -q 'MCA coll: dfccl'; then
    pass "ompi_info lists the component"
else
    fail "ompi_info lists the component" "no 'MCA coll: dfccl' line"
fi
OMPI_MCA_mca_base_component_path=$CPATH_MCA $OMPI_INFO --param coll dfccl --level 9 >"$WORK/info" 2>&1
missing=""
for p in priority verbose enable host_buffers check eager device_sync fake_device preempt threshold_base_ns threshold_growth \
    threshold_max_ns head_factor slots channels cpu_threads net_threads net_piece chunk_size fifo_depth oneshot_max ll_max stall_report timeout net \
    gpu_channels gpu_threads gpu_chunk_size gpu_net_chunk_size gpu_idle_quit gpu_stall_quit gpu_trace; do
    grep -q "parameter \"coll_dfccl_$p\"" "$WORK/info" || missing="$missing $p"
done
if [ -z "$missing" ]; then
    pass "ompi_info --param coll dfccl --level 9 lists every parameter ($(grep -c 'parameter "coll_dfccl_' "$WORK/info"))"
else
    fail "ompi_info --param coll dfccl --level 9" "missing:$missing"
fi

# ---------------------------------------------------------------- pass-through
# host buffers with host_buffers=0: the previous module, nothing on the engine
run 120 2 --mca coll_dfccl_verbose 3 -- t_colls --quick --comms world,dup
rc=$?
# (verbose lines of the other rank may share a line with the OK: no ^ anchor here)
if [ $rc = 0 ] && grep -q 'OK t_colls' "$WORK/out" && ! grep -q -- '-> engine' "$WORK/out" &&
    grep -q -- '-> previous module (host memory' "$WORK/out" && ! grep -qi 'error' "$WORK/out" &&
    [ "$(grep -c "WARNING: host buffers go to Open MPI's own collectives" "$WORK/out")" = 1 ]; then
    pass "pass-through: host buffers, host_buffers=0, nothing on the engine, said once for the job np=2"
    echo "    $(grep -c -- '-> previous module (host memory' "$WORK/out") calls to the previous module, $(grep -c -- '-> engine' "$WORK/out") on the engine"
else
    fail "pass-through: host buffers, host_buffers=0 np=2" "rc $rc, $(grep -c -- '-> engine' "$WORK/out") engine calls"
    grep -i -m3 'error' "$WORK/out" | sed 's/^/    /'
fi
run 120 3 -- t_nb --rounds 5
check_ok "pass-through: non-blocking host buffers np=3" $?
run 60 2 --mca coll_dfccl_enable 0 --mca coll_dfccl_verbose 2 -- t_nb --rounds 2
rc=$?
if [ $rc = 0 ] && ! grep -q 'enabled on' "$WORK/out"; then
    pass "coll_dfccl_enable=0 declines every communicator np=2"
else
    fail "coll_dfccl_enable=0 np=2" "rc $rc or a module was enabled"
fi

# ---------------------------------------------------------------- bad MCA values
# Each malformed coll_dfccl_* value is refused naming the parameter and the value as
# given (Open MPI's own parsing took "abc" for 0 and "-1" for 2^64-1): the component is
# off in that process (no module enabled) and the job runs on the other components. A
# misspelled coll_dfccl_ name is a warning with the closest name; a value with Open
# MPI's k/m/g suffix is taken.
bad_mca() {
    local name=$1 value=$2 expect=$3
    run 60 2 "${HB[@]}" --mca coll_dfccl_verbose 2 --mca "coll_dfccl_$name" "$value" -- t_nb --rounds 1
    local rc=$? said
    said=$(grep -m1 -o "coll_dfccl_$name=.*" "$WORK/out" | cut -c1-160)
    echo "    case: --mca coll_dfccl_$name $value -> rc $rc: ${said:-nothing said}"
    if [ "$rc" = 0 ] && grep -q '^OK ' "$WORK/out" && ! grep -q 'enabled on' "$WORK/out" &&
        [ "$(grep -c "ERROR: MCA parameter coll_dfccl_$name=$value: expected $expect" "$WORK/out")" = 2 ]; then
        pass "coll_dfccl_$name=$value refused by name and value, the component off, the job runs np=2"
    else
        fail "coll_dfccl_$name=$value refused np=2" "rc $rc, or no 'coll_dfccl_$name=$value: expected $expect' on each rank, or a module enabled"
    fi
}
bad_mca oneshot_max abc "a non-negative integer"
bad_mca priority abc "an integer"
bad_mca slots -1 "a non-negative integer"
bad_mca channels banana "a non-negative integer"
bad_mca chunk_size 5000000000000000000000 "a non-negative integer"
bad_mca check banana "0 or 1"
bad_mca net tcp "auto or ucx"
bad_mca fake_device 3 "an integer in \[0, 2\]"
run 60 2 "${HB[@]}" --mca coll_dfccl_verbose 2 --mca coll_dfccl_chanels 2 -- t_nb --rounds 1
rc=$?
echo "    case: --mca coll_dfccl_chanels 2 -> rc $rc: $(grep -m1 -o 'coll_dfccl_chanels is.*' "$WORK/out")"
if [ "$rc" = 0 ] && grep -q 'enabled on' "$WORK/out" &&
    [ "$(grep -c 'WARNING: coll_dfccl_chanels is not a dfccl MCA parameter and is ignored (did you mean coll_dfccl_channels?)' "$WORK/out")" = 2 ]; then
    pass "a misspelled coll_dfccl_ name: a warning naming the closest one, the component on np=2"
else
    fail "a misspelled coll_dfccl_ name np=2" "rc $rc, no warning on each rank, or the component off"
fi
run 60 2 "${HB[@]}" --mca coll_dfccl_verbose 1 --mca coll_dfccl_chunk_size 32k -- t_nb --rounds 1
check_lines "coll_dfccl_chunk_size 32k taken as 32768 np=2" $? 'OK t_nb' 'coll_dfccl_chunk_size=32768: the engine'
# a knob that takes auto: auto (the engine's choice) and a count are taken, a word is not
bad_mca ll_wide_max banana "a non-negative integer up to 1099511627776 (k, m, g: x1024), or auto"
run 60 2 "${HB[@]}" --mca coll_dfccl_verbose 2 --mca coll_dfccl_ll_wide_max auto -- t_nb --rounds 1
check_lines "coll_dfccl_ll_wide_max auto taken np=2" $? 'OK t_nb' 'enabled on'
run 60 2 "${HB[@]}" --mca coll_dfccl_verbose 1 --mca coll_dfccl_ll_wide_max 16k -- t_nb --rounds 1
check_lines "coll_dfccl_ll_wide_max 16k taken as 16384 np=2" $? 'OK t_nb' 'coll_dfccl_ll_wide_max=16384: the engine'
# a DFCCL_* value refused on the last rank only: before, the other ranks waited in the
# engine set-up's first all-gather for it and the job hung at its first collective; now
# every rank's set-up fails alike naming that rank and value, and the calls go to the
# previous module everywhere
cat >"$WORK/lastrank.sh" <<'EOS'
#!/bin/sh
[ "${OMPI_COMM_WORLD_RANK:-0}" = "$((${OMPI_COMM_WORLD_SIZE:-1} - 1))" ] && export DFCCL_SLOTS=abc
exec "$@"
EOS
chmod +x "$WORK/lastrank.sh"
run 60 3 "${HB[@]}" -- "$WORK/lastrank.sh" "$BIN/t_nb" --rounds 2
rc=$?
echo "    case: DFCCL_SLOTS=abc on the last of 3 ranks -> rc $rc: $(grep -m1 -o 'no engine communicator.*' "$WORK/out" | cut -c1-200)"
if [ "$rc" = 0 ] && grep -q '^OK ' "$WORK/out" &&
    [ "$(grep -c 'no engine communicator for MPI_COMM_WORLD.*rank 2 of 3 cannot create the communicator.*DFCCL_SLOTS=abc' "$WORK/out")" = 3 ]; then
    pass "DFCCL_SLOTS=abc on the last rank: every rank's set-up fails naming it, the job runs np=3"
else
    fail "DFCCL_SLOTS=abc on the last rank np=3" "rc $rc (124: the other ranks hung), or not said on each rank"
fi

# dfccl named explicitly with the components it hands calls to
run 60 2 "${HB[@]}" --mca coll dfccl,tuned,libnbc,basic,self -- t_nb --rounds 3
check_ok "--mca coll dfccl,tuned,libnbc,basic,self np=2" $?
# with the default list every slot has another component: none of dfccl's own fallbacks
run 60 2 --mca coll_dfccl_verbose 2 -- t_nb --rounds 1
rc=$?
if [ $rc = 0 ] && grep -q 'enabled on' "$WORK/out" && ! grep -q "dfccl's own fallbacks serve" "$WORK/out"; then
    pass "default component list: dfccl hands everything it does not run to the other components np=2"
else
    fail "default component list np=2" "rc $rc, or dfccl's own fallbacks were installed"
fi

# ---------------------------------------------------------------- dfccl alone
# --mca coll dfccl: dfccl's own fallbacks stand in for the previous module (Open MPI's base
# algorithms for blocking calls, point-to-point schedules for non-blocking ones, persistent
# requests over its MPI_I* calls), on host buffers with the defaults, with host_buffers=1
# and staged (device buffers, emulated)
ALONE=(--mca coll dfccl)
for np in 1 2 3 4 8; do
    run 120 $np "${ALONE[@]}" -- t_alone
    check_ok "dfccl alone: COMM_SELF/world/dup/split, user op and strided non-blocking, persistent, Reduce_local np=$np" $?
    run 120 $np "${ALONE[@]}" -- t_allcolls
    check_ok "dfccl alone: gather(v), scatter(v), allgatherv, alltoallv/w, scan, exscan np=$np" $?
done
for np in 1 3 8; do
    run 120 $np "${ALONE[@]}" -- t_fallback
    check_ok "dfccl alone: user ops, derived datatypes, MAXLOC/MINLOC np=$np" $?
    run 120 $np "${ALONE[@]}" -- t_nb --rounds 3
    check_ok "dfccl alone: non-blocking, 12 outstanding np=$np" $?
done
run 300 1 "${ALONE[@]}" -- t_colls --quick --comms world,dup
check_ok "dfccl alone: collective matrix (quick) np=1" $?
run 300 3 "${ALONE[@]}" -- t_colls --quick --comms world,split
check_ok "dfccl alone: collective matrix (quick) np=3" $?
for np in 3 4; do
    run 120 $np "${ALONE[@]}" "${HB[@]}" -- t_alone
    check_ok "dfccl alone, host_buffers=1: t_alone np=$np" $?
done
run 300 4 "${ALONE[@]}" "${HB[@]}" -- t_colls --quick --comms world
check_ok "dfccl alone, host_buffers=1: collective matrix (quick) np=4" $?
run 120 3 "${ALONE[@]}" "${HB[@]}" -- t_nb --rounds 3
check_ok "dfccl alone, host_buffers=1: non-blocking np=3" $?
for np in 1 4; do
    run 120 $np "${ALONE[@]}" "${FAKE[@]}" --mca coll_dfccl_verbose 3 -- t_allcolls
    check_lines "dfccl alone, staged (device buffers, emulated): every collective through the fallbacks np=$np" $? \
        'OK t_allcolls' \
        'MPI_Iscan on .*-> previous module (staged through host)' \
        'WARNING: MPI_.* on device buffers of .* is staged through host memory'
    [ "$(grep -c 'WARNING: MPI_.* on device buffers of .* is staged through host memory' "$WORK/out")" -le "$np" ] ||
        fail "staged device buffers said once per process np=$np" "$(grep -c 'is staged through host memory' "$WORK/out") lines"
done
for np in 3 8; do
    run 120 $np "${ALONE[@]}" "${FAKE[@]}" -- t_alone
    check_ok "dfccl alone, staged (device buffers, emulated): t_alone np=$np" $?
done
run 120 4 "${ALONE[@]}" "${FAKE[@]}" -- t_fallback
check_ok "dfccl alone, staged (device buffers, emulated): user ops, derived datatypes np=4" $?
run 300 2 "${ALONE[@]}" "${FAKE[@]}" -- t_colls --quick --comms world
check_ok "dfccl alone, staged (device buffers, emulated): collective matrix (quick) np=2" $?
run 120 4 "${ALONE[@]}" --mca coll_dfccl_check 1 -- t_alone
check_ok "dfccl alone with coll_dfccl_check=1 (no false alarm) np=4" $?
# intercommunicators: dfccl does not serve them; alone, it says what to name instead,
# and MPI_Intercomm_create fails cleanly with an MPI error (before: Open MPI 4.1 crashed
# freeing the communicator it could not set up, SIGSEGV, rc 139): under
# MPI_ERRORS_RETURN the program goes on; under the default handler the job aborts
run 60 2 "${ALONE[@]}" -- t_alone --inter
rc=$?
echo "    case: dfccl alone, MPI_Intercomm_create under MPI_ERRORS_RETURN -> rc $rc: $(grep -m1 -o 'OK t_alone.*' "$WORK/out")"
if [ $rc = 0 ] && grep -q '^OK t_alone --inter' "$WORK/out" && grep -q 'does not serve intercommunicators' "$WORK/out" &&
    ! grep -qi 'segmentation\|signal 11' "$WORK/out"; then
    pass "dfccl alone: an intercommunicator's creation fails with an MPI error and dfccl's explanation np=2"
else
    fail "dfccl alone: intercommunicator np=2" "rc $rc, a crash, or no explanation from dfccl"
fi
run 60 4 "${ALONE[@]}" -- t_inter
rc=$?
echo "    case: dfccl alone, t_inter under MPI_ERRORS_ARE_FATAL -> rc $rc: $(grep -m1 -o 'An error occurred in MPI_Intercomm_create' "$WORK/out")"
if [ $rc != 0 ] && [ $rc != 124 ] && [ $rc != 137 ] && [ $rc != 139 ] &&
    grep -q 'An error occurred in MPI_Intercomm_create' "$WORK/out" && ! grep -qi 'segmentation\|signal 11' "$WORK/out"; then
    pass "dfccl alone: an intercommunicator under the default error handler aborts with the MPI error, no crash (rc $rc) np=4"
else
    fail "dfccl alone: intercommunicator, default error handler np=4" "rc $rc: a crash, a hang, or no MPI error"
fi

# a verbose run names what went to the engine
run 120 2 "${HB[@]}" --mca coll_dfccl_verbose 3 -- t_colls --quick --comms world
rc=$?
if [ $rc = 0 ] && grep -q -- '-> engine (host memory' "$WORK/out"; then
    pass "verbose run shows the collectives on the engine np=2"
    grep -- '-> engine' "$WORK/out" | sed 's/.*() //' | sed 's/ (host memory.*//' | sort | uniq -c | sed 's/^/    /' | head -14
else
    fail "verbose run shows the collectives on the engine np=2" "rc $rc, no '-> engine' line"
fi

# ---------------------------------------------------------------- correctness matrix
if [ "$QUICK" = --quick ]; then
    run 300 2 "${HB[@]}" -- t_colls --quick; check_ok "collectives x types x ops x sizes (quick) np=2" $?
    run 300 4 "${HB[@]}" -- t_colls --quick; check_ok "collectives x types x ops x sizes (quick) np=4" $?
else
    run 300 2 "${HB[@]}" -- t_colls --big; check_ok "collectives x types x ops x sizes, MiB sizes np=2" $?
    run 300 3 "${HB[@]}" -- t_colls; check_ok "collectives x types x ops x sizes np=3" $?
    run 300 4 "${HB[@]}" -- t_colls --big; check_ok "collectives x types x ops x sizes, MiB sizes np=4" $?
fi
run 300 8 "${HB[@]}" -- t_colls --quick --comms world,split,many
check_ok "collectives x types x ops x sizes (quick) np=8" $?

# staging paths (device buffers, emulated): engine and previous module behind host copies
run 300 3 "${FAKE[@]}" -- t_colls --quick
check_ok "staged device buffers: collectives matrix (quick) np=3" $?
# the GPU daemon's path (device buffers, emulated, handed to the engine as they are:
# in-place reduce-scatters moved and in-place all-to-alls copied on the "device")
for np in 3 4; do
    run 300 $np "${FAKE_DIRECT[@]}" --mca coll_dfccl_verbose 3 -- t_colls --quick
    check_engine "device buffers handed to the engine as they are (emulated): collectives matrix (quick) np=$np" $? device
done
run 120 3 "${FAKE_DIRECT[@]}" -- t_allcolls
check_ok "device buffers handed to the engine as they are (emulated): gather(v) ... exscan np=3" $?

# ---------------------------------------------------------------- fallbacks
for np in 2 3 4 8; do
    run 120 $np "${HB[@]}" -- t_fallback
    check_ok "fallback: user ops, derived datatypes, MAXLOC/MINLOC, unmapped types np=$np" $?
done
for np in 2 4; do
    run 120 $np "${FAKE[@]}" -- t_fallback
    check_ok "fallback staged through host (device buffers, emulated) np=$np" $?
done

# ---------------------------------------------------------------- gather(v), scatter(v), ...
# a FAIL line NAME when the last run's log has an alltoallv/w call off the engine
a2av_all_on_engine() {
    local off
    off=$(grep -c 'MPI_I\?[Aa]lltoall[vw] on .*-> previous' "$WORK/out")
    [ "$off" = 0 ] || fail "$1" "$off calls not"
}
# gather(v), scatter(v), allgatherv, alltoallv/w, scan, exscan on device buffers (emulated):
# on the engine (strided datatypes packed, in-place alltoallv/w from a copy of the
# receive blocks), user ops staged through host memory for the previous module;
# checked element by element
for np in 1 2 3 4 8; do
    run 120 $np "${FAKE[@]}" --mca coll_dfccl_verbose 3 -- t_allcolls
    check_lines "gather(v), scatter(v), allgatherv, alltoallv/w, scan, exscan on device buffers (emulated): every one, blocking and non-blocking np=$np" $? \
        'OK t_allcolls' \
        'MPI_Iscan on .*-> previous module (staged through host)' \
        'MPI_Igatherv on .*-> engine' \
        'MPI_Exscan on .*-> engine'
    a2av_all_on_engine "alltoallv/w on device buffers (emulated), in place too, all on the engine np=$np"
done
# the same on host buffers (coll_dfccl_host_buffers 1): in-place alltoallv/w read their
# receive buffer as it is, so only here does a missing copy of it show
for np in 2 3 4; do
    run 120 $np "${HB[@]}" --mca coll_dfccl_verbose 3 -- t_allcolls
    check_lines "gather(v), scatter(v), allgatherv, alltoallv/w (in place too) on host buffers on the engine np=$np" $? \
        'OK t_allcolls' \
        'MPI_Ialltoallw on .*-> engine (host memory' \
        'MPI_Alltoallv on .*-> engine (host memory'
    a2av_all_on_engine "alltoallv/w on host buffers, in place too, all on the engine np=$np"
done
run 120 4 "${FAKE[@]}" --mca coll_dfccl_check 1 -- t_allcolls
check_ok "staged collectives with coll_dfccl_check=1 (no false alarm) np=4" $?
run 120 3 -- t_allcolls
check_ok "gather(v), scatter(v), ... on host buffers: the previous module, untouched np=3" $?
# intercommunicators: dfccl stages device buffers (emulated) for the other components
for np in 2 3 5; do
    run 120 $np "${FAKE[@]}" --mca coll_dfccl_verbose 3 -- t_inter
    check_lines "intercommunicator collectives on device buffers (emulated): staged for the other components, blocking and non-blocking np=$np" $? \
        'OK t_inter' \
        'MPI_Ialltoallv on .*-> previous module (staged through host)'
done
run 120 4 "${FAKE[@]}" --mca coll_dfccl_check 1 -- t_inter
check_ok "intercommunicator collectives, staged, with coll_dfccl_check=1 (not compared there) np=4" $?
run 120 4 -- t_inter
check_ok "intercommunicator collectives on host buffers: the other components, untouched np=4" $?
for np in 2 5; do
    run 120 $np --mca coll_dfccl_host_buffers 1 -- t_allcolls
    check_ok "gather(v), scatter(v), ... on host buffers, on the engine (coll_dfccl_host_buffers=1) np=$np" $?
done

# ---------------------------------------------------------------- non-blocking
for np in 2 3 4 8; do
    run 120 $np "${HB[@]}" -- t_nb
    check_ok "non-blocking: Test/Wait/Waitall/Waitany/Testsome, 12 outstanding np=$np" $?
done
run 120 3 "${FAKE[@]}" -- t_nb
check_ok "non-blocking, staged (device buffers, emulated) np=3" $?
run 120 3 "${FAKE_DIRECT[@]}" -- t_nb
check_ok "non-blocking, device buffers handed to the engine as they are (emulated) np=3" $?

# ---------------------------------------------------------------- chaos order
# From the very first call on fresh communicators, default settings, no warm-up. Every
# variant also runs with preemption off and must then hang (the watchdog exits 3), so
# the test is known to bite.
hang_proof() {
    local name=$1
    shift
    run 60 4 "${HB[@]}" --mca coll_dfccl_preempt 0 "$@" --deadline 8 --iters 4
    check_hang "$name with coll_dfccl_preempt 0, np=4," $?
}
for np in 2 4 8; do
    run 120 $np "${HB[@]}" -- t_chaos --deadline 60
    check_ok "chaos order from the first call: 8 dups, Iallreduce in per-rank permutations np=$np" $?
done
hang_proof "chaos order, dups" -- t_chaos
# gatherv, alltoallv, allgatherv, scatterv and scan in the chaos order, on the engine
for np in 2 4 8; do
    run 120 $np "${HB[@]}" -- t_chaos --mix --deadline 60
    check_ok "chaos order from the first call: Igatherv, Ialltoallv, Iallgatherv, Iscatterv, Iscan on 8 dups np=$np" $?
done
run 120 4 "${FAKE[@]}" -- t_chaos --mix --kind split --deadline 60
check_ok "chaos order, the new collectives on split communicators, device buffers (emulated) np=4" $?
hang_proof "chaos order, gatherv/alltoallv/allgatherv/scatterv/scan" -- t_chaos --mix
# the uniform collectives in the chaos order: the small blocks in one LL round each
for np in 2 4 8; do
    run 120 $np "${HB[@]}" -- t_chaos --uniform --deadline 60
    check_ok "chaos order from the first call: Ibcast, Ireduce, Iallgather, Ireduce_scatter_block, Ialltoall, Igather, Iscatter on 8 dups np=$np" $?
done
hang_proof "chaos order, bcast/reduce/allgather/reduce_scatter_block/alltoall/gather/scatter" -- t_chaos --uniform
for kind in split group; do
    fn=MPI_Comm_split
    [ $kind = group ] && fn=MPI_Comm_create_group
    for np in 2 4 8; do
        run 120 $np "${HB[@]}" -- t_chaos --kind $kind --deadline 60
        check_ok "chaos order from the first call: $fn communicators np=$np" $?
    done
    hang_proof "chaos order, $fn communicators" -- t_chaos --kind $kind
done
for np in 2 4 8; do
    run 120 $np "${HB[@]}" --mca coll_dfccl_check 1 -- t_chaos --deadline 60
    check_ok "chaos order from the first call with coll_dfccl_check=1 np=$np" $?
done
hang_proof "chaos order, coll_dfccl_check=1" --mca coll_dfccl_check 1 -- t_chaos
for level in single funneled serialized; do
    run 120 4 "${HB[@]}" -- t_chaos --thread $level --deadline 60
    check_ok "chaos order from the first call under MPI_THREAD_${level^^} np=4" $?
done
for np in 2 4 8; do
    run 120 $np "${HB[@]}" -- t_chaos --thread multiple --deadline 60
    check_ok "chaos order from the first call under MPI_THREAD_MULTIPLE np=$np" $?
done
hang_proof "chaos order under MPI_THREAD_MULTIPLE" -- t_chaos --thread multiple
for np in 2 4 8; do
    run 180 $np "${HB[@]}" -- t_chaos --thread multiple --threads 4 --blocking --deadline 60
    check_ok "chaos order from the first call, 4 threads per rank on their own communicators, blocking and non-blocking np=$np" $?
done
hang_proof "chaos order, 4 threads per rank" -- t_chaos --thread multiple --threads 4 --blocking
# coll_dfccl_eager: set-ups start at MPI_Comm_dup (still without blocking)
run 120 4 "${HB[@]}" --mca coll_dfccl_eager 1 -- t_chaos --deadline 60
check_ok "chaos order from the first call, coll_dfccl_eager=1 np=4" $?
run 60 2 "${HB[@]}" -x DFCCL_PREEMPT=0 -- t_chaos --deadline 8 --iters 4
rc=$?
if [ $rc = 3 ] || [ $rc = 124 ] || [ $rc = 137 ]; then
    pass "chaos order with -x DFCCL_PREEMPT=0 hangs (rc $rc) np=2"
else
    fail "chaos order with -x DFCCL_PREEMPT=0 hangs np=2" "rc $rc: it did not hang"
fi

# ---------------------------------------------------------------- a real client: mpi4py
# Debian's python3-mpi4py (./quickstart installs it) in its default thread mode, which
# asks for MPI_THREAD_MULTIPLE; NumPy arrays go to the CPU daemon
PY=${PYTHON_MPI4PY:-/usr/bin/python3}
if "$PY" -c 'import mpi4py, numpy' 2>/dev/null; then
    for np in 2 4; do
        run 180 $np "${HB[@]}" --mca coll_dfccl_verbose 3 -- "$PY" "$SRC/t_mpi4py.py"
        check_engine "mpi4py + NumPy at its default thread level: collectives, then chaos on fresh Dups np=$np" $? host
    done
    run 60 4 "${HB[@]}" --mca coll_dfccl_preempt 0 -- "$PY" "$SRC/t_mpi4py.py" --deadline 8 --iters 4
    check_hang "mpi4py chaos with coll_dfccl_preempt 0, np=4," $?
else
    fail "mpi4py" "$PY has no mpi4py/numpy (Debian: python3-mpi4py python3-numpy)"
fi

# coll_dfccl_timeout turns that hang into an MPI error (fatal under MPI_ERRORS_ARE_FATAL)
run 60 2 "${HB[@]}" --mca coll_dfccl_preempt 0 --mca coll_dfccl_timeout 2000 -- t_chaos --deadline 30 --iters 2
rc=$?
if [ $rc != 0 ] && [ $rc != 3 ] && [ $rc != 124 ] && [ $rc != 137 ] && grep -q 'timed out' "$WORK/out"; then
    pass "chaos order, preempt 0, coll_dfccl_timeout 2000: an error instead of a hang (rc $rc) np=2"
    grep 'failed on the engine' "$WORK/out" | head -1 | sed 's/.*ERROR: /    /'
else
    fail "chaos order, preempt 0, coll_dfccl_timeout 2000 np=2" "rc $rc"
fi

# ---------------------------------------------------------------- peer loss
# A rank killed before the engine communicator's set-up (test/ompi/t_peerloss.c): Open MPI
# 4.1 fails no message to a dead process, and under --enable-recovery mpirun leaves the
# survivors running, so before they waited in the set-up's exchange forever (the test's
# watchdog: HANG, exit 3). Now each survivor's stalled exchange finds the dead pid within
# ~0.2 s and its calls there fail (MPI_ERR_OTHER), naming the dead rank.
peer_loss() {
    local name=$1 np=$2 rc n
    shift 2
    run 60 "$np" "${HB[@]}" --enable-recovery "$@" -- t_peerloss --mode kill --deadline 20
    rc=$?
    n=$(grep -c '^SURVIVOR rank .*MPI_Allreduce MPI_ERR_OTHER.*MPI_Iallreduce MPI_ERR_OTHER' "$WORK/out")
    if [ "$n" = $((np - 1)) ] && ! grep -q '^HANG' "$WORK/out" && [ "$rc" != 124 ] && [ "$rc" != 137 ] &&
        [ "$(grep -c 'engine set-up of .* failed after .*: rank .* is gone\|coll_dfccl_check on .* is gone' "$WORK/out")" -ge $((np - 1)) ]; then
        pass "$name np=$np"
        grep -m1 '^SURVIVOR' "$WORK/out" | sed 's/^/    /'
        grep -m1 -o 'engine set-up of .* is gone[^;]*' "$WORK/out" | sed 's/^/    /'
    else
        fail "$name np=$np" "$n of $((np - 1)) survivors failed their calls; rc $rc$(grep -m1 '^HANG' "$WORK/out" | sed 's/^/: /')"
    fi
}
for np in 2 4; do
    peer_loss "a rank killed before the engine set-up: every survivor's calls fail, none hangs" $np
done
peer_loss "the same with coll_dfccl_check=1" 3 --mca coll_dfccl_check 1
peer_loss "the same with coll_dfccl_eager=1" 3 --mca coll_dfccl_eager 1
# a rank that is only late (3 s) is no failure: its pid lives; the stall report (1 s here)
# names the rank waited for
run 60 3 "${HB[@]}" --mca coll_dfccl_stall_report 1000 -- t_peerloss --mode late --late-ms 3000
check_lines "a rank 3 s late to the engine set-up: no false alarm, results right, the stall reported np=3" $? \
    'OK t_peerloss' "has waited 1.* s for rank 2's message; 2 same-host peers are alive"
# coll_dfccl_timeout ends a set-up that waits longer (the knob for peers on other hosts,
# whose processes can't be watched): every rank's calls fail, the late one's too
run 60 3 "${HB[@]}" --mca coll_dfccl_timeout 1000 -- t_peerloss --mode timeout --late-ms 3000 --deadline 20
rc=$?
if [ "$(grep -c '^TIMED-OUT rank .*MPI_Allreduce MPI_ERR_OTHER.*MPI_Iallreduce MPI_ERR_OTHER' "$WORK/out")" = 3 ] &&
    [ "$rc" = 0 ] && grep -q 'did not come within coll_dfccl_timeout (1000 ms)' "$WORK/out"; then
    pass "coll_dfccl_timeout 1000 and a rank 3 s late: every rank's set-up gives up, its calls fail, MPI_Finalize returns np=3"
else
    fail "coll_dfccl_timeout 1000, a rank 3 s late np=3" "rc $rc, $(grep -c '^TIMED-OUT' "$WORK/out") of 3 ranks failed their calls"
fi

# ---------------------------------------------------------------- a rank out of memory
# A call whose temporary (an in-place send side, a packed datatype, a device copy) can't
# be allocated on one rank (test/ompi/t_nomem.c: the last rank's RLIMIT_AS just above what
# it maps) fails there with MPI_ERR_NO_MEM before the engine call. Its peers used to wait
# for that rank's part for ever (the test's watchdog: HANG, exit 3); the component now
# refuses the call to them (dfcclCommRefuse) and theirs fails within seconds, naming the
# rank and why; the communicator is then refused, and new ones work.
#
# refused NAME NP WHY [mpirun args] -- PROGRAM [args]: PROGRAM's OK line, no HANG, and the
# peers told that the last rank refused its call (its MPI_... failed before the engine
# call: WHY)
refused() {
    local name=$1 np=$2 why=$3 prog rc
    shift 3
    prog=$(printf '%s\n' "$@" | sed -n '/^--$/{n;p;q}')
    run 60 "$np" "$@"
    rc=$?
    if [ "$rc" = 0 ] && grep -q "OK $prog" "$WORK/out" && ! grep -q '^HANG' "$WORK/out" &&
        grep -q "rank $((np - 1)) refused its call (its MPI_.* failed before the engine call: $why)" "$WORK/out"; then
        pass "$name np=$np"
        grep -o "OK $prog.*" "$WORK/out" | sed 's/^/    /'
    else
        fail "$name np=$np" "rc $rc$(grep -m1 '^HANG\|FAIL' "$WORK/out" | sed 's/^/: /')"
    fi
}
nomem() {
    local name=$1 np=$2
    shift 2
    refused "$name" "$np" "no memory for a temporary buffer" "$@"
}
nomem "out of memory for an in-place MPI_Alltoallv's send copy on one rank: every rank's call fails, none hangs" 3 \
    "${HB[@]}" -- t_nomem alltoallv-inplace
nomem "the same for MPI_Ialltoallv" 4 "${HB[@]}" -- t_nomem alltoallv-inplace --nb
nomem "out of memory to pack a strided MPI_Alltoallv send type on one rank" 3 "${HB[@]}" -- t_nomem alltoallv-vector
nomem "out of memory for an in-place MPI_Alltoall's device copy on one rank (fake_device=2)" 3 \
    "${FAKE_DIRECT[@]}" -- t_nomem alltoall-inplace
nomem "the same for MPI_Ialltoall (fake_device=2)" 4 "${FAKE_DIRECT[@]}" -- t_nomem alltoall-inplace --nb
# A non-blocking call that waits in the queue (the set-up still running) and gets no
# request from the component's pool (test/ompi/t_reqoom.c: the pool's growth fails on the
# last rank): it used to fail there alone, and that rank's next call paired with the
# peers' part of it (a wrong result) or they waited for ever; now it fails at once and
# the module's spare request, queued in its place, refuses it to them at its turn (the
# calls before it checked). --twice: the next call fails too, with the spare still
# queued: it waits in the call for its turn (the last resort) and is refused as well
for np in 2 4; do
    refused "a queued MPI_Iallreduce without a request (no memory) is refused to the peers" "$np" \
        "no memory for its request" "${HB[@]}" -- t_reqoom
done
refused "two queued MPI_Iallreduce in a row without a request: both refused" 3 "no memory for its request" \
    "${HB[@]}" -- t_reqoom --twice

# ---------------------------------------------------------------- communicator churn
for np in 2 4 8; do
    run 300 $np "${HB[@]}" -- t_commfree --n 1000
    check_ok "1000 communicators created, used, freed: no growth of RSS/fds/shm np=$np" $?
    grep '^rank 0:' "$WORK/out" | sed 's/^/    /'
done
# communicators freed (or left to MPI_Finalize) while their set-up may be in flight
for np in 2 8; do
    run 120 $np "${FAKE[@]}" --mca coll_dfccl_eager 1 -- t_teardown
    check_ok "coll_dfccl_eager=1: communicators freed with set-ups in flight, calls pending, some never freed np=$np" $?
done
run 120 4 "${HB[@]}" --mca coll_dfccl_eager 1 --mca coll_dfccl_check 1 -- t_teardown
check_ok "the same with coll_dfccl_check=1 on host buffers np=4" $?
# a /dev/shm too small for the engine's segments (Docker's default is 64 MiB; here a
# private 2 MiB tmpfs): the engine says so, the component falls back with one error line
# per rank, every result is right, and nobody dies of SIGBUS inside a collective
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
    RUN_PREFIX=(unshare -m sh -c 'mount -t tmpfs -o size=2m tmpfs /dev/shm && exec "$@"' sh)
    run 120 4 "${HB[@]}" -- t_colls --quick --comms world,dup
    rc=$?
    RUN_PREFIX=()
    if [ $rc = 0 ] && grep -q 'OK t_colls' "$WORK/out" && grep -q 'no room in /dev/shm' "$WORK/out"; then
        pass "full /dev/shm (2 MiB tmpfs): dfcclNoMemory naming /dev/shm, fallback, results right np=4"
        grep -o 'no room in /dev/shm[^;]*' "$WORK/out" | head -1 | sed 's/^/    /'
    else
        fail "full /dev/shm (2 MiB tmpfs) np=4" "rc $rc"
    fi
else
    echo "SKIP: full /dev/shm (needs root and unshare -m)"
fi
# a squatter (test/ompi/squatter.c): for every dfccl segment that appears it pre-creates
# the names the communicator's other segments would have if names could be predicted from
# one another (same id, nearby pid, any rank); no set-up may fail for it
if ${CC:-cc} -O2 -o "$WORK/squatter" "$SRC/squatter.c" 2>"$WORK/cc.err"; then
    "$WORK/squatter" >"$WORK/squat.out" 2>&1 &
    squatter=$!
    sleep 0.3
    run 180 4 "${HB[@]}" --mca coll_dfccl_verbose 1 -- t_commfree --n 300
    rc=$?
    kill $squatter 2>/dev/null
    wait $squatter 2>/dev/null
    rm -f /dev/shm/dfccl-*-*-[0-7]
    if [ $rc = 0 ] && grep -q 'OK t_commfree' "$WORK/out" && ! grep -q 'no engine communicator' "$WORK/out"; then
        pass "a squatter pre-creating predictable segment names: every set-up succeeds np=4 ($(cat "$WORK/squat.out"))"
    else
        fail "a squatter pre-creating segment names np=4" \
            "rc $rc, $(grep -c 'no engine communicator' "$WORK/out") set-ups failed"
    fi
else
    fail "build the squatter" "$(head -3 "$WORK/cc.err")"
fi
# two jobs in different pid namespaces sharing /dev/shm: neither's stale-segment sweep may
# take the other's live segments for dead ones
if [ "$(id -u)" = 0 ] && unshare --pid --fork --mount-proc true 2>/dev/null; then
    job() { # $1: output file and vader's directory; the rest: a prefix to run mpirun under
        local out=$1
        shift
        mkdir -p "$out.vader"
        timeout -k 5 240 "$@" $MPIRUN "${ROOT_FLAGS[@]}" --oversubscribe -np 2 --mca btl self,vader \
            --mca btl_vader_backing_directory "$out.vader" --mca mca_base_component_path "$CPATH_MCA" \
            -x LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "${HB[@]}" "$BIN/t_commfree" \
            --n 600 >"$out" 2>&1
    }
    job "$WORK/out.ns" unshare --pid --fork --mount-proc &
    other=$!
    job "$WORK/out.host" env
    rc1=$?
    wait $other
    rc2=$?
    cat "$WORK/out.host" "$WORK/out.ns" >"$WORK/out"
    if [ $rc1 = 0 ] && [ $rc2 = 0 ] && [ "$(grep -c 'OK t_commfree' "$WORK/out")" = 2 ] &&
        ! grep -q 'no engine communicator' "$WORK/out"; then
        pass "two jobs, two pid namespaces, one /dev/shm: 2 x 600 set-ups, none lost to the other's sweep"
    else
        fail "two jobs in two pid namespaces" "rc $rc1/$rc2, $(grep -c 'no engine communicator' "$WORK/out") set-ups failed"
    fi
else
    echo "SKIP: two pid namespaces (needs root and unshare --pid)"
fi
left=$(ls /dev/shm 2>/dev/null | grep -c '^dfccl-')
if [ "$left" = 0 ]; then
    pass "no dfccl-* segments left in /dev/shm after the suite"
else
    fail "no dfccl-* segments left in /dev/shm" "$left left"
fi

# ---------------------------------------------------------------- coll_dfccl_check
for np in 2 4; do
    run 60 $np "${HB[@]}" --mca coll_dfccl_check 1 -- t_check
    check_ok "coll_dfccl_check=1 catches different counts/roots/ops with MPI_ERR_ARG np=$np" $?
    grep 'coll_dfccl_check:' "$WORK/out" | head -2 | sed 's/.*ERROR: /    /'
done
run 300 3 "${HB[@]}" --mca coll_dfccl_check 1 -- t_colls --quick --comms world,split
check_ok "coll_dfccl_check=1 passes every matching call (no false alarm) np=3" $?
# the default settings (coll_dfccl_check 0): the engine's in-band signatures find the
# same mismatches (count, roots, allreduce vs bcast, op, datatype) on every rank, at the
# call or the next one (10 ints: an LL round; 20000: ring and chain); two ranks that both
# take themselves for a bcast's root at the next call (docs/usage.md, "Mismatched
# collectives")
for np in 3 4; do
    for n in 10 20000; do
        run 60 $np "${HB[@]}" -- t_sigmismatch $n
        check_ok "default settings: mismatched calls fail on every rank, nothing hangs np=$np count=$n" $?
    done
done
grep -m2 'dfcclMismatch\|different arguments' "$WORK/out" | sed 's/^/    /' | cut -c1-300
# two ranks: the bcast-root case is itself two roots (before, neither waited for anything)
run 60 2 "${HB[@]}" -- t_sigmismatch 10
check_ok "default settings: mismatched calls fail on every rank, nothing hangs np=2 count=10" $?

fi # DEVICE_ONLY

# the device-buffer part (GPU machines; a SKIP line elsewhere)
# shellcheck source=ompi_suite_device.sh
. "$SRC/ompi_suite_device.sh"

finish

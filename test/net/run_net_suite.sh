#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# Net-transport (UCX) suite of dfccl, on one machine.
#
# usage: run_net_suite.sh MPI_BIN_DIR [NET_BIN_DIR]
#   MPI_BIN_DIR  the compiled multi-process tests (t_matrix, t_chaos, t_random,
#                t_collmismatch):
#                BUILD/test/mpi
#   NET_BIN_DIR  where t_netkill and t_netns are (default: MPI_BIN_DIR/../net, i.e.
#                BUILD/test/net)
#
# Cases:
#   forced      DFCCL_NET=ucx: every other rank over UCX (loopback), the collective
#               matrix, the chaos-order test and its preemption-off hang proof, the
#               random-order test; the matrix again with whole-step eager messages
#               (DFCCL_NET_PIECE=0) and with the most pieces a step may have
#   mixed       DFCCL_HOST=hostA / hostB by rank parity: ranks of equal parity over
#               shared memory, the others over UCX, in one communicator
#   teardown    t_netkill --teardown: communicators created, used once and destroyed
#               in a loop; a peer destroying first must not fail this rank's collective,
#               and no file descriptor, thread or memory may leak per communicator
#   shared endpoints
#               t_netkill --teardown 1000 --keep: 1000 communicators created, used
#               once and destroyed while one stays open, so every one reuses the
#               endpoints to the same peers: no file descriptor or thread may be
#               gained, nor more than 8 MiB of resident memory; ranks run under
#               ulimit -n 256; default UCX_TLS and UCX_TLS=tcp,self (fewer rounds);
#               and --keep-sub over tcp: the kept communicator leaves out the last
#               rank, whose workers are new every round (the endpoints to its old
#               ones must be closed)
#   killed      t_netkill: a rank dies by SIGKILL during a collective; the others'
#               pending collective must fail within a bounded time, not hang (peers
#               on this host: the proxy's process watch; with DFCCL_HOST by parity,
#               peers on "another host": UCX's error-reporting endpoints); also
#               with 4 communicators open on the same endpoints, each of which must
#               fail
#   other pid namespaces  rank 1 in a pid namespace of its own (unshare --pid, root
#               only, else SKIP) on shared memory: its death is found by its
#               heartbeat, and a live rank 1 that arrives 2 s late is not taken for dead
#   stray       t_netstray: a UCX peer that is no rank sends active messages under
#               every kind of id dfccl does not use, and malformed ones under its
#               own, to a rank's proxy: they are dropped and the rank keeps working
#   mismatch    t_collmismatch, every case, forced (and two in mixed locality): a
#               collective called differently on the last rank fails on every rank,
#               naming the difference (the signature's tag in the step's header, the
#               peers' descriptions asked for over the proxy)
#   netns       test/net/netns.sh with NET_BIN_DIR/t_netns: ranks in two network
#               namespaces joined by a veth pair (root only, else SKIP)
# Every run has DFCCL_LOG_LEVEL=info, and the suite checks the engine's per-peer
# lines "peer R: transport shm|ucx": forced runs must show only ucx, mixed runs shm
# between equal parities and ucx between different ones.
#
# Every case runs under mpirun inside `timeout`; processes of the test binaries left
# behind are killed by pid afterwards. One line per case: "PASS: name np=N" or
# "FAIL: name np=N (reason)"; at the end "N passed, N failed"; the exit status is
# non-zero if any case failed. When the library has no net transport (built without
# UCX: dfcclCommInit says dfcclUnsupported for DFCCL_NET=ucx; or a library that
# predates DFCCL_NET), every case prints "SKIP: ..." and the suite ends with
# "0 passed, 0 failed" and exit status 0.
#
# Environment:
#   DFCCL_*            passed to every rank (mpirun -x), except DFCCL_NET, DFCCL_HOST
#                      and DFCCL_LOG_LEVEL, which the suite sets per case
#   UCX_*              passed to every rank (e.g. UCX_TLS=tcp to force TCP loopback)
#   SUITE_NPS          rank counts of the forced t_matrix case (default "2 3 4 8")
#   SUITE_CHAOS_ITERS  iterations of the chaos-order runs (default 20)
#   SUITE_FILTER       only run cases whose name matches this extended regex
#   SUITE_LOGDIR       where the logs go (default: a new /tmp/dfccl-netsuite.XXXXXX)
#   SUITE_KILL_DEADLINE seconds the survivors of t_netkill may wait (default 20)
#   SUITE_NETNS=0      leave out the network-namespace cases
#   SUITE_MPIRUN_ARGS  replaces "--mca btl self,vader"
#   SUITE_VERBOSE=1    print the tail of the log of every failing case
set -u

if [ $# -lt 1 ] || [ ! -d "$1" ]; then
    echo "usage: $0 MPI_BIN_DIR [NET_BIN_DIR]" >&2
    exit 2
fi
BIN=$(cd "$1" && pwd -P)
NETBIN_ARG=${2:-$BIN/../net}
if [ -d "$NETBIN_ARG" ]; then
    NETBIN=$(cd "$NETBIN_ARG" && pwd -P)
else
    NETBIN=$NETBIN_ARG
fi
NPS=${SUITE_NPS:-"2 3 4 8"}
CHAOS_ITERS=${SUITE_CHAOS_ITERS:-20}
FILTER=${SUITE_FILTER:-}
KILL_DEADLINE=${SUITE_KILL_DEADLINE:-20}
LOGDIR=${SUITE_LOGDIR:-$(mktemp -d /tmp/dfccl-netsuite.XXXXXX)}
mkdir -p "$LOGDIR"
read -r -a MPI_EXTRA <<< "${SUITE_MPIRUN_ARGS:---mca btl self,vader}"

# --enable-recovery: when a rank dies, Open MPI leaves the others running (t_netkill
# needs that; the other cases never lose a rank)
MPIRUN=(mpirun --allow-run-as-root --oversubscribe "${MPI_EXTRA[@]}")
for v in $(compgen -e | grep -E '^(DFCCL|UCX)_' || true); do
    case "$v" in
    DFCCL_NET | DFCCL_HOST | DFCCL_LOG_LEVEL) ;;
    *) MPIRUN+=(-x "$v") ;;
    esac
done

npass=0
nfail=0
FAILED=()

# ------------------------------------------------------------------ helpers

# shellcheck disable=SC2034 # read by suite_lib.sh
ORPHAN_DIRS=("$BIN" "$NETBIN")
# shellcheck source=../suite_lib.sh
. "$(dirname "$0")/../suite_lib.sh"

logname() { printf '%s/%s.log' "$LOGDIR" "$(printf '%s' "$1" | tr -c 'A-Za-z0-9_.=-' '_')"; }

# The wrapper of the mixed cases: DFCCL_HOST by rank parity, then the program.
WRAP="$LOGDIR/hostwrap.sh"
cat > "$WRAP" << 'EOF'
#!/bin/sh
# mixed locality on one machine: even ranks report host "hostA", odd ones "hostB"
r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-0}}
if [ $((r % 2)) -eq 0 ]; then DFCCL_HOST=hostA; else DFCCL_HOST=hostB; fi
export DFCCL_HOST
echo "hostwrap: rank $r pid $$ host $DFCCL_HOST" >&2
exec "$@"
EOF
chmod +x "$WRAP"

# The wrapper of the hosts cases: every rank a host of its own (DFCCL_HOST=host<rank>), so
# that every peer is on "another host": UCX then, with error-reporting endpoints, over tcp.
HOSTSWRAP="$LOGDIR/hostswrap.sh"
cat > "$HOSTSWRAP" << 'EOF'
#!/bin/sh
r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-0}}
DFCCL_HOST=host$r
export DFCCL_HOST
exec "$@"
EOF
chmod +x "$HOSTSWRAP"

# Rank 1 in a pid namespace of its own (a container that shares /dev/shm but not its
# pids): its peers can't watch its pid and watch its heartbeat instead. The program runs
# under a shell, since the first process of a namespace ignores SIGKILL from inside it
# (t_netkill's victim kills itself). One rank only: Open MPI's vader names its segments
# by pid, and two ranks that are both pid 2 in their namespaces collide. Its
# single-copy (CMA) needs the peer's pid: off in these cases.
NSWRAP="$LOGDIR/nswrap.sh"
cat > "$NSWRAP" << 'EOF'
#!/bin/sh
r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-0}}
if [ "$r" -eq 1 ]; then exec unshare --pid --fork --mount-proc sh -c '"$@"; exit $?' sh "$@"; fi
exec "$@"
EOF
chmod +x "$NSWRAP"
NS_OK=0
unshare --pid --fork --mount-proc true 2> /dev/null && NS_OK=1

# Per-peer transport lines of the engine: "PID PEER TRANSPORT", one a line.
transport_lines() {
    sed -n -E 's/^\[dfccl ([0-9]+)\].*peer ([0-9]+): transport ([a-z]+).*/\1 \2 \3/p' "$1"
}

# check_transports LOG MODE NP: empty output when the transport lines fit MODE
# ("ucx": every line ucx; "mixed": shm between ranks of equal parity, ucx otherwise,
# ranks from the wrapper's "hostwrap: rank R pid P" lines); a reason otherwise.
check_transports() {
    local log=$1 mode=$2 np=$3 lines n
    lines=$(transport_lines "$log")
    n=$(grep -c . <<< "$lines")
    if [ "$n" -lt $((np * (np - 1))) ]; then
        echo "only $n 'peer R: transport' lines at DFCCL_LOG_LEVEL=info, expected at least $((np * (np - 1)))"
        return
    fi
    if [ "$mode" = ucx ] || [ "$mode" = shm ] || [ "$mode" = ns ] || [ "$mode" = hosts ]; then
        local other want=$mode
        [ "$mode" = ns ] && want=shm
        [ "$mode" = hosts ] && want=ucx
        other=$(awk -v w="$want" '$3 != w' <<< "$lines" | head -n 3 | tr '\n' ';')
        [ -n "$other" ] && echo "every peer should be on $want, some are not (pid peer transport): $other"
        return
    fi
    # mixed
    awk -v np="$np" '
        FNR == NR { if (match($0, /^hostwrap: rank [0-9]+ pid [0-9]+/)) { split($0, f, " "); rank[f[5]] = f[3] } next }
        {
            pid = $1; peer = $2; tr = $3
            if (!(pid in rank)) { printf "transport line of pid %s, which is no rank of the wrapper; ", pid; bad++; next }
            want = (rank[pid] % 2 == peer % 2) ? "shm" : "ucx"
            if (tr != want) { printf "rank %s peer %s: transport %s, expected %s; ", rank[pid], peer, tr, want; bad++ }
            seen[want]++
        }
        END {
            if (!bad && (!seen["shm"] || !seen["ucx"])) printf "expected both shm and ucx peers (shm %d, ucx %d)", seen["shm"], seen["ucx"]
        }' "$log" <(printf '%s\n' "$lines") | cut -c1-400
}

# check_steps LOG NP: with STEPS=put, every rank's net set-up line must say its steps go
# by put; with STEPS=am, as active messages (none by put); empty output when they do.
check_steps() {
    local log=$1 np=$2 nput nam
    [ -n "${STEPS:-}" ] || return 0
    nput=$(grep -c "steps by RDMA put into the peer's registered FIFO" "$log")
    nam=$(grep -c 'steps as active messages' "$log")
    if grep -q 'did not answer the goodbye\|s into teardown' "$log"; then
        echo "a teardown waited out a peer: $(grep -m1 'did not answer the goodbye\|s into teardown' "$log" | cut -c1-200)"
    elif [ "$STEPS" = put ] && { [ "$nput" -lt "$np" ] || [ "$nam" -gt 0 ]; }; then
        echo "expected every rank's steps by put: $nput set-up line(s) by put, $nam as active messages"
    elif [ "$STEPS" = am ] && { [ "$nam" -lt "$np" ] || [ "$nput" -gt 0 ]; }; then
        echo "expected steps as active messages: $nam set-up line(s) so, $nput by put"
    fi
}

# run_case NAME NP TIMEOUT MODE [mpirun args...] -- PROGRAM [args...]
# MODE: ucx (DFCCL_NET=ucx), shm (DFCCL_NET=auto on one host: every peer on shared
# memory), ns (the same, rank 1 in a pid namespace of its own), mixed (DFCCL_HOST by
# rank parity through the wrapper) or hosts (every rank a host of its own: every peer
# over UCX with error-reporting endpoints).
# PASS when the job exits 0 with an "OK" line, no dfccl segment of a dead process is
# left in /dev/shm and the transport lines fit MODE.
run_case() {
    local name=$1 np=$2 tmo=$3 mode=$4
    shift 4
    local id="$name np=$np"
    selected "$id" || return 0
    local log
    log=$(logname "${name}_np$np")
    local margs=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        margs+=("$1")
        shift
    done
    shift
    local prog=$1
    shift
    [[ "$prog" == /* ]] || prog="$BIN/$prog"
    local -a cmd
    if [ "$mode" = mixed ]; then
        margs+=(-x DFCCL_NET=auto)
        cmd=("$WRAP" "$prog" "$@")
    elif [ "$mode" = shm ]; then
        margs+=(-x DFCCL_NET=auto)
        cmd=("$prog" "$@")
    elif [ "$mode" = ns ]; then
        margs+=(-x DFCCL_NET=auto --mca btl_vader_single_copy_mechanism none)
        cmd=("$NSWRAP" "$prog" "$@")
    elif [ "$mode" = hosts ]; then
        margs+=(-x DFCCL_NET=auto)
        cmd=("$HOSTSWRAP" "$prog" "$@")
    else
        margs+=(-x DFCCL_NET=ucx)
        cmd=("$prog" "$@")
    fi
    local before after leaked why
    before=$(shm_list)
    local t0=$SECONDS
    run_mpi "$log" "$tmo" "$np" -x DFCCL_LOG_LEVEL=info "${margs[@]}" -- "${cmd[@]}"
    local dt=$((SECONDS - t0))
    after=$(shm_list)
    leaked=$(shm_leaked_since "$before" "$after")
    if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then
        fail "$id" "timed out after ${tmo}s: $(reason_of "$log"); log $log" "$log"
    elif [ "$RC" -ne 0 ]; then
        fail "$id" "exit $RC: $(reason_of "$log"); log $log" "$log"
    elif ! grep -qx 'OK' "$log"; then
        fail "$id" "exit 0 without an OK line; log $log" "$log"
    elif [ -n "$leaked" ]; then
        fail "$id" "shared memory left behind: ${leaked//$'\n'/ }; log $log" "$log"
    elif why=$(check_transports "$log" "$mode" "$np"); [ -n "$why" ]; then
        fail "$id" "$why; log $log" "$log"
    elif why=$(check_steps "$log" "$np"); [ -n "$why" ]; then
        fail "$id" "$why; log $log" "$log"
    else
        pass "$id [${dt}s]"
    fi
}

# Remove Open MPI vader segments created since list $1 (ranks that _exit without
# MPI_Finalize leave them; their job is gone).
vader_cleanup_since() {
    local f
    for f in $(vader_list); do
        grep -qxF "$f" <<< "$1" || rm -f "/dev/shm/$f"
    done
}

# ------------------------------------------------------------------ case list

# t_collmismatch's cases (test/mpi/t_collmismatch.c), every peer over UCX
COLLMISMATCH_CASES="count reduce-root bcast-root kind op datatype refused refused-ahead none refused-all two-roots"

# one entry per case, for the SKIP lines
CASES=()
for np in $NPS; do CASES+=("t_matrix[net=ucx] np=$np"); done
CASES+=("t_chaos[net=ucx] np=4" "t_chaos[net=ucx,DFCCL_PREEMPT=0 must hang] np=4"
    "t_netstray[stray active messages] np=2" "t_netstray[stray active messages, UCX_TLS=tcp,self] np=2"
    "t_random[net=ucx] np=4" "t_matrix[mixed] np=4" "t_chaos[mixed] np=4"
    "t_netkill[teardown race, 50 rounds] np=2" "t_netkill[teardown race, 50 rounds] np=4"
    "t_netkill[1000 communicators, shared endpoints] np=2" "t_netkill[1000 communicators, shared endpoints] np=3"
    "t_netkill[400 communicators, shared endpoints, UCX_TLS=tcp,self] np=2"
    "t_netkill[400 communicators, shared endpoints, UCX_TLS=tcp,self] np=3"
    "t_netkill[300 communicators, shared endpoints, a peer's workers renewed, UCX_TLS=tcp,self] np=3"
    "t_netkill[4 communicators on shared endpoints] np=3"
    "t_netkill[4 communicators on shared endpoints, other-host and same-host peers] np=4"
    "t_netkill[victim waits] np=2" "t_netkill[victim waits] np=4"
    "t_netkill[mid ring allreduce] np=4" "t_netkill[survivors' communicator] np=3"
    "t_netkill[other-host and same-host peers] np=4"
    "netns[ucx over veth] np=2" "netns[ucx over veth] np=4"
    "t_matrix[net=ucx,3 proxies,2 daemon threads,4 channels] np=4"
    "t_chaos[net=ucx,2 proxies,2 daemon threads,4 channels] np=4"
    "t_chaos[net=ucx,2 proxies,2 daemon threads,4 channels,DFCCL_PREEMPT=0 must hang] np=4"
    "t_netkill[teardown race, 2 proxies] np=4" "t_netkill[mid ring allreduce, 2 proxies] np=4"
    "t_matrix[net=ucx,whole-step messages] np=3" "t_matrix[net=ucx,1000-byte pieces] np=2"
    "t_netkill[shared memory, victim waits] np=2" "t_netkill[shared memory, mid ring allreduce] np=4"
    "t_netkill[shared memory, survivors' communicator] np=3" "t_netkill[teardown race, shared memory] np=4"
    "t_netkill[other pid namespaces, victim waits] np=2" "t_netkill[other pid namespaces, mid ring allreduce] np=4"
    "t_netkill[other pid namespaces, a live peer 2 s late] np=3")
for m in $COLLMISMATCH_CASES; do
    CASES+=("t_collmismatch[net=ucx,$m] np=3" "t_collmismatch[net=ucx,$m,65536 elements] np=4")
done
CASES+=("t_collmismatch[mixed,count] np=4" "t_collmismatch[mixed,two-roots] np=4")
CASES+=("t_matrix[hosts,put] np=2" "t_matrix[hosts,put] np=4"
    "t_matrix[hosts,put,3 proxies,2 daemon threads,4 channels] np=4" "t_chaos[hosts,put] np=4"
    "t_chaos[hosts,put,2 proxies,2 daemon threads,4 channels] np=4"
    "t_chaos[net=ucx,hosts,put,DFCCL_PREEMPT=0 must hang] np=4"
    "t_collmismatch[hosts,put,count,65536 elements] np=4" "t_netkill[teardown race, hosts, put] np=4"
    "t_netkill[teardown race, hosts, put, 2 proxies] np=4"
    "t_netkill[two communicators destroyed in opposite orders, hosts, put] np=2"
    "t_netkill[a peer destroys 3 s later, hosts, put] np=2"
    "t_netkill[200 communicators, shared endpoints, hosts, put] np=3" "t_matrix[mixed,put] np=4"
    "t_matrix[net=ucx,put asked, same host] np=2" "t_matrix[hosts,put asked by even ranks only] np=3"
    "t_netkill[victim waits, hosts, put] np=2" "t_netkill[mid ring allreduce, hosts, put] np=4")

skip_all() {
    local c
    echo "no net transport: $1"
    for c in "${CASES[@]}"; do
        if selected "$c"; then echo "SKIP: $c (no net transport)"; fi
    done
    echo "0 passed, 0 failed"
    exit 0
}

echo "dfccl net suite: binaries $BIN and $NETBIN, logs $LOGDIR"

for p in "$BIN/t_matrix" "$BIN/t_chaos" "$BIN/t_random" "$BIN/t_collmismatch" "$NETBIN/t_netkill"; do
    if [ ! -x "$p" ]; then
        fail "${p##*/}" "missing program $p"
    fi
done
if [ ! -x "$NETBIN/t_netkill" ]; then
    echo "$npass passed, $nfail failed"
    exit 1
fi

# ------------------------------------------------------------------ probe
# Does this library have a net transport? t_netkill --probe with DFCCL_NET=ucx prints
# SKIP when dfcclCommInit says dfcclUnsupported.
probe_log="$LOGDIR/probe_np2.log"
run_mpi "$probe_log" 60 2 -x DFCCL_NET=ucx -x DFCCL_LOG_LEVEL=info -- "$NETBIN/t_netkill" --probe
if [ "$RC" -eq 0 ] && grep -q '^SKIP' "$probe_log"; then
    skip_all "$(grep -m1 '^SKIP' "$probe_log" | cut -c7-300)"
fi
if [ "$RC" -ne 0 ] || ! grep -qx OK "$probe_log"; then
    fail "probe[net=ucx] np=2" "exit $RC: $(reason_of "$probe_log"); log $probe_log" "$probe_log"
    echo "$npass passed, $nfail failed"
    exit 1
fi
if ! transport_lines "$probe_log" | grep -q .; then
    # no per-peer transport line: a library that predates DFCCL_NET ignores it
    lib=$(ldd "$NETBIN/t_netkill" 2> /dev/null | sed -n 's/.*libdfccl[^ ]* => \([^ ]*\).*/\1/p' | head -n 1)
    if [ -n "$lib" ] && [ -r "$lib" ] && ! grep -qa 'DFCCL_NET' "$lib"; then
        skip_all "$lib does not know DFCCL_NET"
    fi
    fail "probe[net=ucx] np=2" "DFCCL_NET=ucx accepted but no 'peer R: transport' line at DFCCL_LOG_LEVEL=info; log $probe_log" "$probe_log"
    echo "$npass passed, $nfail failed"
    exit 1
fi
# the UCX in use and the memory types it carries, said once per communicator and rank
if [ "$(grep -cE 'net transport: UCX [0-9][0-9.]*, memory types: host' "$probe_log")" -lt 2 ]; then
    fail "probe[net=ucx] np=2" "no 'net transport: UCX <version>, memory types: host ...' line per rank at DFCCL_LOG_LEVEL=info; log $probe_log" "$probe_log"
    echo "$npass passed, $nfail failed"
    exit 1
fi
why=$(check_transports "$probe_log" ucx 2)
if [ -n "$why" ]; then
    fail "probe[net=ucx] np=2" "$why; log $probe_log" "$probe_log"
else
    pass "probe[net=ucx] np=2"
fi

# ------------------------------------------------------------------ forced: DFCCL_NET=ucx

for np in $NPS; do
    tm=60
    [ "$np" -ge 8 ] && tm=120
    run_case "t_matrix[net=ucx]" "$np" "$tm" ucx -- t_matrix --quick
done
run_case "t_chaos[net=ucx]" 4 120 ucx -- t_chaos "$CHAOS_ITERS" --deadline 60
run_case "t_random[net=ucx]" 4 120 ucx -- t_random --rounds 8 --deadline 60
# one rank out of memory during dfcclCommInit, each of its set-up's allocations in turn
# (the net transport's exchanges among them): every rank comes back with the same verdict
run_case "t_setupoom[net=ucx,rank 1 out of memory]" 3 90 ucx -- t_setupoom 1
run_case "t_setupoom[net=ucx,steps by put,rank 3 out of memory]" 4 90 ucx -x DFCCL_NET_PUT=on -- t_setupoom 3
# eager steps as one message each (DFCCL_NET_PIECE=0), and in the most pieces a step may
# have (1000 bytes asked: a 64 KiB step is capped at 64 pieces of 1024 bytes)
run_case "t_matrix[net=ucx,whole-step messages]" 3 60 ucx -x DFCCL_NET_PIECE=0 -- t_matrix --quick
run_case "t_matrix[net=ucx,1000-byte pieces]" 2 60 ucx -x DFCCL_NET_PIECE=1000 -- t_matrix --quick
# several proxy threads (lane l on proxy l mod threads) under several daemon threads
PX=(-x DFCCL_CPU_THREADS=2 -x DFCCL_CHANNELS=4)
run_case "t_matrix[net=ucx,3 proxies,2 daemon threads,4 channels]" 4 120 ucx "${PX[@]}" -x DFCCL_NET_THREADS=3 \
    -- t_matrix --quick
run_case "t_chaos[net=ucx,2 proxies,2 daemon threads,4 channels]" 4 120 ucx "${PX[@]}" -x DFCCL_NET_THREADS=2 \
    -- t_chaos "$CHAOS_ITERS" --deadline 60

# One collective called differently on the last rank, every peer over UCX: the step's
# signature tag travels in the proxy's header, and the stall's diagnosis asks the peers
# for their descriptions over the proxy (AM_ASK, AM_DESC), so every rank errors at that
# call or its next, naming the difference, as on shared memory (before: count and kind
# hung, op, datatype and roots returned wrong data). two-roots: nobody stalls, and net
# peers are not asked at the next call; the first call that reuses the bcast's
# connections stalls on the step left there and names it (t_collmismatch makes up to 16).
for m in $COLLMISMATCH_CASES; do
    run_case "t_collmismatch[net=ucx,$m]" 3 60 ucx -- t_collmismatch "$m"
    run_case "t_collmismatch[net=ucx,$m,65536 elements]" 4 60 ucx -- t_collmismatch "$m" --elems 65536
done

# With preemption off, ranks that submit the chaos collectives in different orders
# must deadlock over UCX too: HANG and exit 3 (or the watchdog kills the job).
# hang_proof [TAG mpirun args...]: TAG names the variant in the case name
# (--wrap W: run the program under wrapper W; --steps put: the set-up lines must say puts)
hang_proof() {
    local np=4 tag=${1:-} wrap= steps= why
    shift || true
    local -a margs=()
    while [ $# -gt 0 ]; do
        case "$1" in
        --wrap)
            wrap=$2
            shift 2
            ;;
        --steps)
            steps=$2
            shift 2
            ;;
        *) margs+=("$1") && shift ;;
        esac
    done
    local id="t_chaos[net=ucx,${tag:+$tag,}DFCCL_PREEMPT=0 must hang] np=$np"
    selected "$id" || return 0
    local log
    log=$(logname "t_chaos_nopreempt_ucx${tag:+_$tag}_np$np")
    local vb
    vb=$(vader_list)
    run_mpi "$log" 60 "$np" -x DFCCL_NET=ucx "${margs[@]}" -x DFCCL_PREEMPT=0 -- ${wrap:+"$wrap"} "$BIN/t_chaos" \
        "$CHAOS_ITERS" --deadline 10
    vader_cleanup_since "$vb"
    if [ -n "$steps" ] && why=$(STEPS=$steps check_steps "$log" "$np") && [ -n "$why" ]; then
        fail "$id" "$why; log $log" "$log"
    elif [ "$RC" -eq 3 ] || [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ] || grep -q '^HANG:' "$log"; then
        if [ "$RC" -eq 0 ]; then
            fail "$id" "exit 0 despite HANG lines; log $log" "$log"
        else
            pass "$id (hung as expected: exit $RC)"
        fi
    elif [ "$RC" -eq 0 ] || grep -qx 'OK' "$log"; then
        fail "$id" "completed with preemption off: no deadlock; log $log" "$log"
    else
        fail "$id" "exit $RC without a HANG report: $(reason_of "$log"); log $log" "$log"
    fi
}
hang_proof
hang_proof "2 proxies,2 daemon threads,4 channels" "${PX[@]}" -x DFCCL_NET_THREADS=2

# ------------------------------------------------------------------ steps by put
# DFCCL_NET_PUT=on: each step goes by RDMA put straight into the peer's registered FIFO,
# then its header alone; a leaving rank waits for its peers' answers to its goodbye
# before its segment goes. Host memory goes by put to peers on other hosts only (a cma
# put to a same-host peer that died would abort the process), so these cases give every
# rank a host of its own (hosts: UCX over tcp, which carries the puts in messages of its
# own). Every set-up line must say puts (STEPS=put) and no teardown may wait out a peer;
# the same cases as above must pass: the matrix (element by element), several proxies,
# the chaos order and its hang proof, a mismatch, teardown races (also two communicators
# destroyed in opposite orders, and a peer that keeps its communicator 3 s longer: its
# proxy answers the goodbye), killed peers. Same-host peers (DFCCL_NET=ucx) and a rank
# that does not ask (the wrapper: only even ranks ask) make active messages (STEPS=am).
PUT=(-x DFCCL_NET_PUT=on)
PUTWRAP="$LOGDIR/putwrap.sh"
cat > "$PUTWRAP" << 'EOF'
#!/bin/sh
r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-0}}
[ $((r % 2)) -eq 0 ] && export DFCCL_NET_PUT=on
exec "$@"
EOF
chmod +x "$PUTWRAP"
for np in 2 4; do
    STEPS=put run_case "t_matrix[hosts,put]" "$np" 120 hosts "${PUT[@]}" -- t_matrix --quick
done
# DFCCL_NET_PUT_MIN: steps below it go as active messages, the rest by put, one
# connection mixing both (the default 16 KiB and 4 KiB split the matrix's steps of up to
# 64 KiB differently); 0: every step by put
STEPS=put run_case "t_matrix[hosts,put,every step by put]" 3 120 hosts "${PUT[@]}" -x DFCCL_NET_PUT_MIN=0 \
    -- t_matrix --quick
STEPS=put run_case "t_matrix[hosts,put,put_min 4096]" 3 120 hosts "${PUT[@]}" -x DFCCL_NET_PUT_MIN=4096 \
    -- t_matrix --quick
STEPS=put run_case "t_matrix[hosts,put,3 proxies,2 daemon threads,4 channels]" 4 120 hosts "${PUT[@]}" "${PX[@]}" \
    -x DFCCL_NET_THREADS=3 -- t_matrix --quick
STEPS=put run_case "t_chaos[hosts,put]" 4 120 hosts "${PUT[@]}" -- t_chaos "$CHAOS_ITERS" --deadline 60
STEPS=put run_case "t_chaos[hosts,put,2 proxies,2 daemon threads,4 channels]" 4 120 hosts "${PUT[@]}" "${PX[@]}" \
    -x DFCCL_NET_THREADS=2 -- t_chaos "$CHAOS_ITERS" --deadline 60
hang_proof "hosts,put" "${PUT[@]}" -x DFCCL_LOG_LEVEL=info --wrap "$HOSTSWRAP" --steps put
STEPS=put run_case "t_collmismatch[hosts,put,count,65536 elements]" 4 60 hosts "${PUT[@]}" -- t_collmismatch count --elems 65536
STEPS=put run_case "t_netkill[teardown race, hosts, put]" 4 120 hosts "${PUT[@]}" -- "$NETBIN/t_netkill" --teardown 30
STEPS=put run_case "t_netkill[teardown race, hosts, put, 2 proxies]" 4 120 hosts "${PUT[@]}" -x DFCCL_NET_THREADS=2 \
    -x DFCCL_CHANNELS=2 -- "$NETBIN/t_netkill" --teardown 30
STEPS=put run_case "t_netkill[two communicators destroyed in opposite orders, hosts, put]" 2 120 hosts "${PUT[@]}" \
    -- "$NETBIN/t_netkill" --teardown 12 --cross
STEPS=put run_case "t_netkill[a peer destroys 3 s later, hosts, put]" 2 60 hosts "${PUT[@]}" \
    -- "$NETBIN/t_netkill" --teardown 2 --destroy-late-ms 3000
STEPS=put run_case "t_netkill[200 communicators, shared endpoints, hosts, put]" 3 120 hosts "${PUT[@]}" \
    -- "$NETBIN/t_netkill" --teardown 200 --keep
STEPS=put run_case "t_matrix[mixed,put]" 4 120 mixed "${PUT[@]}" -- t_matrix --quick
STEPS=am run_case "t_matrix[net=ucx,put asked, same host]" 2 60 ucx "${PUT[@]}" -- t_matrix --quick
STEPS=am run_case "t_matrix[hosts,put asked by even ranks only]" 3 120 hosts -- "$PUTWRAP" "$BIN/t_matrix" --quick

# ------------------------------------------------------------------ mixed locality

run_case "t_matrix[mixed]" 4 120 mixed -- t_matrix --quick
run_case "t_chaos[mixed]" 4 120 mixed -- t_chaos "$CHAOS_ITERS" --deadline 60
# a mismatch found across both transports: the finder marks its shared-memory peers and
# tells its net peers; two-roots: the last root finds the first's description through a
# shared-memory peer at its next call
run_case "t_collmismatch[mixed,count]" 4 60 mixed -- t_collmismatch count
run_case "t_collmismatch[mixed,two-roots]" 4 60 mixed -- t_collmismatch two-roots

# ------------------------------------------------------------------ killed rank
# killed_case NAME NP [t_netkill args...]
# The victim (rank 1) raises SIGKILL; every survivor must print "OK: peer failure
# reported" (its pending allreduce failed, a later barrier failed, the communicator
# was destroyed), nobody may print HANG or FAIL, and a dfccl error/warning line must
# name the dead peer (rank 1). mpirun's exit status is not looked at: with
# --enable-recovery it is 0 or not depending on the Open MPI version.
killed_case() {
    local name=$1 np=$2
    shift 2
    local id="$name np=$np"
    selected "$id" || return 0
    local log
    log=$(logname "${name}_np$np")
    local vb before after leaked nok nsurv why tmo=$((KILL_DEADLINE * 3 + 30))
    vb=$(vader_list)
    before=$(shm_list)
    local pre=()
    [ -n "${KILL_WRAP:-}" ] && pre=("$WRAP")       # DFCCL_HOST by rank parity
    [ -n "${KILL_HOSTS:-}" ] && pre=("$HOSTSWRAP") # every rank a host of its own
    [ -n "${KILL_NS:-}" ] && pre=("$NSWRAP") # odd ranks in pid namespaces of their own
    local -a km=()
    [ -n "${KILL_MARGS:-}" ] && read -r -a km <<< "$KILL_MARGS" # extra mpirun arguments
    run_mpi "$log" "$tmo" "$np" --enable-recovery -x DFCCL_NET="${KILL_NET:-ucx}" "${km[@]}" -- \
        "${pre[@]}" "$NETBIN/t_netkill" --deadline "$KILL_DEADLINE" "$@"
    vader_cleanup_since "$vb"
    after=$(shm_list)
    leaked=$(shm_leaked_since "$before" "$after")
    nok=$(grep -c '^OK: peer failure reported' "$log")
    nsurv=$(grep -c "^OK: survivors' communicator still works" "$log")
    local times
    times=$(sed -n 's/^OK: peer failure reported on rank \([0-9]*\) after \([0-9.]*\) s.*/\2/p' "$log" | sort -n | tail -n 1)
    if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then
        fail "$id" "timed out after ${tmo}s: $(reason_of "$log"); log $log" "$log"
    elif grep -q '^HANG' "$log"; then
        fail "$id" "$(grep -m1 '^HANG' "$log"); log $log" "$log"
    elif grep -q 'FAIL' "$log"; then
        fail "$id" "$(grep -m1 'FAIL' "$log" | cut -c1-300); log $log" "$log"
    elif [ -n "${KILL_STEPS:-}" ] && why=$(STEPS=$KILL_STEPS check_steps "$log" "$np") && [ -n "$why" ]; then
        fail "$id" "$why; log $log" "$log"
    elif ! grep -q '^t_netkill: victim rank 1 ' "$log"; then
        fail "$id" "the victim never got to the kill: $(reason_of "$log"); log $log" "$log"
    elif [ "$nok" -ne $((np - 1)) ]; then
        fail "$id" "$nok of $((np - 1)) survivors reported the failure: $(reason_of "$log"); log $log" "$log"
    elif [[ " $* " == *" --survivor-comm "* ]] && [ "$nsurv" -ne $((np - 1)) ]; then
        fail "$id" "$nsurv of $((np - 1)) survivors could use their own communicator after the failure; log $log" "$log"
    elif ! grep -iE '^\[dfccl [0-9]+\] (error|warn)' "$log" | grep -qE '(peer|rank) 1([^0-9]|$)'; then
        fail "$id" "no dfccl error/warning line names the dead peer (rank 1); log $log" "$log"
    elif [ -n "$leaked" ]; then
        fail "$id" "shared memory left behind: ${leaked//$'\n'/ }; log $log" "$log"
    else
        local codes
        codes=$(sed -n 's/^OK: peer failure reported.*: result [-0-9]* (\([A-Za-z]*\)).*/\1/p' "$log" | sort -u | tr '\n' ' ')
        pass "$id (survivors failed with ${codes% } within ${times}s)"
    fi
}
# Ranks leave a collective and destroy its communicator at slightly different times
# (then meet in MPI_Barrier): a peer's destroy must not make this rank's collective fail.
# a stray UCX peer (t_netstray: rank 1 connects to rank 0's proxy worker from a context
# of its own) sends active messages under ids dfccl does not use and malformed ones
# under its own: rank 0 drops them and its communicator still works after each id
run_case "t_netstray[stray active messages]" 2 60 ucx -- "$NETBIN/t_netstray"
run_case "t_netstray[stray active messages, UCX_TLS=tcp,self]" 2 60 ucx -x UCX_TLS=tcp,self -- "$NETBIN/t_netstray"
run_case "t_netkill[teardown race, 50 rounds]" 2 120 ucx -- "$NETBIN/t_netkill" --teardown 50
run_case "t_netkill[teardown race, 50 rounds]" 4 120 ucx -- "$NETBIN/t_netkill" --teardown 50
run_case "t_netkill[teardown race, 2 proxies]" 4 120 ucx -x DFCCL_NET_THREADS=2 -x DFCCL_CHANNELS=2 \
    -- "$NETBIN/t_netkill" --teardown 50

# Endpoints are per peer process, shared by its communicators: churning communicators
# while one stays open (the workers live on) reuses them, so descriptors stay put even
# at ulimit -n 256 (one endpoint per communicator over tcp ran out after ~110)
FDLIM="$LOGDIR/fdlimit.sh"
printf '#!/bin/sh\nulimit -n 256 && exec "$@"\n' > "$FDLIM"
chmod +x "$FDLIM"
for np in 2 3; do
    run_case "t_netkill[1000 communicators, shared endpoints]" "$np" 120 ucx \
        -- "$FDLIM" "$NETBIN/t_netkill" --teardown 1000 --keep
done
for np in 2 3; do
    run_case "t_netkill[400 communicators, shared endpoints, UCX_TLS=tcp,self]" "$np" 120 ucx -x UCX_TLS=tcp,self \
        -- "$FDLIM" "$NETBIN/t_netkill" --teardown 400 --keep
done
run_case "t_netkill[300 communicators, shared endpoints, a peer's workers renewed, UCX_TLS=tcp,self]" 3 120 ucx \
    -x UCX_TLS=tcp,self -- "$FDLIM" "$NETBIN/t_netkill" --teardown 300 --keep-sub

killed_case "t_netkill[victim waits]" 2
killed_case "t_netkill[victim waits]" 4
killed_case "t_netkill[mid ring allreduce]" 4 --mid --count 4194304
killed_case "t_netkill[survivors' communicator]" 3 --survivor-comm
# every peer on UCX, and DFCCL_HOST by parity: the victim (rank 1, "hostB") is another
# host to ranks 0 and 2 (error-reporting endpoints: UCX reports it) and the same host
# to rank 3 (no error handling: the proxy's process watch finds it)
KILL_WRAP=1 killed_case "t_netkill[other-host and same-host peers]" 4 --mid --count 4194304
# a dead peer aborts every communicator on its endpoints, found by the process watch
# (same host) and by UCX's error report (other host)
killed_case "t_netkill[4 communicators on shared endpoints]" 3 --comms 4
KILL_WRAP=1 killed_case "t_netkill[4 communicators on shared endpoints, other-host and same-host peers]" 4 \
    --comms 4 --mid --count 1048576
KILL_MARGS="-x DFCCL_NET_THREADS=2 -x DFCCL_CHANNELS=2" killed_case "t_netkill[mid ring allreduce, 2 proxies]" 4 \
    --mid --count 4194304
# steps by put, every rank a host of its own: a survivor's teardown does not wait for the
# dead peer's answer
KILL_HOSTS=1 KILL_STEPS=put KILL_MARGS="-x DFCCL_NET_PUT=on -x DFCCL_LOG_LEVEL=info" \
    killed_case "t_netkill[victim waits, hosts, put]" 2
KILL_HOSTS=1 KILL_STEPS=put KILL_MARGS="-x DFCCL_NET_PUT=on -x DFCCL_LOG_LEVEL=info" \
    killed_case "t_netkill[mid ring allreduce, hosts, put]" 4 --mid --count 4194304

# the same over shared memory (DFCCL_NET=auto, one host): no UCX to report the death; the
# waiting daemon finds the peer's process gone (its pid, and start time, from its
# segment's name) within ENG_PEER_CHECK_NS, without DFCCL_TIMEOUT; a peer that destroyed
# the communicator first (the teardown race) is never taken for dead
KILL_NET=auto killed_case "t_netkill[shared memory, victim waits]" 2
KILL_NET=auto killed_case "t_netkill[shared memory, mid ring allreduce]" 4 --mid --count 4194304
KILL_NET=auto killed_case "t_netkill[shared memory, survivors' communicator]" 3 --survivor-comm
run_case "t_netkill[teardown race, shared memory]" 4 120 shm -- "$NETBIN/t_netkill" --teardown 50
# a peer in another pid namespace (rank 1; a container sharing /dev/shm): found by its
# heartbeat within ENG_BEAT_DEAD_NS, and a live one that is late is not taken for dead
if [ "$NS_OK" = 1 ]; then
    NSM="--mca btl_vader_single_copy_mechanism none"
    KILL_NET=auto KILL_NS=1 KILL_MARGS="$NSM" killed_case "t_netkill[other pid namespaces, victim waits]" 2
    KILL_NET=auto KILL_NS=1 KILL_MARGS="$NSM" killed_case "t_netkill[other pid namespaces, mid ring allreduce]" 4 \
        --mid --count 4194304
    run_case "t_netkill[other pid namespaces, a live peer 2 s late]" 3 60 ns -- "$NETBIN/t_netkill" --probe --late-ms 2000
else
    for c in "t_netkill[other pid namespaces, victim waits] np=2" "t_netkill[other pid namespaces, mid ring allreduce] np=4" \
        "t_netkill[other pid namespaces, a live peer 2 s late] np=3"; do
        selected "$c" && echo "SKIP: $c (unshare --pid is not allowed here)"
    done
fi

# ------------------------------------------------------------------ network namespaces
# test/net/netns.sh: ranks in two network namespaces joined by a veth pair (root only;
# it prints SKIP itself where namespaces cannot be made). Its PASS/FAIL lines count here.
netns_cases() {
    selected "netns" || return 0
    [ "${SUITE_NETNS:-1}" = 0 ] && return 0
    local script
    script="$(dirname "${BASH_SOURCE[0]}")/netns.sh"
    if [ ! -x "$NETBIN/t_netns" ]; then
        echo "SKIP: netns (no program $NETBIN/t_netns)"
        return 0
    fi
    local log
    log=$(logname netns)
    NETNS_LOGDIR="$LOGDIR/netns" timeout -k 10 600 bash "$script" "$NETBIN/t_netns" > "$log" 2>&1
    local rc=$? line
    local -a lines
    mapfile -t lines < "$log"
    for line in "${lines[@]}"; do
        case "$line" in
        PASS:*) pass "${line#PASS: }" ;;
        FAIL:*) fail "${line#FAIL: }" "see $log" "$log" ;;
        SKIP:*) echo "$line" ;;
        esac
    done
    if [ "$rc" -ne 0 ] && ! grep -q '^FAIL:' "$log"; then
        fail "netns" "netns.sh exit $rc: $(reason_of "$log"); log $log" "$log"
    fi
}
netns_cases

# ------------------------------------------------------------------ summary
kill_orphans
echo "$npass passed, $nfail failed"
if [ "$nfail" -gt 0 ]; then
    for f in "${FAILED[@]}"; do echo "  failed: $f"; done
    exit 1
fi
exit 0

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The net transport across a real network interface, on one machine: two network
# namespaces joined by a veth pair, ranks of dfccl in both, every collective between
# the namespaces over UCX on TCP through the veth.
#
# usage: netns.sh T_NETNS_BINARY      (test/net/t_netns, built against libdfccl)
#
# The script creates (and always removes) two namespaces "dfccl<PID>a" / "dfccl<PID>b"
# and a veth pair with the private addresses 10.200.0.1/24 and 10.200.0.2/24, which
# exist only inside the namespaces. t_netns bootstraps through files in a temporary
# directory (MPI's launcher cannot reach processes in other namespaces: its PMIx runs
# over loopback TCP). Each side also gets a UTS namespace with a host name of its own
# (`unshare --uts`), so the transport treats the other side as another host, as in a
# real multi-node run: error-reporting endpoints, rendezvous. Cases:
#   np=2  one rank per namespace (DFCCL_HOST=nsA / nsB: the peer is on UCX)
#   np=4  two ranks per namespace: shared memory inside a namespace, UCX across
# A case passes when every rank prints "OK rank R", the engine logged the expected
# per-peer transports (and, with own host names, peers on other hosts), and the veth counted at least NETNS_MIN_BYTES (default 16 MiB)
# sent each way. One line per case: "PASS: ..." / "FAIL: ... (reason)", then
# "N passed, N failed"; exit status non-zero on a failure. Without root or without
# `ip netns` support it prints SKIP and "0 passed, 0 failed" and exits 0.
#
# Environment: NETNS_ITERS (chaos iterations, default 10), NETNS_TIMEOUT (s per case,
# default 180), NETNS_MIN_BYTES, NETNS_LOGDIR (default a new /tmp/dfccl-netns.XXXXXX),
# DFCCL_* (passed on; DFCCL_NET, DFCCL_HOST and DFCCL_LOG_LEVEL are set per rank).
set -u

if [ $# -lt 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 T_NETNS_BINARY" >&2
    exit 2
fi
PROG=$(readlink -f "$1")
ITERS=${NETNS_ITERS:-10}
TMO=${NETNS_TIMEOUT:-180}
MIN_BYTES=${NETNS_MIN_BYTES:-16777216}
LOGDIR=${NETNS_LOGDIR:-$(mktemp -d /tmp/dfccl-netns.XXXXXX)}
mkdir -p "$LOGDIR"

NSA="dfccl$$a"
NSB="dfccl$$b"
DEVA="dfv$$a"
DEVB="dfv$$b"
PIDS=()
npass=0
nfail=0

skip() {
    echo "SKIP: netns (np=2, np=4): $1"
    echo "0 passed, 0 failed"
    exit 0
}

cleanup() {
    local p
    for p in "${PIDS[@]}"; do
        kill -TERM "$p" 2>/dev/null
    done
    ip netns del "$NSA" 2>/dev/null # takes its end of the veth pair, and so the pair, along
    ip netns del "$NSB" 2>/dev/null
    return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ "$(id -u)" = 0 ] || skip "needs root (ip netns)"
command -v ip >/dev/null 2>&1 || skip "no ip command (iproute2)"
ip netns add "$NSA" 2>"$LOGDIR/setup.err" || skip "ip netns add failed: $(head -c 200 "$LOGDIR/setup.err")"
if ! {
    ip netns add "$NSB" &&
        ip link add "$DEVA" type veth peer name "$DEVB" &&
        ip link set "$DEVA" netns "$NSA" &&
        ip link set "$DEVB" netns "$NSB" &&
        ip -n "$NSA" addr add 10.200.0.1/24 dev "$DEVA" &&
        ip -n "$NSB" addr add 10.200.0.2/24 dev "$DEVB" &&
        ip -n "$NSA" link set lo up &&
        ip -n "$NSB" link set lo up &&
        ip -n "$NSA" link set "$DEVA" up &&
        ip -n "$NSB" link set "$DEVB" up
} 2>>"$LOGDIR/setup.err"; then
    ip link del "$DEVA" 2>/dev/null
    skip "could not set up the veth pair: $(head -c 200 "$LOGDIR/setup.err")"
fi

# each side in a UTS namespace with a host name of its own, when util-linux has
# `unshare` (else both keep this machine's name)
WRAP="$LOGDIR/uts.sh"
if unshare --uts true 2>/dev/null; then
    printf '%s\n' '#!/bin/sh' 'name=$1; shift' \
        'exec unshare --uts sh -c '"'"'hostname "$0" && exec "$@"'"'"' "$name" "$@"' > "$WRAP"
    UTS_NOTE="own host names"
else
    printf '%s\n' '#!/bin/sh' 'shift' 'exec "$@"' > "$WRAP"
    UTS_NOTE="one host name"
fi
chmod +x "$WRAP"

# bytes sent by a namespace's end of the pair
tx_bytes() { ip netns exec "$1" cat "/sys/class/net/$2/statistics/tx_bytes" 2>/dev/null || echo 0; }

echo "dfccl netns test: $PROG, namespaces $NSA ($DEVA 10.200.0.1) and $NSB ($DEVB 10.200.0.2), $UTS_NOTE, logs $LOGDIR"

# run_case NP: ranks 0 .. NP/2-1 in namespace A, the others in B
run_case() {
    local np=$1 id="netns[ucx over veth] np=$1" r ns dev host
    local dir="$LOGDIR/boot_np$np"
    rm -rf "$dir"
    mkdir -p "$dir"
    local txa0 txb0 txa txb
    txa0=$(tx_bytes "$NSA" "$DEVA")
    txb0=$(tx_bytes "$NSB" "$DEVB")
    PIDS=()
    for ((r = 0; r < np; r++)); do
        if [ "$r" -lt $((np / 2)) ]; then
            ns=$NSA dev=$DEVA host=nsA
        else
            ns=$NSB dev=$DEVB host=nsB
        fi
        # its own UTS namespace and host name too: the net transport then treats the
        # other namespace as another host (error-reporting endpoints, rendezvous), the
        # configuration of a real multi-node run
        ip netns exec "$ns" "$WRAP" "dfccl-$host" env DFCCL_NET=auto DFCCL_HOST="$host" DFCCL_LOG_LEVEL=info \
            UCX_TLS=tcp UCX_NET_DEVICES="$dev" \
            timeout -s TERM -k 10 "$TMO" "$PROG" "$r" "$np" "$dir" --iters "$ITERS" \
            >"$LOGDIR/np${np}_rank$r.log" 2>&1 </dev/null &
        PIDS+=($!)
    done
    local rcs=() p
    for p in "${PIDS[@]}"; do
        wait "$p"
        rcs+=($?)
    done
    PIDS=()
    txa=$(($(tx_bytes "$NSA" "$DEVA") - txa0))
    txb=$(($(tx_bytes "$NSB" "$DEVB") - txb0))

    local why="" log rank_host peer want got
    for ((r = 0; r < np; r++)); do
        log="$LOGDIR/np${np}_rank$r.log"
        if grep -q '^SKIP' "$log"; then
            why="rank $r: $(grep -m1 '^SKIP' "$log")"
            break
        elif [ "${rcs[$r]}" -ne 0 ] || ! grep -q "^OK rank $r" "$log"; then
            why="rank $r exit ${rcs[$r]}: $(grep -m1 -E 'FAIL|HANG|ERROR|error' "$log" | cut -c1-250); log $log"
            break
        fi
        # per-peer transports: same namespace (same DFCCL_HOST) shm, the other one ucx
        rank_host=$((r < np / 2 ? 0 : 1))
        while read -r peer got; do
            want=ucx
            [ $((peer < np / 2 ? 0 : 1)) -eq "$rank_host" ] && want=shm
            if [ "$got" != "$want" ]; then
                why="rank $r: peer $peer on transport $got, expected $want; log $log"
                break 2
            fi
        done < <(sed -n -E 's/.*peer ([0-9]+): transport ([a-z]+).*/\1 \2/p' "$log")
        if ! grep -q 'transport ucx' "$log"; then
            why="rank $r logged no 'transport ucx' line; log $log"
            break
        fi
        # with host names of their own, the other namespace is another host to UCX too
        if [ "$UTS_NOTE" = "own host names" ] && ! grep -q '[1-9][0-9]* on other hosts' "$log"; then
            why="rank $r: no peer on another host's endpoints despite its own host name; log $log"
            break
        fi
    done
    if [ -z "$why" ] && { [ "$txa" -lt "$MIN_BYTES" ] || [ "$txb" -lt "$MIN_BYTES" ]; }; then
        why="only $txa / $txb bytes crossed $DEVA / $DEVB (expected at least $MIN_BYTES each way)"
    fi
    if [[ "$why" == *SKIP* ]]; then
        echo "SKIP: $id (${why#*SKIP: })"
    elif [ -n "$why" ]; then
        echo "FAIL: $id ($why)"
        nfail=$((nfail + 1))
    else
        echo "PASS: $id ($txa B sent $NSA->$NSB, $txb B back; $(grep -h -o '[0-9]* preemptions' "$LOGDIR"/np"${np}"_rank*.log | awk '{ s += $1 } END { print s }') preemptions)"
        npass=$((npass + 1))
    fi
}

run_case 2
run_case 4

echo "$npass passed, $nfail failed"
[ "$nfail" -eq 0 ]

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# deadlock_pictures.sh BUILD_DIR [OUT_DIR]
#
# Draws the deadlock demo (BUILD_DIR/examples/deadlock_demo) on 4 ranks with host
# buffers (DFCCL_GPU=0) under DFCCL_TRACE, with tools/dfccl-trace svg, into OUT_DIR
# (default: this script's directory, docs/):
#   deadlock-timeline.svg  preemption on (the default): 6 ms around the moment the last
#                          rank submitted the second iteration's all-reduces, when all 8
#                          communicators' collectives interleave on every rank (the
#                          picture in docs/architecture.md, "Seeing it")
#   deadlock-hang.svg      DFCCL_PREEMPT=0, DFCCL_TIMEOUT=3000: every rank stays in the
#                          first collective of its own order until the timeout fails it.
#                          Only where the processes write their trace although the demo
#                          ends in MPI_Abort on the timeout: else the script says so and
#                          exits 1 (after making the first picture)
# No two runs draw the same picture: the ranks' timing is the machine's.
#
# Open MPI's mpirun. Environment: MPIRUN (default mpirun), MPIRUN_ARGS (default
# "--oversubscribe --bind-to none --mca btl self,vader", plus --allow-run-as-root as root).
set -u

if [ $# -lt 1 ] || [ ! -x "$1/examples/deadlock_demo" ]; then
    echo "usage: $0 BUILD_DIR [OUT_DIR]   (BUILD_DIR holds examples/deadlock_demo)" >&2
    exit 2
fi
DEMO=$(cd "$1/examples" && pwd)/deadlock_demo
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${2:-$HERE}
mkdir -p "$OUT" || exit 1
TOOL="$HERE/../tools/dfccl-trace"
read -r -a MPIRUN <<< "${MPIRUN:-mpirun} ${MPIRUN_ARGS:---oversubscribe --bind-to none --mca btl self,vader}"
[ "$(id -u)" -eq 0 ] && MPIRUN+=(--allow-run-as-root)
TMP=$(mktemp -d /tmp/dfccl-pictures.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# (a) preemption on: every collective completes
timeout 120 "${MPIRUN[@]}" -np 4 -x DFCCL_TRACE="$TMP/on" -x DFCCL_GPU=0 -x DFCCL_PREEMPT=1 "$DEMO" \
    > "$TMP/on.log" 2>&1
rc=$?
files=("$TMP"/on.*.json)
if [ "$rc" -ne 0 ] || [ "${#files[@]}" -ne 4 ] || [ ! -f "${files[0]}" ]; then
    cat "$TMP/on.log" >&2
    echo "$0: the demo with preemption: exit $rc, ${#files[@]} trace files" >&2
    exit 1
fi
# The window: from 1.5 ms before the last rank submitted its first all-reduce of the
# second iteration (before it, the others stall on it: "late") to 4.5 ms after it.
read -r from to < <(python3 - "${files[@]}" << 'EOF'
import json, sys
events = []
for path in sys.argv[1:]:
    text = open(path).read().strip().rstrip(",")
    events += json.loads(text if text.endswith("]") else text + "]")  # left open by the writer
events = [e for e in events if e.get("cat") in ("submit", "run", "complete")]
t0 = min(e["ts"] for e in events)
first = {}  # rank -> its first submission of sequence number 1
for e in events:
    if e["cat"] == "submit" and e["args"]["seq"] == 1:
        first[e["pid"]] = min(first.get(e["pid"], e["ts"]), e["ts"])
last = (max(first.values()) - t0) / 1e3
print("%.1f %.1f" % (max(last - 1.5, 0), last + 4.5))
EOF
)
python3 "$TOOL" svg -o "$OUT/deadlock-timeline.svg" --from-ms "$from" --to-ms "$to" \
    --title "deadlock_demo, 4 ranks, 8 communicators, preemption on: iteration 2 begins" "${files[@]}" || exit 1

# (b) preemption off: the ranks deadlock; DFCCL_TIMEOUT fails each rank's stuck
# collective after 3 s, and the demo exits with an error (not 0) on it
timeout 60 "${MPIRUN[@]}" -np 4 -x DFCCL_TRACE="$TMP/off" -x DFCCL_GPU=0 -x DFCCL_PREEMPT=0 \
    -x DFCCL_TIMEOUT=3000 "$DEMO" > "$TMP/off.log" 2>&1
rc=$?
files=("$TMP"/off.*.json)
if [ "$rc" -eq 0 ] || [ ! -f "${files[0]}" ]; then
    cat "$TMP/off.log" >&2
    echo "$0: the demo without preemption: exit $rc (expected an error); no DFCCL_TRACE file: the" \
        "processes ended without writing one; deadlock-hang.svg not made" >&2
    exit 1
fi
python3 "$TOOL" svg -o "$OUT/deadlock-hang.svg" \
    --title "deadlock_demo, 4 ranks, DFCCL_PREEMPT=0, DFCCL_TIMEOUT=3000: every rank stuck until the timeout" \
    "${files[@]}"

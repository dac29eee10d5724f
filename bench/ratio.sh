#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# ratio.sh BENCH_BINARY
#
# Cost of preemption: runs dfccl-bench (allreduce, 8 B to 64 MiB) on 2 and 4
# ranks with DFCCL_PREEMPT=1 and DFCCL_PREEMPT=0, alternating on/off run by run
# (on,off then off,on ...) so that slow drifts of the machine hit both alike,
# REPS repetitions of each. For every size it prints the median over the
# repetitions of the bench's time column (itself the median over iterations of
# the slowest rank), and the ratio on/off (> 1: preemption costs time). The last
# column is the same ratio computed from the bench's min column (fastest
# iteration), less sensitive to other load on the machine.
#
# Environment: NPS (default "2 4"), REPS (default 3),
#   BENCH_ARGS (default "-k allreduce -d float -b 8 -e 64M -f 2"),
#   MPIRUN (default mpirun),
#   MPIRUN_ARGS (default "--allow-run-as-root --oversubscribe --mca btl self,vader"),
#   GUARD (timeout of one bench run in seconds, default 120),
#   KEEP (a directory: keep the raw bench outputs there).
set -u

if [ $# -lt 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 BENCH_BINARY   (path to the built dfccl-bench)" >&2
    exit 2
fi
BENCH=$(readlink -f "$1")
NPS=${NPS:-2 4}
REPS=${REPS:-3}
BENCH_ARGS=${BENCH_ARGS:--k allreduce -d float -b 8 -e 64M -f 2}
MPIRUN=${MPIRUN:-mpirun}
MPIRUN_ARGS=${MPIRUN_ARGS:---allow-run-as-root --oversubscribe --mca btl self,vader}
GUARD=${GUARD:-120}

FORWARD=()
if "$MPIRUN" --version 2>/dev/null | grep -q "Open MPI"; then
    FORWARD=(-x DFCCL_PREEMPT)
fi

if [ -n "${KEEP:-}" ]; then
    DIR=$KEEP
    mkdir -p "$DIR" || exit 2
else
    DIR=$(mktemp -d)
    trap 'rm -rf "$DIR"' EXIT
fi

cleanup_orphans() {
    local pat
    pat="^$(printf '%s' "$BENCH" | sed 's/[][\.*^$+?(){}|]/\\&/g')( |\$)"
    if pgrep -f -- "$pat" >/dev/null 2>&1; then
        echo "# killing leftover bench processes: $(pgrep -f -- "$pat" | tr '\n' ' ')" >&2
        pkill -KILL -f -- "$pat" 2>/dev/null
        sleep 1
    fi
}

failed=0
# $1 np, $2 preempt (1|0), $3 repetition
run_one() {
    local np=$1 pre=$2 rep=$3 out rc
    out="$DIR/np$np.pre$pre.rep$rep.txt"
    # shellcheck disable=SC2086  # word lists
    DFCCL_PREEMPT=$pre timeout -k 10 "$GUARD" \
        "$MPIRUN" -np "$np" $MPIRUN_ARGS "${FORWARD[@]}" "$BENCH" $BENCH_ARGS >"$out" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "# FAILED: $np ranks DFCCL_PREEMPT=$pre repetition $rep: exit status $rc" \
            "$([ $rc -ge 124 ] && echo "(timeout after ${GUARD} s?)")"
        grep -E "Out of bounds|dfccl-bench:|ERROR|rror while" "$out" | sed 's/^/#   /' | head -4
        failed=1
        cleanup_orphans
    fi
}

start=$(date +%s)
echo "# ratio.sh: $(basename "$BENCH") $BENCH_ARGS"
echo "# ranks: $NPS; $REPS repetitions per setting, DFCCL_PREEMPT on/off alternating"
for np in $NPS; do
    for rep in $(seq 1 "$REPS"); do
        if [ $((rep % 2)) -eq 1 ]; then order="1 0"; else order="0 1"; fi
        for pre in $order; do
            run_one "$np" "$pre" "$rep"
        done
    done

    echo "#"
    echo "# $np ranks: median over $REPS runs of the time column (us); ratio = on/off"
    printf "# %10s %12s %12s %8s %10s\n" "size(B)" "time_on" "time_off" "on/off" "min:on/off"
    # Data lines of dfccl-bench: column 1 size, column 6 time (us).
    awk -v reps="$REPS" '
        function median(list,   n, a, i, j, t) {
            n = split(list, a, " ")
            for (i = 2; i <= n; i++) {
                t = a[i] + 0
                for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]
                a[j + 1] = t
            }
            if (n == 0) return -1
            return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        FNR == 1 { pre = (FILENAME ~ /\.pre1\.rep[0-9]+\.txt$/) ? "on" : "off" }
        /^#/ || NF < 9 || $1 !~ /^[0-9]+$/ { next }
        {
            size = $1 + 0
            if (!(size in seen)) { seen[size] = 1; sizes[++ns] = size }
            t[size, pre] = t[size, pre] " " $6
            m[size, pre] = m[size, pre] " " $10
            cnt[size, pre]++
        }
        END {
            logsum = 0; nr = 0; rmin = 1e300; rmax = 0
            for (i = 1; i <= ns; i++) {
                s = sizes[i]
                on = median(t[s, "on"]); off = median(t[s, "off"])
                mon = median(m[s, "on"]); moff = median(m[s, "off"])
                mr = (mon > 0 && moff > 0) ? sprintf("%.3f", mon / moff) : "-"
                note = (cnt[s, "on"] < reps || cnt[s, "off"] < reps) ? "  (missing runs)" : ""
                if (on > 0 && off > 0) {
                    r = on / off
                    logsum += log(r); nr++
                    if (r < rmin) rmin = r
                    if (r > rmax) rmax = r
                    printf "  %10d %12.2f %12.2f %8.3f %10s%s\n", s, on, off, r, mr, note
                } else {
                    printf "  %10d %12s %12s %8s %10s%s\n", s, (on > 0 ? sprintf("%.2f", on) : "-"),
                           (off > 0 ? sprintf("%.2f", off) : "-"), "-", mr, note
                }
            }
            if (nr > 0)
                printf "# geometric mean on/off over %d sizes: %.3f (min %.3f, max %.3f)\n",
                       nr, exp(logsum / nr), rmin, rmax
        }' "$DIR"/np"$np".pre1.rep*.txt "$DIR"/np"$np".pre0.rep*.txt
done
echo "# total $(($(date +%s) - start)) s"
[ -n "${KEEP:-}" ] && echo "# raw outputs in $DIR"
if [ $failed -ne 0 ]; then
    echo "# some runs FAILED (see above)"
    exit 1
fi
exit 0

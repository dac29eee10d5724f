#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The C API as a user gets it: `configure --prefix=P && make install` (a separate build,
# no CUDA), then the README's own build line, read from README.md and run as written
# with PKG_CONFIG_PATH=P/lib/pkgconfig, on the complete example
# examples/allreduce_minimal.c, then that program on 2 ranks without LD_LIBRARY_PATH
# (the rpath of the build line must find the library). Also what `make install` puts in
# P: the library, its headers, pkg-config file, the component, and the man pages (each
# naming every option its program's help lists). And bench/plot.py on dfccl-bench's csv,
# where a python3 with matplotlib is found (else a SKIP line).
# One line per case, "PASS: ..." / "FAIL: ..." (or "SKIP: ..."), and "N passed, N failed"
# at the end.
#
# usage: install_check.sh BUILD_DIR      (configured, built and installed here)
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
B=${1:?usage: install_check.sh BUILD_DIR}
mkdir -p "$B" && B=$(cd "$B" && pwd)
P="$B/prefix"
LOGDIR=$(mktemp -d /tmp/dfccl-install.XXXXXX)
jobs=$(nproc 2> /dev/null || echo 2)
# shellcheck disable=SC2034 # read by suite_lib.sh
npass=0 nfail=0
# pass, fail, finish
# shellcheck source=suite_lib.sh
. "$SRC/test/suite_lib.sh"

rm -rf "$P"
if ! (cd "$B" && { [ -f Makefile ] || "$SRC/configure" --prefix="$P" --without-cuda; } &&
    make -j"$jobs" && make install) > "$LOGDIR/build.log" 2>&1; then
    tail -20 "$LOGDIR/build.log"
    fail "configure --prefix, make install (log $LOGDIR/build.log)"
    finish
fi
missing=
for f in lib/libdfccl.so include/dfccl.h include/dfccl_mpi.h lib/pkgconfig/dfccl.pc lib/openmpi/mca_coll_dfccl.so \
    bin/dfccl-bench bin/dfccl-info bin/dfccl-trace; do
    [ -e "$P/$f" ] || missing="$missing $f"
done
[ -z "$missing" ] && pass "make install: library, headers, pkg-config file, component, dfccl-bench, dfccl-info, dfccl-trace" ||
    fail "make install left out:$missing"

# the installed benchmark, as a user runs it: every collective, a short checked sweep,
# out of place and in place, CSV
bad=
for k in allreduce reduce_scatter allgather bcast reduce alltoall; do
    csv=$(env -u LD_LIBRARY_PATH timeout 60 mpirun --oversubscribe --bind-to none -np 3 "$P/bin/dfccl-bench" \
        -k "$k" -b 8 -e 64K -f 32 -n 5 -w 1 -c 1 -F csv 2> "$LOGDIR/bench_$k.err")
    rc=$?
    printf '%s\n' "$csv" > "$LOGDIR/bench_$k.csv"
    rows=$(tail -n +2 <<< "$csv" | grep -c .)
    # a row: 18 fields; #wrong (field 9) 0, in place (field 16) 0 or N/A (alltoall), memory and api the defaults
    okrows=$(tail -n +2 <<< "$csv" | awk -F, 'NF == 18 && $9 == "0" && ($16 == "0" || $16 == "N/A") &&
        $17 == "host" && $18 == "dfccl"' | grep -c .)
    if [ $rc -ne 0 ] || [ "$rows" -lt 2 ] || [ "$okrows" -ne "$rows" ] || ! head -n 1 <<< "$csv" | grep -q '^size_bytes,'; then
        bad="$bad $k(rc $rc, $okrows of $rows rows right)"
    fi
done
[ -z "$bad" ] && pass "installed dfccl-bench: every collective, checked, out of place and in place, CSV" ||
    fail "installed dfccl-bench:$bad (logs $LOGDIR/bench_*.err)"
"$P/bin/dfccl-bench" -h 2> /dev/null | grep -q -- '-k COLL' && pass "dfccl-bench -h prints its options" ||
    fail "dfccl-bench -h"

# bench/plot.py on csv: a hand-written one (in place not run at the last size) and the
# installed benchmark's allreduce above, each into two SVGs; a row short of a field stops
# it with the file and line, not a Python traceback
py=
for p in python3 /usr/bin/python3; do
    "$p" -c 'import matplotlib' 2> /dev/null && py=$p && break
done
if [ -z "$py" ]; then
    echo "SKIP: bench/plot.py (no python3 with matplotlib; Debian: apt-get install python3-matplotlib)"
else
    D="$LOGDIR/plot"
    mkdir -p "$D"
    cat > "$D/tiny.csv" << 'EOF'
size_bytes,count,type,redop,root,time_us,algbw_gbs,busbw_gbs,wrong,min_us,p99_us,max_us,inplace_time_us,inplace_algbw_gbs,inplace_busbw_gbs,inplace_wrong
8,2,float,sum,-1,4.000,0.0020,0.0030,0,3.900,4.500,5.000,4.100,0.0020,0.0029,0
1024,256,float,sum,-1,5.000,0.2048,0.3072,0,4.800,5.500,6.000,5.100,0.2008,0.3012,0
1048576,262144,float,sum,-1,400.000,2.6214,3.9322,0,390.000,420.000,450.000,,,,N/A
EOF
    { head -n 3 "$D/tiny.csv" && echo '2048,512,float,sum,-1,6.0,0.3,0.5,0,5.9,6.1,6.2,6.0,0.3,0.5'; } > "$D/bad.csv"
    cp "$LOGDIR/bench_allreduce.csv" "$D/" 2> /dev/null
    bad=
    for f in tiny bench_allreduce; do
        { "$py" "$SRC/bench/plot.py" -o "$D/$f" "$D/$f.csv" && grep -q '<svg' "$D/$f/$f-unknown-latency.svg" &&
            grep -q '<svg' "$D/$f/$f-unknown-busbw.svg"; } > "$D/$f.out" 2>&1 || bad="$bad $f.csv"
    done
    "$py" "$SRC/bench/plot.py" -o "$D/bad" "$D/bad.csv" > "$D/bad.out" 2>&1
    rc=$?
    { [ $rc -eq 1 ] && grep -q "bad.csv:4: malformed" "$D/bad.out" && ! grep -q Traceback "$D/bad.out"; } ||
        bad="$bad bad.csv(rc $rc)"
    [ -z "$bad" ] && pass "bench/plot.py: dfccl-bench csv into latency and bus-bandwidth SVGs, a malformed row named" ||
        fail "bench/plot.py:$bad (output in $D/*.out)"
fi

# the installed dfccl-info: version and build, every variable with a variable set in the
# environment marked with its value, and every variable it lists documented in the README
info=$(env -u LD_LIBRARY_PATH DFCCL_SLOTS=3 "$P/bin/dfccl-info" 2>&1)
names=$(sed -n 's/^[* ] \(DFCCL_[A-Z_]*\) .*/\1/p' <<< "$info")
undocumented=
for n in $names; do grep -q "^| \`$n\`" "$SRC/README.md" || undocumented="$undocumented $n"; done
if grep -q '^dfccl [0-9]*\.[0-9]*\.[0-9]*$' <<< "$info" && grep -q '^build: ' <<< "$info" &&
    grep -qE '^\* DFCCL_SLOTS +2 +3 ' <<< "$info" && [ "$(wc -w <<< "$names")" -ge 30 ] && [ -z "$undocumented" ]; then
    pass "installed dfccl-info: version, build, $(wc -w <<< "$names") variables (a set one marked), each in the README's table"
else
    echo "$info" | head -20
    fail "installed dfccl-info${undocumented:+: not in the README table:$undocumented}"
fi

# the man pages: installed under share/man/man1, each naming every option flag its
# program's help lists (read from the help's option column: "  -x ARG  text" or
# argparse's "  -x X, --long X"; dfccl-trace: its commands and each command's help too)
help_flags() { sed -nE 's/^ {1,4}(-[^ ].*)$/\1/p' | sed -E 's/  .*//' | grep -oE '(^|[ ,])--?[A-Za-z][A-Za-z0-9-]*' | tr -d ' ,' | sort -u; }
manbad='' mansaid=''
for prog in dfccl-bench dfccl-info dfccl-trace; do
    page="$P/share/man/man1/$prog.1"
    if [ ! -f "$page" ]; then
        manbad="$manbad $prog.1(not installed)"
        continue
    fi
    words=
    if [ "$prog" = dfccl-trace ]; then
        words=$("$P/bin/dfccl-trace" -h 2> /dev/null | grep -m1 -oE '\{[a-z,]+\}' | tr -d '{}' | tr , ' ')
        flags=$(for c in "" $words; do "$P/bin/dfccl-trace" ${c:+"$c"} -h 2> /dev/null; done | help_flags)
    else
        flags=$(env -u LD_LIBRARY_PATH "$P/bin/$prog" -h 2> /dev/null | help_flags)
    fi
    # roff source as text: \- is a dash, \fB \fI \fR \fP switch fonts
    text=$(sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' "$page")
    missing=
    for f in $flags $words; do
        grep -qE -- "(^|[^A-Za-z0-9-])$f([^A-Za-z0-9-]|\$)" <<< "$text" || missing="$missing $f"
    done
    n=$(wc -w <<< "$flags")
    if [ "$n" -lt 3 ]; then
        manbad="$manbad $prog(only $n options read from its help)"
    elif [ -n "$missing" ]; then
        manbad="$manbad $prog.1(lacks$missing)"
    fi
    mansaid="$mansaid $prog ($n options${words:+, commands $words})"
done
[ -z "$manbad" ] && pass "man pages installed, each naming every option of its program's help:$mansaid" ||
    fail "man pages:$manbad"

# the README's build line, as written (app.c is the file name it uses)
line=$(grep -m1 '^mpicc app.c ' "$SRC/README.md")
if [ -z "$line" ]; then
    fail "README.md has no 'mpicc app.c ...' build line"
    finish
fi
W="$LOGDIR/app"
mkdir -p "$W" && cp "$SRC/examples/allreduce_minimal.c" "$W/app.c"
if (cd "$W" && env -u LD_LIBRARY_PATH PKG_CONFIG_PATH="$P/lib/pkgconfig" bash -euc "$line") > "$LOGDIR/cc.log" 2>&1; then
    pass "the README's build line: $line"
else
    cat "$LOGDIR/cc.log"
    fail "the README's build line failed: $line"
    finish
fi
out=$(cd "$W" && env -u LD_LIBRARY_PATH timeout 60 mpirun --oversubscribe --bind-to none -np 2 ./a.out 2>&1)
if [ $? -eq 0 ]; then
    pass "the program built by it runs on 2 ranks, library found through the rpath"
else
    echo "$out" | tail -10
    fail "the program built by the README's line did not run"
fi
finish

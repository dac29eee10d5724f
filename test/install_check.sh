#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# dfccl as a user gets it from the README: every code block of README.md, run as written
# in order (the ```c block saved as app.c, as the README says): `./quickstart demo` (whose
# expected deadlock must read calmly: no error line or Open MPI notice before "demo OK";
# `./quickstart test` is the run this script is part of), the Install block (PREFIX =
# BUILD_DIR/prefix, CONFIGURE_FLAGS=--without-cuda: a separate build, no CUDA), the mpirun
# recipe (dfccl's component loaded and running MPI_Allreduce), the C API program built
# and run on 2 ranks without LD_LIBRARY_PATH (the rpath must find the library), the
# installed examples built with their own line, and the tools. Then what happens with a
# wrong component path (docs/usage.md). Also what `make install` puts in
# P: the library, its headers, pkg-config file, the component, and the man pages (each
# naming every option its program's help lists). And bench/plot.py on dfccl-bench's csv,
# where a python3 with matplotlib is found (else a SKIP line).
# One line per case, "PASS: ..." / "FAIL: ..." (or "SKIP: ..."), and "N passed, N failed"
# at the end.
#
# usage: install_check.sh build-install   (the README's build directory, under the source tree)
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
B=${1:?usage: install_check.sh build-install}
mkdir -p "$B" && B=$(cd "$B" && pwd)
if [ "$B" != "$SRC/build-install" ]; then
    echo "install_check.sh: the README builds in $SRC/build-install; give that directory" >&2
    exit 2
fi
P="$B/prefix"
LOGDIR=$(mktemp -d /tmp/dfccl-install.XXXXXX)
jobs=$(nproc 2> /dev/null || echo 2)
# shellcheck disable=SC2034 # read by suite_lib.sh
npass=0 nfail=0
# pass, fail, finish
# shellcheck source=suite_lib.sh
. "$SRC/test/suite_lib.sh"

# ---- the README's blocks, in order ------------------------------------------------------
RD="$LOGDIR/readme"
mkdir -p "$RD"
python3 - "$SRC/README.md" "$RD" << 'EOF'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
blocks = re.findall(r"^```(\w*)\n(.*?)^```", text, re.S | re.M)
for i, (lang, body) in enumerate(blocks, 1):
    open("%s/%02d.%s" % (sys.argv[2], i, lang or "txt"), "w").write(body)
EOF
nblocks=$(ls "$RD" | wc -l)
W="$LOGDIR/work"
mkdir -p "$W"
# run_block FILE DIR: the block as written, in DIR, with PREFIX and CONFIGURE_FLAGS set
run_block() {
    (cd "$2" && env -u LD_LIBRARY_PATH PREFIX="$P" CONFIGURE_FLAGS=--without-cuda timeout 900 bash -e "$1") \
        > "$1.out" 2>&1
}
rm -rf "$P"
bad_blocks= installed=0 nrun=0
for f in "$RD"/*; do
    case "$f" in
    *.out) continue ;;
    *.c)
        cp "$f" "$W/app.c"
        continue
        ;;
    *.sh) ;;
    *)
        bad_blocks="$bad_blocks $(basename "$f")(not sh or c)"
        continue
        ;;
    esac
    nrun=$((nrun + 1))
    name=$(basename "$f")
    if grep -q '^\./quickstart demo$' "$f"; then
        # the README's first commands: the demo here; `./quickstart test` is this very run
        grep -qx './quickstart test' "$f" || bad_blocks="$bad_blocks $name(no ./quickstart test)"
        grep -vx './quickstart test' "$f" > "$f.demo"
        if ! run_block "$f.demo" "$SRC"; then
            bad_blocks="$bad_blocks $name(./quickstart demo failed)"
        elif [ "$(tail -n 1 "$f.demo.out")" != "demo OK" ] ||
            sed '/^demo OK$/q' "$f.demo.out" | grep -qE '(^| )ERROR |^-{20,}$|MPI_ABORT|Primary job'; then
            bad_blocks="$bad_blocks $name(the demo's output is not calm: $f.demo.out)"
        fi
        continue
    fi
    dir=$W
    grep -q '\.\./configure' "$f" && dir=$SRC
    if ! run_block "$f" "$dir"; then
        tail -n 15 "$f.out"
        bad_blocks="$bad_blocks $name(exit status, $f.out)"
        continue
    fi
    # what each block must have shown, beyond its exit status
    out="$f.out"
    want=()
    grep -q '\.\./configure' "$f" && installed=1
    grep -q 'coll_dfccl_verbose' "$f" && want=('dfccl coll component .* open' 'engine set up' '^# engine dfccl \(through its Open MPI component\)')
    grep -q ' \./app$' "$f" && want=('^out\[3\] = 8 \(4 x 2 ranks\)$')
    grep -q 'allreduce_minimal$' "$f" && want=('^allreduce of 1024 floats on 2 ranks: correct$')
    grep -q 'dfccl-trace" summary' "$f" && want=('^# Out of bounds values : 0 OK$' '^longest stalls:$' '^  DFCCL_PREEMPT ')
    for w in "${want[@]}"; do
        grep -qE -- "$w" "$out" || bad_blocks="$bad_blocks $name(no '$w' in $out)"
    done
done
[ "$installed" -eq 1 ] || bad_blocks="$bad_blocks (no Install block with ../configure)"
if [ -z "$bad_blocks" ] && [ "$nrun" -ge 5 ]; then
    pass "README.md: all $nblocks code blocks run as written ($nrun shell blocks, the C program built and run, the demo calm)"
else
    fail "README.md code blocks ($nrun shell blocks run):$bad_blocks"
fi
[ -f "$P/lib/libdfccl.so" ] || finish

missing=
for f in lib/libdfccl.so include/dfccl.h include/dfccl_config.h include/dfccl_mpi.h lib/pkgconfig/dfccl.pc lib/openmpi/mca_coll_dfccl.so \
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
    # a row: 21 fields; #wrong (field 9) 0, in place (field 16) 0 or N/A (alltoall), memory and api the
    # defaults, then the collective, 3 ranks and the engine
    okrows=$(tail -n +2 <<< "$csv" | awk -F, -v k="$k" 'NF == 21 && $9 == "0" && ($16 == "0" || $16 == "N/A") &&
        $17 == "host" && $18 == "dfccl" && $19 == k && $20 == "3" && $21 == "dfccl"' | grep -c .)
    if [ $rc -ne 0 ] || [ "$rows" -lt 2 ] || [ "$okrows" -ne "$rows" ] || ! head -n 1 <<< "$csv" | grep -q '^size_bytes,'; then
        bad="$bad $k(rc $rc, $okrows of $rows rows right)"
    fi
done
[ -z "$bad" ] && pass "installed dfccl-bench: every collective, checked, out of place and in place, CSV" ||
    fail "installed dfccl-bench:$bad (logs $LOGDIR/bench_*.err)"
"$P/bin/dfccl-bench" -h 2> /dev/null | grep -q -- '-k COLL' && pass "dfccl-bench -h prints its options" ||
    fail "dfccl-bench -h"

# nccl-tests' flags, as an nccl-tests user types them: -t 1 -g 1 -p 0, -m (aggregated calls),
# -a (the mean over ranks), -d all, -o all, -c 1, long forms; the old -m device says where
# it went; -A mpi without the component reports plain Open MPI as its engine
out=$(env -u LD_LIBRARY_PATH timeout 60 mpirun --oversubscribe --bind-to none -np 2 "$P/bin/dfccl-bench" \
    -t 1 -g 1 -p 0 -b 8 -e 64 -f 8 --iters 3 -w 1 -m 4 -a 1 -d all -o all -c 1 -F csv 2> "$LOGDIR/nccl_flags.err")
rc=$?
combos=$(tail -n +2 <<< "$out" | awk -F, '$9 == "0" && $16 == "0" { print $3 "/" $4 }' | sort -u | wc -l)
rows=$(tail -n +2 <<< "$out" | grep -c .)
# 10 types x 4 arithmetic ops + 6 integer types x 3 bitwise ops = 58 combinations, 2 sizes each
old=$(env -u LD_LIBRARY_PATH timeout 30 mpirun --oversubscribe -np 1 "$P/bin/dfccl-bench" -m device 2>&1)
mpi=$(env -u LD_LIBRARY_PATH timeout 60 mpirun --oversubscribe -np 2 --mca coll ^dfccl "$P/bin/dfccl-bench" -A mpi \
    -b 8 -e 8 -n 3 -w 1 -F json 2>&1 | grep '^{')
if [ $rc -eq 0 ] && [ "$combos" -eq 58 ] && [ "$rows" -eq 116 ] && grep -q -- '-B device' <<< "$old" &&
    grep -q '"engine": "openmpi"' <<< "$mpi"; then
    pass "dfccl-bench takes nccl-tests' flags (-t -g -p -m -a, -d all -o all: $combos type/op pairs checked)"
else
    fail "dfccl-bench with nccl-tests' flags: rc $rc, $combos type/op pairs right of 58, $rows rows; -m device: $(head -n 1 <<< "$old"); -A mpi: ${mpi:0:120} (log $LOGDIR/nccl_flags.err)"
fi

# bench/plot.py on csv: a hand-written one in the older format (no collective column: the
# figures are named after the file) and the installed benchmark's allreduce above (named
# after the file and the collective), each into two SVGs; with the native run and a
# plain-MPI run in one figure, the legend tells dfccl from plain MPI; a row short of a
# field stops it with the file and line, not a Python traceback
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
    for f in tiny:tiny bench_allreduce:bench_allreduce-allreduce; do
        { "$py" "$SRC/bench/plot.py" -o "$D/${f%%:*}" "$D/${f%%:*}.csv" && grep -q '<svg' "$D/${f%%:*}/${f#*:}-latency.svg" &&
            grep -q '<svg' "$D/${f%%:*}/${f#*:}-busbw.svg"; } > "$D/${f%%:*}.out" 2>&1 || bad="$bad ${f%%:*}.csv"
    done
    env -u LD_LIBRARY_PATH timeout 60 mpirun --oversubscribe -np 3 --mca coll ^dfccl "$P/bin/dfccl-bench" -A mpi \
        -k allreduce -b 8 -e 64K -f 32 -n 5 -w 1 -F csv > "$D/plain.csv" 2> "$D/plain.err"
    # matplotlib's SVG keeps each text as a comment next to its glyphs
    if ! "$py" "$SRC/bench/plot.py" -o "$D/both" "$D/bench_allreduce.csv" "$D/plain.csv" > "$D/both.out" 2>&1 ||
        ! grep -q '<!-- out-of-place, .*, dfccl on host buffers' "$D/both/plot-allreduce-latency.svg" ||
        ! grep -q '<!-- out-of-place, .*, plain MPI on host buffers' "$D/both/plot-allreduce-latency.svg"; then
        bad="$bad labels(dfccl and plain MPI, $D/both)"
    fi
    "$py" "$SRC/bench/plot.py" -o "$D/bad" "$D/bad.csv" > "$D/bad.out" 2>&1
    rc=$?
    { [ $rc -eq 1 ] && grep -q "bad.csv:4: malformed" "$D/bad.out" && ! grep -q Traceback "$D/bad.out"; } ||
        bad="$bad bad.csv(rc $rc)"
    [ -z "$bad" ] && pass "bench/plot.py: dfccl-bench csv into latency and bus-bandwidth SVGs, dfccl and plain MPI labelled, a malformed row named" ||
        fail "bench/plot.py:$bad (output in $D/*.out)"
fi

# the installed dfccl-info: version and build, every variable with a variable set in the
# environment marked with its value, and every variable it lists documented in docs/usage.md
info=$(env -u LD_LIBRARY_PATH DFCCL_SLOTS=3 "$P/bin/dfccl-info" 2>&1)
names=$(sed -n 's/^[* ] \(DFCCL_[A-Z_]*\) .*/\1/p' <<< "$info")
undocumented=
for n in $names; do grep -q "^| \`$n\`" "$SRC/docs/usage.md" || undocumented="$undocumented $n"; done
if grep -q '^dfccl [0-9]*\.[0-9]*\.[0-9]*$' <<< "$info" && grep -q '^build: ' <<< "$info" &&
    grep -qE '^\* DFCCL_SLOTS +2 +3 ' <<< "$info" && [ "$(wc -w <<< "$names")" -ge 30 ] && [ -z "$undocumented" ]; then
    pass "installed dfccl-info: version, build, $(wc -w <<< "$names") variables (a set one marked), each in docs/usage.md's table"
else
    echo "$info" | head -20
    fail "installed dfccl-info${undocumented:+: not in the table of docs/usage.md:$undocumented}"
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

# ---- component path mistakes (docs/usage.md, "When the component path is wrong") -------
OM=$(ompi_info --path pkglibdir | sed 's/.*: *//')
cp_run() { # $1: component path, rest: mpirun arguments before the program; sets RC and OUT
    OUT=$(env -u LD_LIBRARY_PATH timeout 60 mpirun --oversubscribe -np 2 --mca mca_base_component_path "$1" \
        --mca orte_base_help_aggregate 0 --mca coll_dfccl_verbose 1 --mca coll_dfccl_host_buffers 1 "${@:2}" \
        "$P/bin/dfccl-bench" -A mpi -b 8 -e 8 -n 2 -w 1 2>&1)
    RC=$?
    ncp=$((ncp + 1))
    printf '%s\n' "$OUT" > "$LOGDIR/cpath_$ncp.out"
}
why= ncp=0
cp_run "/nonexistent-dfccl-dir:$OM"
{ [ $RC -ne 0 ] && grep -q '^mpirun: Error: unknown option "--oversubscribe"' <<< "$OUT"; } || why="$why first-entry(rc $RC: $(head -n 1 <<< "$OUT"))"
cp_run "$OM:/nonexistent-dfccl-dir:$P/lib/openmpi"
{ [ $RC -eq 0 ] && ! grep -q 'dfccl coll component' <<< "$OUT" && grep -q '^# engine openmpi' <<< "$OUT"; } ||
    why="$why silent-miss(rc $RC)"
cp_run "$OM:/nonexistent-dfccl-dir:$P/lib/openmpi" --mca coll dfccl,tuned,libnbc,basic,self
# Open MPI 4.1's mpirun at times fails to pack this very help message (ORTE_ERROR_LOG in
# show_help.c; dfccl is not loaded here): once more then
if grep -q 'show_help.c' <<< "$OUT"; then
    cp_run "$OM:/nonexistent-dfccl-dir:$P/lib/openmpi" --mca coll dfccl,tuned,libnbc,basic,self
fi
{ [ $RC -ne 0 ] && grep -q 'Component: *dfccl' <<< "$OUT"; } || why="$why named-form(rc $RC)"
cp_run "$P/lib/openmpi:$OM" --mca coll dfccl,tuned,libnbc,basic,self
{ [ $RC -eq 0 ] && grep -q 'dfccl coll component' <<< "$OUT" && grep -q '^# engine dfccl' <<< "$OUT"; } ||
    why="$why right-path(rc $RC)"
[ -z "$why" ] && pass "component path: a bad first entry gives 'unknown option' for mpirun's first option, a bad entry before dfccl's hides it silently, --mca coll dfccl,... then fails MPI_Init naming dfccl, the right path loads it" ||
    fail "component path behaviours not as documented:$why (outputs $LOGDIR/cpath_*.out)"
finish

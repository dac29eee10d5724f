#!/bin/sh
# make check entry: the deadlock fuzzer on a fixed seed range (test/fuzz/run_fuzz_suite.sh).
: "${top_srcdir:=.}" "${top_builddir:=.}"
exec bash "$top_srcdir/test/fuzz/run_fuzz_suite.sh" "$top_builddir"

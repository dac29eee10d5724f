#!/bin/sh
# make check entry: OSU Micro-Benchmarks 7.4 through the component (test/ompi/run_osu_suite.sh).
: "${top_srcdir:=.}" "${top_builddir:=.}"
exec bash "$top_srcdir/test/ompi/run_osu_suite.sh" "$top_builddir"

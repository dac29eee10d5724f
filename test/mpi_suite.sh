#!/bin/sh
# make check entry: the multi-process suite over the native API (test/mpi/run_suite.sh).
: "${top_srcdir:=.}" "${top_builddir:=.}"
exec bash "$top_srcdir/test/mpi/run_suite.sh" "$top_builddir/test/mpi"

#!/bin/sh
# make check entry: the Open MPI component suite (test/ompi/run_ompi_suite.sh).
: "${top_srcdir:=.}" "${top_builddir:=.}"
exec bash "$top_srcdir/test/ompi/run_ompi_suite.sh" "$top_builddir"

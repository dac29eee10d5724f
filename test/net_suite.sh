#!/bin/sh
# make check entry: the net-transport (UCX) suite on one machine (test/net/run_net_suite.sh).
# Ends with SKIP lines and "0 passed, 0 failed" when libdfccl was built without UCX.
: "${top_srcdir:=.}" "${top_builddir:=.}"
exec bash "$top_srcdir/test/net/run_net_suite.sh" "$top_builddir/test/mpi" "$top_builddir/test/net"

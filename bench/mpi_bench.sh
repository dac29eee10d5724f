#!/bin/bash
# The MPI path measured side by side (issue: component overhead), host buffers, CPU backend:
#   1. component excluded (--mca coll ^dfccl): Open MPI's own allreduce, and the native API
#   2. component loaded, host_buffers=0: pass-through to the previous module (its cost is 2 - 1)
#   3. component loaded, host_buffers=1: MPI_Allreduce on the engine (its overhead over native)
#   mpi_bench.sh BUILD_DIR [NP]
set -u
B=${1:?usage: mpi_bench.sh BUILD_DIR [NP]}
NP=${2:-2}
B=$(cd "$B" && pwd)
SYS=$(ompi_info --path pkglibdir 2>/dev/null | sed -e 's/.*: *//')
RUN="mpirun --allow-run-as-root --oversubscribe -np $NP --mca btl self,vader --mca mca_base_component_path $B/ompi_coll_dfccl/.libs:$SYS -x LD_LIBRARY_PATH=$B/.libs"
echo "## 1. component excluded"; $RUN --mca coll ^dfccl $B/bench/mpi_bench "$@"
echo "## 2. component loaded, host_buffers=0 (pass-through)"; $RUN $B/bench/mpi_bench "$@"
echo "## 3. component loaded, host_buffers=1 (engine)"; $RUN --mca coll_dfccl_host_buffers 1 $B/bench/mpi_bench "$@"

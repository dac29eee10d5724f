#!/bin/bash
# dfccl against NCCL on one host with several GPUs, one rank per GPU (no MPS needed), in
# one call: the collectives side by side (gpu_bench -N, nccl-tests' busbw), the MPI path,
# and the chaos order (dfccl must complete 100 times; NCCL must hang, under a watchdog).
# NVLink multicast (NVLS) stays off.
#   run_multigpu.sh BUILD_DIR
# Variables: NPS (rank counts, default: 2 4 8 up to the GPUs present), COLLS, BENCH_ARGS,
# CHAOS_ITERS (default 100). Prints "PASS: ..." / "FAIL: ..." and "N passed, N failed".
set -u
B=${1:?usage: run_multigpu.sh BUILD_DIR}
B=$(cd "$B" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$NGPU" -lt 2 ]; then
    echo "SKIP: run_multigpu.sh needs at least 2 GPUs ($NGPU here)"
    exit 77
fi
SYS=$(ompi_info --path pkglibdir 2>/dev/null | sed -e 's/.*: *//')
MPIRUN="mpirun --oversubscribe --mca btl self,vader --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE
  --mca mca_base_component_path $B/ompi_coll_dfccl/.libs:$SYS"
# pass, fail, finish
# shellcheck source=../suite_lib.sh
. "$(dirname "$0")/../suite_lib.sh"
NPS=${NPS:-$(for n in 2 4 8; do [ $n -le "$NGPU" ] && echo $n; done)}

# side by side: dfccl and NCCL (and MPI_Allreduce through the component for allreduce)
for np in $NPS; do
    for coll in ${COLLS:-allreduce reduce_scatter allgather bcast}; do
        m=""
        [ "$coll" = allreduce ] && m="-m"
        timeout -s KILL ${BENCH_TIMEOUT:-600} $MPIRUN -np $np $B/bench/gpu_bench -N -s $m -c $coll \
            ${BENCH_ARGS:--b 8 -e 4G -f 4 -n 20 -w 5}
        rc=$?
        if [ $rc -eq 0 ]; then pass "gpu_bench $coll np=$np"; else fail "gpu_bench $coll np=$np" "rc=$rc"; fi
    done
done

NPC=$(echo $NPS | awk '{print $NF}')
# chaos order with dfccl: every iteration a fresh random order per rank, one
# communicator per collective; a hang is caught by t_gpu's own watchdog
out=$(timeout -s KILL 600 $MPIRUN -np $NPC $B/test/gpu/t_gpu chaos --iters ${CHAOS_ITERS:-100} --deadline 300 2>&1)
rc=$?
echo "$out" | grep -E "^t_gpu|HANG|FAIL" | head -5
if [ $rc -eq 0 ]; then
    pass "dfccl chaos order, ${CHAOS_ITERS:-100} runs np=$NPC"
else
    fail "dfccl chaos np=$NPC" "rc=$rc"
fi
# the same order with NCCL must hang (the watchdog says so and exits 3)
out=$(timeout -s KILL 120 $MPIRUN -np $NPC $B/test/gpu/t_nccl_chaos --deadline 30 2>&1)
rc=$?
echo "$out" | grep -E "HANG|t_nccl_chaos|SKIP" | head -3
if [ $rc -ne 0 ] && { echo "$out" | grep -q HANG || [ $rc -eq 137 ]; }; then
    pass "NCCL chaos order hangs np=$NPC (rc=$rc)"
else
    fail "NCCL chaos order np=$NPC was expected to hang" "rc=$rc"
fi
pkill -9 -f "$B/test/gpu/t_nccl_chaos" 2>/dev/null
finish

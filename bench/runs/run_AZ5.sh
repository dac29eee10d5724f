# run AZ5: one-rank copies on the lowest channels (B, HEAD) against on channel C-1 (A, the split
# of runs AW-AZ4: HEAD~1's engine/algo.h), interleaved A B A B; t_gpu matrix/reuse at np=1 with B
set -u; OUT=${OUT:-/tmp/out}; mkdir -p $OUT
S=$(date +%s)
MAKE_TARGETS="libdfccl.la bench/gpu_bench test/gpu/t_gpu" timeout 200 bash test/gpu/device_run.sh build > $OUT/b.log 2>&1 || { tail -30 $OUT/b.log; exit 1; }
B=$(echo /tmp/dfccl-build/dfccl-0*); A=/tmp/dfccl-A
# .dist/algo_A.h: engine/algo.h before the lowest-channel commit (git show <commit>~1:engine/algo.h)
rm -rf $A; cp -a $B $A; cp .dist/algo_A.h $A/engine/algo.h
(cd $A && timeout 200 make -j16 libdfccl.la bench/gpu_bench > $OUT/bA.log 2>&1) || { tail -20 $OUT/bA.log; exit 1; }
echo "builds wall=$(( $(date +%s) - S ))s"; cmp -s $A/engine/algo.h $B/engine/algo.h && echo "SAME algo.h?!"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
R="mpirun --allow-run-as-root --oversubscribe --bind-to none -x NCCL_NVLS_ENABLE"
echo "== B: t_gpu matrix np=1"; timeout 60 $R -np 1 -x LD_LIBRARY_PATH=$B/.libs $B/test/gpu/t_gpu matrix 2>&1 | tail -2
echo "== B: t_gpu reuse np=1"; timeout 60 $R -np 1 -x LD_LIBRARY_PATH=$B/.libs $B/test/gpu/t_gpu reuse 2>&1 | tail -2
for c in allreduce allgather bcast; do
  for v in A B A B; do D=$A; [ $v = B ] && D=$B
    echo "== $v $c np=1"; timeout 60 $R -np 1 -x LD_LIBRARY_PATH=$D/.libs $D/bench/gpu_bench -s -c $c -b 8 -e 16M -f 8 -n 50 -w 10 2>&1 | grep -E "^ +[0-9]" | awk '{print $1, $2}' | tr '\n' ' '; echo
  done
done
echo "total wall=$(( $(date +%s) - S ))s"

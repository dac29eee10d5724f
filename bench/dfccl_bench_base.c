/* SPDX-License-Identifier: BSD-3-Clause */
/* dfccl-bench: the process, the error exit and the names it prints. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "dfccl_bench_base.h"

int bench_rank, bench_nranks;

const char *const bench_coll_names[C_NUM] = {
    "allreduce", "reduce_scatter", "allgather", "bcast", "reduce", "alltoall",
};

/* Printed names follow nccl-tests. */
const char *const bench_type_names[dfcclNumTypes] = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "bfloat16", "float", "double",
};

const char *const bench_op_names[dfcclNumOps] = {
    "sum", "prod", "max", "min", "band", "bor", "bxor",
};

const char *const bench_mem_names[2] = {"host", "device"};
const char *const bench_api_names[2] = {"dfccl", "mpi"};

void bench_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "dfccl-bench: rank %d: ", bench_rank);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

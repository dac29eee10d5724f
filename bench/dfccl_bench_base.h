/* SPDX-License-Identifier: BSD-3-Clause */
/* dfccl-bench (dfccl_bench.c): what every part shares: the options, the names it prints,
 * the rank and the error exit (dfccl_bench_base.c). */
#ifndef DFCCL_BENCH_BASE_H
#define DFCCL_BENCH_BASE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <mpi.h>

#include "dfccl.h"
#include "dfccl_mpi.h"

enum coll { C_ALLREDUCE, C_REDUCE_SCATTER, C_ALLGATHER, C_BCAST, C_REDUCE, C_ALLTOALL, C_NUM };

struct opts {
    size_t minbytes, maxbytes;
    size_t factor;    /* -f; 0: add stepbytes instead */
    size_t stepbytes; /* -i */
    enum coll coll;
    dfcclDataType_t type;
    dfcclRedOp_t op;
    int root;
    int all_types, all_ops, all_roots; /* -d all, -o all, -r all */
    int warmup, iters;
    int agg;     /* -m: collectives per timed iteration, each to completion */
    int average; /* -a: an iteration's time over ranks: AVG_RANK0, AVG_MEAN, AVG_MIN, AVG_MAX */
    int check;
    int inplace; /* also time the in-place form */
    int format;  /* FMT_TEXT, FMT_CSV or FMT_JSON */
    int stats;
    int sync; /* before each timed call: SYNC_MPI, SYNC_DFCCL or SYNC_NONE */
    int mem;  /* MEM_HOST or MEM_DEVICE */
    int api;  /* API_DFCCL or API_MPI */
};

enum { SYNC_MPI, SYNC_DFCCL, SYNC_NONE };
enum { AVG_RANK0, AVG_MEAN, AVG_MIN, AVG_MAX };
enum { FMT_TEXT, FMT_CSV, FMT_JSON };
enum { MEM_HOST, MEM_DEVICE };
enum { API_DFCCL, API_MPI };

/* Printed names (types and ops follow nccl-tests), indexed by enum coll, dfcclDataType_t,
 * dfcclRedOp_t, MEM_* and API_*. */
extern const char *const bench_coll_names[C_NUM];
extern const char *const bench_type_names[dfcclNumTypes];
extern const char *const bench_op_names[dfcclNumOps];
extern const char *const bench_mem_names[2];
extern const char *const bench_api_names[2];

extern int bench_rank, bench_nranks; /* in MPI_COMM_WORLD */

/* Print the message (with the rank) and abort every rank with exit status 2. */
void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#define DFCHECK(call)                                                                                        \
    do {                                                                                                     \
        dfcclResult_t r_ = (call);                                                                           \
        if (r_ != dfcclSuccess)                                                                              \
            bench_die("%s failed: %s (%d): %s", #call, dfcclGetErrorString(r_), (int)r_,                     \
                      dfcclGetLastError());                                                                  \
    } while (0)

#endif /* DFCCL_BENCH_BASE_H */

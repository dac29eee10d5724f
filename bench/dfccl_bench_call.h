/* SPDX-License-Identifier: BSD-3-Clause */
/* dfccl-bench: one collective, through the dfccl call or (-A mpi) the MPI one
 * (dfccl_bench_call.c). */
#ifndef DFCCL_BENCH_CALL_H
#define DFCCL_BENCH_CALL_H

#include "dfccl_bench_base.h"

/* What the timed calls run on: a dfccl communicator or (-A mpi) an MPI one. */
struct target {
    dfcclComm_t comm;
    MPI_Comm mc;
};

/* the MPI call of each collective, for -A mpi */
extern const char *const bench_mpi_names[C_NUM];
/* One collective to completion (in place: as pass_bufs laid the buffers out). */
void bench_run_coll(const struct opts *o, const struct target *t, const char *s, char *r, size_t count,
                    int inplace);

#endif /* DFCCL_BENCH_CALL_H */

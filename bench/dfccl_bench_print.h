/* SPDX-License-Identifier: BSD-3-Clause */
/* dfccl-bench: what it prints, the header and one row a size (dfccl_bench_print.c). */
#ifndef DFCCL_BENCH_PRINT_H
#define DFCCL_BENCH_PRINT_H

#include "dfccl_bench_data.h"
#include "dfccl_bench_measure.h"

/* what runs the timed calls: "dfccl" or "openmpi" (bench_mpi_engine), in every format */
extern const char *bench_engine;
/* nccl-tests' bus bandwidth factor */
double bench_bus_factor(enum coll c, int n);
/* Open MPI's dfccl coll component mapped into this process: 1, 0, or -1 (unknown) */
int bench_component_loaded(void);
/* MPI itself takes device pointers (Open MPI's CUDA extension) */
int bench_mpi_cuda_aware(void);
/* -A mpi: "dfccl" where dfccl's component takes the calls, else "openmpi" */
const char *bench_mpi_engine(const struct opts *o);
void bench_print_header(const struct opts *o, const char *device);
void bench_print_row(const struct opts *o, const struct geom *g, const char *redop, int root,
                     const struct pass *op, const struct pass *ip);

#endif /* DFCCL_BENCH_PRINT_H */

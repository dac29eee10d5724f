/* SPDX-License-Identifier: BSD-3-Clause */
/* dfccl-bench: the command line and the help (dfccl_bench_opts.c). */
#ifndef DFCCL_BENCH_OPTS_H
#define DFCCL_BENCH_OPTS_H

#include "dfccl_bench_base.h"

/* 0 to run, 1 after -h, -1 for a bad command line (rank 0 says why) */
int bench_parse_opts(int argc, char **argv, struct opts *o);
void bench_usage(FILE *f);

#endif /* DFCCL_BENCH_OPTS_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/* dfccl-bench: the buffers, host memory or (-B device) CUDA memory, read and written
 * through these calls only (dfccl_bench_mem.c). */
#ifndef DFCCL_BENCH_MEM_H
#define DFCCL_BENCH_MEM_H

#include "dfccl_bench_base.h"

void *bench_buf_alloc(int mem, size_t bytes);
void bench_buf_free(int mem, void *p);
/* dst (a benchmark buffer) = the host bytes src */
void bench_buf_put(int mem, void *dst, const void *src, size_t bytes);
/* dst (host memory) = the benchmark buffer src */
void bench_buf_get(int mem, void *dst, const void *src, size_t bytes);
void bench_buf_set(int mem, void *p, int byte, size_t bytes);
/* before a timed call: the copies and memsets have landed */
void bench_buf_settle(int mem);
/* -B device: this rank's GPU, chosen before the dfccl communicator exists; 0, or -1 with
 * the reason in err */
int bench_device_init(char *err, size_t len, char *name, size_t nlen);

#endif /* DFCCL_BENCH_MEM_H */

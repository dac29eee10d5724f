/* SPDX-License-Identifier: BSD-3-Clause */
/* dfccl-bench: the inputs, the reference results and one size's buffer geometry
 * (dfccl_bench_data.c). */
#ifndef DFCCL_BENCH_DATA_H
#define DFCCL_BENCH_DATA_H

#include "dfccl_bench_base.h"

/* Buffer geometry for one size. */
struct geom {
    size_t count;      /* the count argument of the dfccl call */
    size_t send_elems; /* elements in sendbuf */
    size_t recv_elems; /* elements in recvbuf */
    size_t size_bytes; /* printed size: max(send, recv) bytes */
};

int bench_is_float_type(dfcclDataType_t t);
struct geom bench_geometry(enum coll c, size_t bytes, size_t tsize);
/* The send buffer of this rank (its whole buffer, every block). */
void bench_fill_send(const struct opts *o, void *sendbuf, const struct geom *g);
/* The reference for this rank's receive buffer; 0 where the collective does not define
 * it (reduce on a non-root rank). */
int bench_fill_expected(const struct opts *o, void *expected, const struct geom *g);
uint64_t bench_count_wrong(const void *got, const void *want, size_t elems, size_t tsize);

#endif /* DFCCL_BENCH_DATA_H */

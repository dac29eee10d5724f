/* SPDX-License-Identifier: BSD-3-Clause */
/* dfccl-bench: one size's warm-up, timed and checked iterations (dfccl_bench_measure.c). */
#ifndef DFCCL_BENCH_MEASURE_H
#define DFCCL_BENCH_MEASURE_H

#include "dfccl_bench_call.h"
#include "dfccl_bench_data.h"

/* One size's result, out of place or in place. */
struct pass {
    double med, min, p99, max; /* seconds, slowest rank per iteration */
    uint64_t wrong;            /* summed over ranks and iterations */
    int ran;                   /* 0: no in-place form */
};

/* Host scratch of one run: the send buffer's image (device memory only) and the
 * receive buffer read back (device memory only), the reference, the times. */
struct scratch {
    void *send_img, *recv_img, *expected;
    double *times, *maxtimes;
};

/* Warm-up and timed iterations of one size, out of place or in place (have_ref: h holds
 * the reference, check each timed iteration). */
struct pass bench_measure(const struct opts *o, const struct target *t, const struct geom *g, int inplace,
                          char *sendbuf, char *recvbuf, int have_ref, const struct scratch *h);

#endif /* DFCCL_BENCH_MEASURE_H */

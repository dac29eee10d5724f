/* SPDX-License-Identifier: BSD-3-Clause */
/* dfccl-bench: one size, out of place or in place: warm-up, the timed
 * iterations (each checked, outside the timed region), an iteration's time over the ranks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dfccl_bench_measure.h"
#include "dfccl_bench_mem.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Iterations for one size: full count below 16 MiB, then proportionally fewer
 * (8 MiB worth of iterations' data), never fewer than 3 (a median needs some). */
static void scaled_iters(const struct opts *o, size_t bytes, int *warm, int *iters)
{
    const size_t big = 16u << 20;
    *warm = o->warmup;
    *iters = o->iters;
    if (bytes >= big) {
        double scale = (double)(8u << 20) / (double)bytes;
        int it = (int)ceil(o->iters * scale);
        int w = (int)ceil(o->warmup * scale);
        *iters = it < 3 ? (o->iters < 3 ? o->iters : 3) : it;
        *warm = w < 1 ? (o->warmup < 1 ? o->warmup : 1) : w;
    }
}

/* One pass's buffers: out of place the two buffers; in place where dfccl.h puts the
 * input inside the output, or for -A mpi where MPI_IN_PLACE has it. 0: the
 * collective has no in-place form. */
static int pass_bufs(const struct opts *o, const struct geom *g, int inplace, char *sendbuf, char *recvbuf,
                     char **s, char **r)
{
    const size_t blk = g->count * dfcclTypeSize(o->type) * (size_t)bench_rank;
    const int mpi = o->api == API_MPI;
    *s = sendbuf;
    *r = recvbuf;
    if (!inplace) {
        if (mpi && o->coll == C_BCAST && bench_rank == o->root)
            *r = sendbuf; /* MPI_Bcast's one buffer: the root's result is its input */
        return 1;
    }
    switch (o->coll) {
    case C_ALLREDUCE:
    case C_BCAST:
    case C_REDUCE: *s = recvbuf; return 1;
    case C_REDUCE_SCATTER: /* MPI: the whole input, the result at its start */
        *r = mpi ? sendbuf : sendbuf + blk;
        return 1;
    case C_ALLGATHER: *s = recvbuf + blk; return 1;
    default: /* alltoall: MPI's in-place form exchanges the blocks of one buffer */
        if (!mpi)
            return 0;
        *s = recvbuf;
        return 1;
    }
}

/* The send data into s: host memory written in place, device memory copied from
 * its image (computed once per pass). */
static void load_send(const struct opts *o, const struct geom *g, char *s, const struct scratch *h)
{
    if (o->mem == MEM_HOST)
        bench_fill_send(o, s, g);
    else
        bench_buf_put(o->mem, s, h->send_img, g->send_elems * dfcclTypeSize(o->type));
}

/* Wrong elements of the receive buffer r against the reference. */
static uint64_t check_result(const struct opts *o, const struct geom *g, char *r, const struct scratch *h)
{
    const size_t tsize = dfcclTypeSize(o->type);
    const void *got = r;
    if (o->mem == MEM_DEVICE) {
        bench_buf_get(o->mem, h->recv_img, r, g->recv_elems * tsize);
        got = h->recv_img;
    }
    return bench_count_wrong(got, h->expected, g->recv_elems, tsize);
}

/* Warm-up and timed iterations of one size, out of place or in place. */
struct pass bench_measure(const struct opts *o, const struct target *t, const struct geom *g, int inplace,
                          char *sendbuf, char *recvbuf, int have_ref, const struct scratch *h)
{
    struct pass res = {0};
    char *s, *r;
    if (!(res.ran = pass_bufs(o, g, inplace, sendbuf, recvbuf, &s, &r)))
        return res;
    const size_t tsize = dfcclTypeSize(o->type);
    const int aliased = inplace || s == r; /* the poison overwrites the input */
    int warm, iters;
    scaled_iters(o, g->size_bytes, &warm, &iters);
    if (o->mem == MEM_DEVICE)
        bench_fill_send(o, h->send_img, g);
    load_send(o, g, s, h);
    bench_buf_settle(o->mem);
    for (int w = 0; w < warm; w++)
        bench_run_coll(o, t, s, r, g->count, inplace);
    /* -m N in place: each call reduces the previous one's result, so the timed iterations
     * go unchecked and one more call, untimed, is checked afterwards */
    const int check_each = have_ref && (o->agg == 1 || !aliased);
    uint64_t wrong = 0;
    for (int it = 0; it < iters; it++) {
        if (check_each) { /* poison the output; in place, the input goes back over it */
            bench_buf_set(o->mem, r, 0xA5, g->recv_elems * tsize);
            if (aliased)
                load_send(o, g, s, h);
            bench_buf_settle(o->mem);
        }
        if (o->sync == SYNC_MPI) {
            MPI_Barrier(MPI_COMM_WORLD);
        } else if (o->sync == SYNC_DFCCL) {
            dfcclRequest_t req = NULL;
            if (dfcclBarrier(t->comm, &req) != dfcclSuccess || dfcclWait(&req) != dfcclSuccess)
                bench_die("dfcclBarrier: %s", dfcclGetLastError());
        }
        double t0 = MPI_Wtime();
        for (int a = 0; a < o->agg; a++)
            bench_run_coll(o, t, s, r, g->count, inplace);
        h->times[it] = (MPI_Wtime() - t0) / o->agg;
        if (check_each)
            wrong += check_result(o, g, r, h);
    }
    if (have_ref && !check_each) {
        bench_buf_set(o->mem, r, 0xA5, g->recv_elems * tsize);
        load_send(o, g, s, h);
        bench_buf_settle(o->mem);
        MPI_Barrier(MPI_COMM_WORLD);
        bench_run_coll(o, t, s, r, g->count, inplace);
        wrong += check_result(o, g, r, h);
    }
    /* an iteration's time over the ranks (-a) */
    double *maxtimes = h->maxtimes;
    if (o->average == AVG_RANK0) {
        memcpy(maxtimes, h->times, sizeof(double) * (size_t)iters);
        MPI_Bcast(maxtimes, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    } else {
        MPI_Allreduce(h->times, maxtimes, iters, MPI_DOUBLE,
                      o->average == AVG_MIN   ? MPI_MIN
                      : o->average == AVG_MAX ? MPI_MAX
                                              : MPI_SUM,
                      MPI_COMM_WORLD);
        if (o->average == AVG_MEAN)
            for (int it = 0; it < iters; it++)
                maxtimes[it] /= bench_nranks;
    }
    MPI_Allreduce(&wrong, &res.wrong, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    res.min = maxtimes[0];
    for (int it = 1; it < iters; it++)
        if (maxtimes[it] < res.min)
            res.min = maxtimes[it];
    res.med = median(maxtimes, iters); /* sorts maxtimes */
    res.p99 = maxtimes[(iters * 99 + 99) / 100 - 1];
    res.max = maxtimes[iters - 1];
    return res;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests: every algorithm's state machine driven step by step for N simulated
 * ranks in one process, with injected stalls and context copies, against a reference
 * and against an uninterrupted run. */
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_engine.h"
#include "algo.h"
#include "eng_sched.h"
#include "reduce.h"

/* ---- algorithms: N simulated ranks ---------------------------------------------------- */

typedef struct {
    int N;
    uint32_t depth;
    uint64_t chunk;
    eng_conn_ctrl_t *ctrl; /* [receiver][sender] */
    char *data;            /* [receiver][sender][depth][chunk] */
    eng_conn_t *conns;     /* [rank][peer] */
} sim_t;

/* small != 0: connections off the ring's direction (r-1 -> r -> r+1) step by small
 * bytes, as the GPU backend sizes its FIFOs; the algorithms must follow each
 * connection's own step size. */
static void sim_init(sim_t *s, int N, uint32_t depth, uint64_t chunk, uint64_t small)
{
    s->N = N;
    s->depth = depth;
    s->chunk = chunk;
    s->ctrl = calloc((size_t)N * N, sizeof(eng_conn_ctrl_t));
    s->data = calloc((size_t)N * N * depth, chunk);
    s->conns = calloc((size_t)N * N, sizeof(eng_conn_t));
    for (int r = 0; r < N; r++)
        for (int p = 0; p < N; p++) {
            eng_conn_t *c = &s->conns[r * N + p];
            c->recv_ctrl = &s->ctrl[r * N + p];
            c->recv_data = s->data + ((size_t)r * N + p) * depth * chunk;
            c->send_ctrl = &s->ctrl[p * N + r];
            c->send_data = s->data + ((size_t)p * N + r) * depth * chunk;
            c->rchunk = small && p != (r - 1 + N) % N ? small : chunk;
            c->schunk = small && p != (r + 1) % N ? small : chunk;
        }
}

static void sim_free(sim_t *s)
{
    free(s->ctrl);
    free(s->data);
    free(s->conns);
}

/* Rank r's view of one channel of the simulated connections. */
static eng_chan_view_t sim_view(sim_t *s, int r)
{
    return (eng_chan_view_t){
        .rank = r, .nranks = s->N, .depth = s->depth, .chunk = s->chunk, .conns = &s->conns[r * s->N]};
}

/* Up to `rounds` rounds of every rank not yet done, one call each, marking x[r].done. */
static void sim_finish(sim_t *s, const eng_coll_args_t *a, eng_ctx_t *x, int rounds)
{
    for (int round = 0; round < rounds; round++)
        for (int r = 0; r < s->N; r++) {
            eng_chan_view_t v = sim_view(s, r);
            if (!x[r].done && eng_algo_progress(&a[r], &v, &x[r]) == ENG_DONE)
                x[r].done = 1;
        }
}

/* The zero-copy read's cases: each rank's send buffer, scribbled over the moment the
 * rank has finished (NULL: left alone), as a user may reuse it then: a peer that still
 * read it afterwards would get the scribbles. */
static void *poison_buf[8];
static size_t poison_bytes[8];

/* Run every rank's state machine to completion. stall_pct: chance that a rank is
 * skipped in a round (an injected stall); copy_ctx: resume every time from a copy of
 * the saved context, as after a preemption. Returns the number of preemptions seen. */
static long sim_run(sim_t *s, eng_coll_args_t *args, int channels, int stall_pct, int copy_ctx, unsigned seed)
{
    const int N = s->N;
    int finished[8] = {0};
    eng_ctx_t *ctx = calloc((size_t)N * channels, sizeof(eng_ctx_t));
    for (int r = 0; r < N; r++)
        for (int c = 0; c < channels; c++)
            eng_ctx_init(&args[r], N, c, channels, &ctx[r * channels + c]);
    long waits = 0, rounds = 0;
    for (;;) {
        int left = 0;
        for (int i = 0; i < N * channels; i++)
            left += !ctx[i].done;
        if (!left)
            break;
        for (int i = 0; i < N; i++) {
            int r = (int)((i + (stall_pct ? rand_r(&seed) : 0)) % N);
            for (int c = 0; c < channels; c++) {
                eng_ctx_t *x = &ctx[r * channels + c];
                if (x->done)
                    continue;
                if (stall_pct && (int)(rand_r(&seed) % 100) < stall_pct)
                    continue;
                /* channels of one slot share nothing but the comm: give each its own
                 * connection set by offsetting into a per-channel simulation */
                eng_chan_view_t v = {.rank = r,
                                     .nranks = N,
                                     .depth = s[c].depth,
                                     .chunk = s[c].chunk,
                                     .conns = &s[c].conns[r * N],
                                     .sig = eng_coll_sig(&args[r])};
                eng_ctx_t saved = *x, *run = x;
                if (copy_ctx)
                    run = &saved;
                eng_prog_t p = eng_algo_progress(&args[r], &v, run);
                if (copy_ctx)
                    *x = saved;
                if (p == ENG_DONE)
                    x->done = 1;
                else
                    waits++; /* it stopped at a wait and will be resumed */
            }
            int all = r < 8 && !finished[r];
            for (int c = 0; c < channels && all; c++)
                all = ctx[r * channels + c].done;
            if (all) {
                finished[r] = 1;
                if (poison_buf[r])
                    memset(poison_buf[r], 0xff, poison_bytes[r]); /* NaN */
            }
        }
        ck_assert_msg(++rounds < 10000000, "algorithm does not terminate");
    }
    free(ctx);
    return waits;
}

static double val(int r, size_t i)
{
    return (double)((r * 7 + (int)(i % 23)) % 11) - 3.0; /* small integers: exact in float */
}

typedef struct {
    eng_coll_t coll;
    int N;
    size_t count;
    int root, inplace;
    uint64_t chunk;
    uint32_t depth;
    int channels;
    uint64_t oneshot;
    uint64_t small;  /* role-sized connections (see sim_init) */
    uint64_t ll;     /* ll_max */
    uint64_t direct; /* direct_max */
    uint32_t oneshot_ranks;
    uint64_t read; /* read_min */
    int refuse;    /* the zero-copy read refused: 1 every read (all PUSH), 2 some pairs */
    uint64_t wide; /* ll_wide: the LL round split over the channels up to this piece */
} algo_case_t;

/* eng_read_test_refuse (prims_cpu_read.h) for refuse 2: a mix of read and pushed peers,
 * not symmetric (rank r reads p but p does not read r, for some pairs) */
static int refuse_some(int reader, int owner)
{
    return (reader * 3 + owner) % 4 == 1;
}

static int refuse_all(int reader, int owner)
{
    (void)reader;
    (void)owner;
    return 1;
}

/* Fill inputs, run, check against the reference; returns outputs for comparisons. */
static float **run_case(const algo_case_t *k, int stall_pct, int copy_ctx, unsigned seed, long *waits_p)
{
    const int N = k->N;
    const size_t cnt = k->count;
    size_t in_elems = cnt, out_elems = cnt;
    if (k->coll == ENG_COLL_REDUCE_SCATTER)
        in_elems = cnt * (size_t)N;
    if (k->coll == ENG_COLL_ALLGATHER)
        out_elems = cnt * (size_t)N;
    if (k->coll == ENG_COLL_ALLTOALL)
        in_elems = out_elems = cnt * (size_t)N;
    if (k->coll == ENG_COLL_GATHER)
        out_elems = cnt * (size_t)N;
    if (k->coll == ENG_COLL_SCATTER)
        in_elems = cnt * (size_t)N;
    float **in = calloc((size_t)N, sizeof(float *)), **out = calloc((size_t)N, sizeof(float *));
    eng_coll_args_t *args = calloc((size_t)N, sizeof(*args));
    for (int r = 0; r < N; r++) {
        size_t big = in_elems > out_elems ? in_elems : out_elems;
        out[r] = calloc(big + 1, sizeof(float));
        in[r] = k->inplace ? out[r] : calloc(in_elems + 1, sizeof(float));
        for (size_t i = 0; i < big; i++)
            out[r][i] = -99.f;
        float *src = in[r];
        if (k->inplace && k->coll == ENG_COLL_ALLGATHER)
            src = out[r] + (size_t)r * cnt;
        if (k->inplace && k->coll == ENG_COLL_GATHER && r == k->root)
            src = out[r] + (size_t)r * cnt;
        size_t nin =
            k->coll == ENG_COLL_ALLGATHER || (k->coll == ENG_COLL_GATHER && src != in[r]) ? cnt : in_elems;
        for (size_t i = 0; i < nin; i++)
            src[i] = (float)val(r, i);
        args[r] = (eng_coll_args_t){.coll = (uint8_t)k->coll,
                                    .dtype = dfcclFloat32,
                                    .op = dfcclSum,
                                    .root = k->root,
                                    .count = cnt,
                                    .sendbuf = src,
                                    .recvbuf = out[r]};
        if (k->coll == ENG_COLL_REDUCE_SCATTER && k->inplace)
            args[r].recvbuf = out[r] + (size_t)r * cnt;
        if (k->coll == ENG_COLL_SCATTER && k->inplace && r == k->root)
            args[r].recvbuf = out[r] + (size_t)r * cnt; /* its own block stays where it is */
        args[r].algo = (uint8_t)eng_algo_select(&args[r], N, k->oneshot, k->ll, k->direct, k->oneshot_ranks,
                                                k->read, k->wide);
        if (k->wide) /* (the cases' pieces are all above one channel's share) */
            ck_assert_int_eq(args[r].algo, ENG_ALGO_LLW);
    }
    /* the zero-copy read: each rank's descriptor of its send buffer, as api.c attaches it */
    eng_block_t desc[8];
    memset(poison_buf, 0, sizeof(poison_buf));
    eng_read_test_refuse = k->refuse == 1 ? refuse_all : k->refuse == 2 ? refuse_some : NULL;
    for (int r = 0; r < N && k->read; r++) {
        ck_assert_int_eq(args[r].algo, ENG_ALGO_READ);
        const size_t bytes = cnt * sizeof(float) * (k->coll == ENG_COLL_ALLTOALL ? (size_t)N : 1);
        eng_read_desc_cpu(&desc[r], args[r].sendbuf, bytes);
        args[r].blocks = &desc[r];
        if (!k->inplace) { /* (in place, the send buffer is part of the output) */
            poison_buf[r] = (void *)args[r].sendbuf;
            poison_bytes[r] = bytes;
        }
    }
    sim_t sims[4];
    for (int c = 0; c < k->channels; c++)
        sim_init(&sims[c], N, k->depth, k->chunk, k->small);
    long waits = sim_run(sims, args, k->channels, stall_pct, copy_ctx, seed);
    memset(poison_buf, 0, sizeof(poison_buf));
    eng_read_test_refuse = NULL;
    if (waits_p)
        *waits_p = waits;
    for (int c = 0; c < k->channels; c++)
        sim_free(&sims[c]);

    /* reference */
    for (int r = 0; r < N; r++) {
        for (size_t i = 0; i < out_elems; i++) {
            double want;
            int check = 1;
            switch (k->coll) {
            case ENG_COLL_ALLREDUCE:
                want = 0;
                for (int p = 0; p < N; p++)
                    want += val(p, i);
                break;
            case ENG_COLL_REDUCE:
                check = r == k->root;
                want = 0;
                for (int p = 0; p < N; p++)
                    want += val(p, i);
                break;
            case ENG_COLL_BCAST: want = val(k->root, i); break;
            case ENG_COLL_ALLGATHER: want = val((int)(i / cnt), i % cnt); break;
            case ENG_COLL_REDUCE_SCATTER: {
                check = i < cnt;
                want = 0;
                for (int p = 0; p < N; p++)
                    want += val(p, (size_t)r * cnt + i);
                float got = ((float *)args[r].recvbuf)[i];
                if (check && got != (float)want)
                    ck_abort_msg("coll %d N %d count %zu rank %d [%zu]: %g != %g", k->coll, N, cnt, r, i, got,
                                 want);
                check = 0;
                break;
            }
            case ENG_COLL_ALLTOALL: want = val((int)(i / cnt), (size_t)r * cnt + i % cnt); break;
            case ENG_COLL_GATHER:
                check = r == k->root;
                want = val((int)(i / cnt), i % cnt);
                break;
            case ENG_COLL_SCATTER: {
                check = 0;
                const float got = ((float *)args[r].recvbuf)[i], w = (float)val(k->root, (size_t)r * cnt + i);
                if (i < cnt && got != w)
                    ck_abort_msg("scatter N %d count %zu rank %d [%zu]: %g != %g", N, cnt, r, i, got, w);
                break;
            }
            default: want = 0; check = 0;
            }
            if (check && out[r][i] != (float)want)
                ck_abort_msg("coll %d N %d count %zu inplace %d rank %d [%zu]: %g != %g", k->coll, N, cnt,
                             k->inplace, r, i, out[r][i], want);
        }
    }
    for (int r = 0; r < N; r++)
        if (!k->inplace)
            free(in[r]);
    free(in);
    free(args);
    return out;
}

static void free_out(float **out, int N)
{
    for (int r = 0; r < N; r++)
        free(out[r]);
    free(out);
}

static const algo_case_t cases[] = {
    /* coll, N, count, root, inplace, chunk, depth, channels, oneshot_max, small, ll_max,
     * direct_max, oneshot_ranks */
    {ENG_COLL_ALLREDUCE, 2, 1000, 0, 0, 256, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 3, 1001, 0, 1, 256, 4, 1, 0, 0, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 4, 7, 0, 0, 256, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0}, /* fewer elements than ranks */
    {ENG_COLL_ALLREDUCE, 5, 4099, 0, 0, 512, 3, 2, 0, 0, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 8, 1, 0, 0, 256, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 8, 0, 0, 0, 256, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 4, 50, 0, 0, 256, 2, 1, 1024, 0, 0, 0, 0, 0, 0, 0}, /* one-shot */
    {ENG_COLL_ALLREDUCE, 3, 50, 0, 1, 256, 2, 1, 1024, 0, 0, 0, 0, 0, 0, 0}, /* one-shot in place */
    {ENG_COLL_REDUCE_SCATTER, 4, 333, 0, 0, 256, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_REDUCE_SCATTER, 3, 333, 0, 1, 256, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLGATHER, 4, 333, 0, 0, 256, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLGATHER, 5, 100, 0, 1, 128, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_BCAST, 4, 1000, 2, 0, 256, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_BCAST, 3, 1000, 1, 1, 256, 3, 2, 0, 0, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_REDUCE, 4, 1000, 3, 0, 256, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_REDUCE, 5, 999, 1, 1, 128, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLTOALL, 4, 300, 0, 0, 256, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLTOALL, 3, 1, 0, 0, 256, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLTOALL, 1, 10, 0, 0, 256, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 1, 10, 0, 0, 256, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0},
    /* role-sized connections: large steps r-1 -> r -> r+1 only, as on the GPU */
    {ENG_COLL_ALLREDUCE, 5, 4099, 0, 0, 512, 3, 2, 0, 64, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 4, 30, 0, 1, 256, 2, 1, 128, 128, 0, 0, 0, 0, 0, 0}, /* one-shot fits a small step */
    /* one-shot in several chunks (one per FIFO step): uniform and role-sized steps */
    {ENG_COLL_ALLREDUCE, 3, 120, 0, 1, 256, 2, 1, 1024, 0, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 4, 100, 0, 0, 512, 4, 1, 1024, 128, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 5, 97, 0, 1, 512, 4, 2, 1024, 128, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_REDUCE_SCATTER, 4, 333, 0, 0, 256, 2, 1, 0, 64, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLGATHER, 3, 333, 0, 1, 256, 2, 2, 0, 64, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_BCAST, 4, 1000, 2, 0, 256, 2, 1, 0, 64, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_REDUCE, 5, 999, 1, 1, 256, 2, 2, 0, 64, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLTOALL, 4, 300, 0, 0, 256, 2, 1, 0, 64, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLTOALL, 5, 77, 0, 0, 512, 3, 2, 0, 128, 0, 0, 0, 0, 0, 0},
    /* LL one-shot: odd counts (a half-filled last packet), in place, 8 ranks, role-sized */
    {ENG_COLL_ALLREDUCE, 4, 51, 0, 0, 512, 2, 1, 1024, 0, 256, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 3, 63, 0, 1, 512, 2, 1, 1024, 0, 256, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 8, 1, 0, 0, 256, 2, 1, 128, 0, 128, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 5, 32, 0, 1, 512, 3, 2, 0, 256, 128, 0, 0, 0, 0, 0},
    /* gather and scatter, pairwise */
    {ENG_COLL_GATHER, 4, 300, 2, 0, 256, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_GATHER, 3, 100, 1, 1, 256, 2, 2, 0, 64, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_SCATTER, 5, 200, 0, 0, 256, 2, 2, 0, 64, 0, 0, 0, 0, 0, 0},
    {ENG_COLL_SCATTER, 4, 77, 3, 1, 256, 3, 1, 0, 0, 0, 0, 0, 0, 0, 0},
    /* one round of LL lines, every collective: odd counts, in place, roots, role-sized */
    {ENG_COLL_BCAST, 4, 100, 2, 0, 1024, 2, 1, 0, 0, 512, 0, 0, 0, 0, 0},
    {ENG_COLL_BCAST, 3, 33, 1, 1, 512, 2, 2, 0, 512, 256, 0, 0, 0, 0, 0},
    {ENG_COLL_REDUCE, 5, 63, 3, 0, 512, 2, 1, 0, 0, 256, 0, 0, 0, 0, 0},
    {ENG_COLL_REDUCE, 6, 31, 0, 1, 512, 3, 2, 0, 256, 128, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLGATHER, 4, 33, 0, 0, 512, 2, 1, 0, 0, 256, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLGATHER, 5, 17, 0, 1, 512, 2, 2, 0, 256, 128, 0, 0, 0, 0, 0},
    {ENG_COLL_REDUCE_SCATTER, 4, 31, 0, 0, 512, 2, 1, 0, 0, 256, 0, 0, 0, 0, 0},
    {ENG_COLL_REDUCE_SCATTER, 3, 21, 0, 1, 512, 2, 1, 0, 256, 128, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLTOALL, 4, 25, 0, 0, 512, 2, 1, 0, 0, 256, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLTOALL, 8, 3, 0, 0, 256, 3, 1, 0, 0, 64, 0, 0, 0, 0, 0},
    {ENG_COLL_GATHER, 4, 21, 1, 0, 512, 2, 1, 0, 0, 256, 0, 0, 0, 0, 0},
    {ENG_COLL_GATHER, 7, 9, 0, 1, 512, 2, 2, 0, 256, 128, 0, 0, 0, 0, 0},
    {ENG_COLL_SCATTER, 5, 13, 4, 0, 512, 2, 1, 0, 0, 256, 0, 0, 0, 0, 0},
    {ENG_COLL_SCATTER, 3, 7, 0, 1, 256, 2, 1, 0, 128, 64, 0, 0, 0, 0, 0},
    /* direct exchange: two-shot allreduce (odd counts, short and empty last blocks, in
     * place, several windows of chunks, several channels), reduce_scatter, allgather and
     * alltoall (in place where MPI allows), role-sized connections */
    {ENG_COLL_ALLREDUCE, 2, 1000, 0, 0, 256, 2, 1, 0, 0, 0, 1 << 20, 0, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 3, 1001, 0, 1, 256, 4, 1, 0, 0, 0, 1 << 20, 0, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 8, 9, 0, 0, 256, 2, 1, 0, 0, 0, 1 << 20, 0, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 5, 4099, 0, 0, 512, 3, 2, 0, 128, 0, 1 << 20, 0, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 7, 30000, 0, 1, 1024, 4, 3, 0, 256, 0, 1 << 20, 0, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 4, 100, 0, 0, 512, 4, 1, 64, 128, 32, 1 << 20, 0, 0, 0,
     0}, /* above one-shot and LL */
    {ENG_COLL_REDUCE_SCATTER, 4, 333, 0, 0, 256, 2, 1, 0, 64, 0, 1 << 20, 0, 0, 0, 0},
    {ENG_COLL_REDUCE_SCATTER, 3, 2001, 0, 1, 256, 3, 2, 0, 0, 0, 1 << 20, 0, 0, 0, 0},
    {ENG_COLL_ALLGATHER, 4, 333, 0, 0, 256, 2, 1, 0, 64, 0, 1 << 20, 0, 0, 0, 0},
    {ENG_COLL_ALLGATHER, 5, 1001, 0, 1, 512, 2, 3, 0, 0, 0, 1 << 20, 0, 0, 0, 0},
    {ENG_COLL_ALLTOALL, 4, 300, 0, 0, 256, 2, 1, 0, 64, 0, 1 << 20, 0, 0, 0, 0},
    {ENG_COLL_ALLTOALL, 6, 777, 0, 0, 512, 4, 2, 0, 128, 0, 1 << 20, 0, 0, 0, 0},
    /* the direct allreduce one-shot over every channel (few ranks) */
    {ENG_COLL_ALLREDUCE, 2, 1000, 0, 0, 256, 2, 1, 0, 0, 0, 1 << 20, 2, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 3, 4099, 0, 1, 256, 4, 2, 0, 128, 0, 1 << 20, 4, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 4, 30001, 0, 0, 1024, 3, 3, 0, 256, 0, 1 << 20, 4, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 2, 7, 0, 1, 256, 2, 1, 0, 0, 0, 1 << 20, 2, 0, 0, 0},
    /* the zero-copy read (read_min 1: every block): read where the buffers are, every
     * peer pushed (refuse 1), and a mix (2); odd counts (a block not a whole number of
     * grains, several windows of chunks), several channels, role-sized connections,
     * in place for allgather; alltoall in place is refused by the API */
    {ENG_COLL_ALLTOALL, 2, 1001, 0, 0, 256, 2, 1, 0, 0, 0, 0, 0, 1, 0, 0},
    {ENG_COLL_ALLTOALL, 3, 77, 0, 0, 256, 2, 2, 0, 64, 0, 0, 0, 1, 0, 0},
    {ENG_COLL_ALLTOALL, 4, 1, 0, 0, 512, 3, 1, 0, 0, 0, 0, 0, 1, 0, 0},
    {ENG_COLL_ALLTOALL, 5, 3001, 0, 0, 512, 4, 3, 0, 128, 0, 0, 0, 1, 0, 0},
    {ENG_COLL_ALLTOALL, 2, 1001, 0, 0, 256, 2, 1, 0, 0, 0, 0, 0, 1, 1, 0},
    {ENG_COLL_ALLTOALL, 3, 777, 0, 0, 256, 2, 2, 0, 64, 0, 0, 0, 1, 1, 0},
    {ENG_COLL_ALLTOALL, 4, 333, 0, 0, 512, 3, 1, 0, 0, 0, 0, 0, 1, 2, 0},
    {ENG_COLL_ALLTOALL, 5, 1999, 0, 0, 256, 2, 3, 0, 128, 0, 0, 0, 1, 2, 0},
    {ENG_COLL_ALLGATHER, 2, 1001, 0, 0, 256, 2, 1, 0, 0, 0, 0, 0, 1, 0, 0},
    {ENG_COLL_ALLGATHER, 3, 1003, 0, 1, 256, 2, 2, 0, 64, 0, 0, 0, 1, 0, 0},
    {ENG_COLL_ALLGATHER, 4, 5, 0, 0, 512, 3, 1, 0, 0, 0, 0, 0, 1, 0, 0},
    {ENG_COLL_ALLGATHER, 5, 4099, 0, 1, 512, 4, 3, 0, 128, 0, 0, 0, 1, 0, 0},
    {ENG_COLL_ALLGATHER, 2, 999, 0, 1, 256, 2, 1, 0, 0, 0, 0, 0, 1, 1, 0},
    {ENG_COLL_ALLGATHER, 3, 2001, 0, 0, 256, 2, 2, 0, 64, 0, 0, 0, 1, 1, 0},
    {ENG_COLL_ALLGATHER, 4, 3333, 0, 1, 512, 3, 2, 0, 0, 0, 0, 0, 1, 2, 0},
    {ENG_COLL_ALLGATHER, 5, 777, 0, 0, 256, 2, 3, 0, 128, 0, 0, 0, 1, 2, 0},
    {ENG_COLL_ALLTOALL, 8, 333, 0, 0, 256, 2, 2, 0, 64, 0, 0, 0, 1, 2, 0},
    {ENG_COLL_ALLGATHER, 8, 1001, 0, 1, 512, 3, 1, 0, 0, 0, 0, 0, 1, 0, 0},
    {ENG_COLL_ALLGATHER, 7, 99, 0, 0, 256, 2, 2, 0, 0, 0, 0, 0, 1, 1, 0},
    /* one round of LL lines split over the channels (ll_wide): pieces of 2-6 channels'
     * share over 2-4 channels (their lines not a multiple of the channels), odd counts, in
     * place, roots, role-sized connections, every uniform collective */
    {ENG_COLL_ALLREDUCE, 4, 3001, 0, 0, 8192, 2, 4, 0, 0, 4096, 0, 0, 0, 0, 1 << 20},
    {ENG_COLL_ALLREDUCE, 3, 1025, 0, 1, 8192, 3, 4, 0, 0, 4096, 0, 0, 0, 0, 1 << 20},
    {ENG_COLL_ALLREDUCE, 8, 1500, 0, 0, 16384, 2, 2, 0, 8192, 4096, 0, 0, 0, 0, 1 << 20},
    {ENG_COLL_ALLREDUCE, 2, 2001, 0, 1, 8192, 2, 4, 1024, 0, 4096, 1 << 20, 2, 0, 0, 1 << 20},
    {ENG_COLL_REDUCE_SCATTER, 4, 1401, 0, 0, 8192, 2, 3, 0, 0, 4096, 0, 0, 0, 0, 1 << 20},
    {ENG_COLL_REDUCE_SCATTER, 3, 1111, 0, 1, 16384, 2, 2, 0, 8192, 4096, 0, 0, 0, 0, 1 << 20},
    {ENG_COLL_ALLGATHER, 5, 1500, 0, 1, 8192, 2, 3, 0, 0, 4096, 0, 0, 0, 0, 1 << 20},
    {ENG_COLL_ALLGATHER, 4, 1025, 0, 0, 8192, 3, 2, 0, 0, 4096, 1 << 20, 0, 0, 0, 1 << 20},
    {ENG_COLL_ALLTOALL, 4, 1201, 0, 0, 8192, 2, 2, 0, 0, 4096, 0, 0, 0, 0, 1 << 20},
    {ENG_COLL_ALLTOALL, 6, 1203, 0, 0, 8192, 2, 3, 0, 8192, 4096, 0, 0, 0, 0, 1 << 20},
    {ENG_COLL_BCAST, 3, 2500, 1, 1, 8192, 2, 4, 0, 0, 4096, 0, 0, 0, 0, 1 << 20},
    {ENG_COLL_BCAST, 5, 1999, 0, 0, 8192, 2, 2, 0, 0, 4096, 0, 0, 0, 0, 1 << 20},
    {ENG_COLL_REDUCE, 5, 1111, 3, 0, 8192, 2, 4, 0, 0, 4096, 0, 0, 0, 0, 1 << 20},
    {ENG_COLL_REDUCE, 4, 2049, 0, 1, 8192, 3, 3, 0, 0, 4096, 0, 0, 0, 0, 1 << 20},
    {ENG_COLL_GATHER, 4, 1101, 1, 0, 8192, 2, 2, 0, 0, 4096, 0, 0, 0, 0, 1 << 20},
    {ENG_COLL_SCATTER, 5, 1501, 4, 1, 8192, 2, 3, 0, 0, 4096, 0, 0, 0, 0, 1 << 20},
};

START_TEST(algo_uninterrupted_vs_stalled)
{
    const algo_case_t *k = &cases[_i];
    float **plain = run_case(k, 0, 0, 1, NULL);
    long waits = 0;
    /* injected stalls (ranks skipped at random) and resumption from copied contexts must
     * give bit-identical results */
    float **stalled = run_case(k, 40, 1, 1234u + (unsigned)_i, &waits);
    size_t elems = k->count * (size_t)(k->coll == ENG_COLL_ALLGATHER || k->coll == ENG_COLL_ALLTOALL ||
                                               k->coll == ENG_COLL_REDUCE_SCATTER ||
                                               k->coll == ENG_COLL_GATHER || k->coll == ENG_COLL_SCATTER
                                           ? k->N
                                           : 1);
    for (int r = 0; r < k->N; r++)
        ck_assert_mem_eq(plain[r], stalled[r], elems * sizeof(float));
    if (k->N > 1 && k->count > 0)
        ck_assert_msg(waits > 0, "the stalled run never waited: the test did not bite");
    free_out(plain, k->N);
    free_out(stalled, k->N);
}
END_TEST

/* The zero-copy read: no rank finishes before every peer has read its buffer (rank 2
 * never runs: 0 and 1 must keep waiting for its reply), then all finish, read (0) or
 * pushed (1). */
START_TEST(read_owner_waits_for_every_reader)
{
    const int N = 3, refuse = _i;
    sim_t s;
    sim_init(&s, N, 2, 256, 0);
    float in[3][3 * 40], out[3][3 * 40];
    eng_coll_args_t a[3];
    eng_block_t desc[3];
    eng_ctx_t x[3];
    eng_read_test_refuse = refuse ? refuse_all : NULL;
    for (int r = 0; r < N; r++) {
        for (int i = 0; i < 3 * 40; i++)
            in[r][i] = (float)val(r, (size_t)i);
        a[r] = (eng_coll_args_t){.coll = ENG_COLL_ALLTOALL, .dtype = dfcclFloat32, .count = 40};
        a[r].sendbuf = in[r];
        a[r].recvbuf = out[r];
        a[r].algo = (uint8_t)eng_algo_select(&a[r], N, 0, 0, 0, 0, 1, 0);
        ck_assert_int_eq(a[r].algo, ENG_ALGO_READ);
        eng_read_desc_cpu(&desc[r], in[r], sizeof(in[r]));
        a[r].blocks = &desc[r];
        eng_ctx_init(&a[r], N, 0, 1, &x[r]);
    }
    for (int round = 0; round < 20; round++)
        for (int r = 0; r < 2; r++) {
            eng_chan_view_t v = {.rank = r, .nranks = N, .depth = 2, .chunk = 256, .conns = &s.conns[r * N]};
            ck_assert_int_ne(eng_algo_progress(&a[r], &v, &x[r]), ENG_DONE);
        }
    sim_finish(&s, a, x, 20);
    for (int r = 0; r < N; r++) {
        ck_assert(x[r].done);
        for (int p = 0; p < N; p++)
            ck_assert_mem_eq(&out[r][p * 40], &in[p][r * 40], 40 * sizeof(float));
    }
    eng_read_test_refuse = NULL;
    sim_free(&s);
}
END_TEST

/* The system call itself: a child process's buffer, read by its address and pid (the
 * path the sim's ranks, one process, never take). */
START_TEST(read_cma_from_another_process)
{
    static char buf[100000];
    int go[2], back[2];
    ck_assert_int_eq(pipe(go), 0);
    ck_assert_int_eq(pipe(back), 0);
    const pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        for (size_t i = 0; i < sizeof(buf); i++)
            buf[i] = (char)(i * 7 + 3); /* the child's copy only */
        char c = 1;
        if (write(back[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
            _exit(1);
        _exit(0);
    }
    char c;
    ck_assert_int_eq(read(back[0], &c, 1), 1);
    eng_block_t d;
    eng_read_desc_cpu(&d, buf, sizeof(buf));
    d.roff = (uint64_t)pid; /* the child's */
    char *got = malloc(sizeof(buf));
    ck_assert_int_eq(eng_read_copy_cpu(&d, 10, got, sizeof(buf) - 10), 1);
    for (size_t i = 10; i < sizeof(buf); i++)
        ck_assert_int_eq(got[i - 10], (char)(i * 7 + 3));
    ck_assert_int_eq(eng_read_copy_cpu(&d, 10, got, sizeof(buf)), 0); /* past the end it says */
    d.rbytes ^= 1;                                                    /* another pid namespace */
    ck_assert_int_eq(eng_read_copy_cpu(&d, 0, got, 16), 0);
    free(got);
    ck_assert_int_eq(write(go[1], &c, 1), 1);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    close(go[0]);
    close(go[1]);
    close(back[0]);
    close(back[1]);
}
END_TEST

START_TEST(algo_barrier_waits_for_all)
{
    /* rank 2 never arrives: the others must wait (not finish) */
    sim_t s;
    sim_init(&s, 3, 2, 256, 0);
    eng_coll_args_t a = {.coll = ENG_COLL_BARRIER, .algo = ENG_ALGO_ONESHOT};
    eng_ctx_t x[3];
    for (int r = 0; r < 3; r++)
        eng_ctx_init(&a, 3, 0, 1, &x[r]);
    for (int round = 0; round < 10; round++)
        for (int r = 0; r < 2; r++) {
            eng_chan_view_t v = {.rank = r, .nranks = 3, .depth = 2, .chunk = 256, .conns = &s.conns[r * 3]};
            ck_assert_int_ne(eng_algo_progress(&a, &v, &x[r]), ENG_DONE);
        }
    eng_chan_view_t v2 = {.rank = 2, .nranks = 3, .depth = 2, .chunk = 256, .conns = &s.conns[6]};
    ck_assert_int_eq(eng_algo_progress(&a, &v2, &x[2]), ENG_DONE);
    for (int r = 0; r < 2; r++) {
        eng_chan_view_t v = {.rank = r, .nranks = 3, .depth = 2, .chunk = 256, .conns = &s.conns[r * 3]};
        ck_assert_int_eq(eng_algo_progress(&a, &v, &x[r]), ENG_DONE);
    }
    sim_free(&s);
}
END_TEST

START_TEST(pairwise_sends_run_ahead)
{
    /* an alltoall of blocks that fit one FIFO step each: rank 0's first call posts its
     * block to every peer although no peer has run (lockstep steps would post one and
     * wait for the block of rank N-1), and it finishes only once every peer has */
    const int N = 5;
    const size_t cnt = 8; /* 32 bytes a block, chunk 256 */
    sim_t s;
    sim_init(&s, N, 2, 256, 0);
    float in[5][5 * 8], out[5][5 * 8];
    eng_coll_args_t a[5];
    eng_ctx_t x[5];
    for (int r = 0; r < N; r++) {
        for (size_t i = 0; i < (size_t)N * cnt; i++)
            in[r][i] = (float)val(r, i);
        a[r] = (eng_coll_args_t){.coll = ENG_COLL_ALLTOALL, .dtype = dfcclFloat32, .count = cnt};
        a[r].sendbuf = in[r];
        a[r].recvbuf = out[r];
        a[r].algo = (uint8_t)eng_algo_select(&a[r], N, 0, 0, 0, 0, 0, 0);
        ck_assert_int_eq(a[r].algo, ENG_ALGO_PAIRWISE);
        eng_ctx_init(&a[r], N, 0, 1, &x[r]);
    }
    eng_chan_view_t v0 = sim_view(&s, 0);
    ck_assert_int_eq(eng_algo_progress(&a[0], &v0, &x[0]), ENG_PROGRESS);
    for (int p = 1; p < N; p++)
        ck_assert_msg(s.conns[p].sent == 1, "rank 0's block for %d not posted in its first call", p);
    ck_assert_int_eq(eng_algo_progress(&a[0], &v0, &x[0]), ENG_WAIT);
    /* the others once each, in reverse order: each posts all its blocks in that call;
     * rank 1, last, then finds every block it needs and finishes */
    for (int r = N - 1; r > 0; r--) {
        eng_chan_view_t v = sim_view(&s, r);
        const eng_prog_t pr = eng_algo_progress(&a[r], &v, &x[r]);
        ck_assert_msg(x[r].step == (uint32_t)N, "rank %d posted %u of its blocks in one call", r,
                      x[r].step - 1);
        ck_assert_int_eq(pr, r == 1 ? ENG_DONE : ENG_PROGRESS);
        x[r].done = pr == ENG_DONE;
    }
    sim_finish(&s, a, x, 3);
    for (int r = 0; r < N; r++) {
        ck_assert_msg(x[r].done, "rank %d did not finish", r);
        for (int p = 0; p < N; p++)
            for (size_t i = 0; i < cnt; i++)
                ck_assert_msg(out[r][(size_t)p * cnt + i] == (float)val(p, (size_t)r * cnt + i),
                              "rank %d block %d [%zu]", r, p, i);
    }
    sim_free(&s);
}
END_TEST

/* reduce_scatterv through pairwise (cases 0-5): uneven counts with zeros and a block
 * larger than several FIFO steps, several channels (a block cut over them,
 * ENG_PAIR_PIECE), role-sized connections, in place or not; and in one LL round (cases
 * 6-9: the largest block within ll_max, odd sizes, a rank with nothing). With injected
 * stalls and every call resumed from a copy of its context (as after a preemption) each
 * rank's block is the exact sum of every rank's (integer-valued floats), no chunk reduced
 * twice, and nothing written past it. */
START_TEST(reduce_scatterv_stalled)
{
    const int N = 5, ll = _i >= 6, inplace = _i & 1, channels = ll ? 1 : 1 + (_i >> 1);
    const size_t big[5] = {3, 0, 9000, 1, 17}, small[5] = {3, 0, 9, 1, 17}; /* 9000 floats: 36 KiB */
    const size_t *cnt = ll ? small : big;
    size_t at[5], total = 0;
    for (int p = 0; p < N; p++) {
        at[p] = total;
        total += cnt[p];
    }
    float *in[5], *out[5];
    eng_coll_args_t a[5];
    eng_block_t *tab[5];
    uint64_t largest = 0;
    for (int p = 0; p < N; p++)
        largest = DFCCL_MAX(largest, cnt[p] * sizeof(float));
    for (int r = 0; r < N; r++) {
        in[r] = malloc((total + 16) * sizeof(float));
        out[r] = inplace ? in[r] + at[r] : malloc((cnt[r] + 16) * sizeof(float));
        for (size_t i = 0; i < total; i++)
            in[r][i] = (float)val(r, i);
        for (size_t i = 0; !inplace && i < cnt[r] + 16; i++)
            out[r][i] = -1.0f;
        tab[r] = malloc(sizeof(eng_block_t) * (size_t)N);
        for (int p = 0; p < N; p++)
            tab[r][p] =
                (eng_block_t){at[p] * sizeof(float), cnt[p] * sizeof(float), 0, cnt[r] * sizeof(float)};
        a[r] = (eng_coll_args_t){.coll = ENG_COLL_REDUCE_SCATTERV,
                                 .dtype = dfcclFloat32,
                                 .op = dfcclSum,
                                 .count = largest,
                                 .blocks = tab[r]};
        a[r].sendbuf = in[r];
        a[r].recvbuf = out[r];
        a[r].algo = (uint8_t)eng_algo_select(&a[r], N, 0, 256, 1 << 20, 0, 1, 0);
        ck_assert_int_eq(a[r].algo, ll ? ENG_ALGO_LL : ENG_ALGO_PAIRWISE);
    }
    sim_t sims[3];
    for (int c = 0; c < channels; c++)
        sim_init(&sims[c], N, 2, 1024, c || _i >= 8 ? 256 : 0);
    const long waits = sim_run(sims, a, channels, 40, 1, 77u + (unsigned)_i);
    ck_assert_msg(waits > 0, "the stalled run never waited: the test did not bite");
    for (int r = 0; r < N; r++) {
        for (size_t i = 0; i < cnt[r]; i++) {
            double want = 0;
            for (int p = 0; p < N; p++)
                want += val(p, at[r] + i);
            ck_assert_msg(out[r][i] == (float)want, "rank %d [%zu] = %g, want %g (in place %d, %d channels)",
                          r, i, (double)out[r][i], want, inplace, channels);
        }
        for (size_t i = cnt[r]; !inplace && i < cnt[r] + 16; i++)
            ck_assert_msg(out[r][i] == -1.0f, "rank %d wrote past its block at %zu", r, i);
    }
    for (int c = 0; c < channels; c++)
        sim_free(&sims[c]);
    for (int r = 0; r < N; r++) {
        if (!inplace)
            free(out[r]);
        free(in[r]);
        free(tab[r]);
    }
}
END_TEST

START_TEST(ll_stale_simple_data_never_passes)
{
    /* LL steps share FIFO steps with Simple ones: the step rank 0 is about to receive an
     * LL step in still holds the user's bytes of a Simple step, words whose upper halves
     * are small integers, among them the step's own number (the flag LL lines once
     * carried). Rank 1 has not written yet: rank 0 must wait, not reduce those bytes. */
    const int N = 2;
    sim_t s;
    sim_init(&s, N, 4, 256, 0);
    for (int i = 0; i < N * N; i++)
        s.conns[i].ll_salt = eng_ll_salt(0x1234abcdull);
    uint64_t *stale = (uint64_t *)s.conns[0 * N + 1].recv_data; /* rank 0's step 0 from rank 1 */
    for (int w = 0; w < 32; w++)
        stale[w] = (uint64_t)1 << 32 | (uint64_t)(w % 5); /* upper half 1: step 0's bare number */
    int32_t in[2] = {3, 4}, out[2] = {-1, -1};
    eng_coll_args_t a = {.coll = ENG_COLL_ALLREDUCE,
                         .dtype = dfcclInt32,
                         .op = dfcclSum,
                         .count = 2,
                         .sendbuf = in,
                         .recvbuf = out};
    a.algo = (uint8_t)eng_algo_select(&a, N, 1024, 256, 0, 0, 0, 0);
    ck_assert_int_eq(a.algo, ENG_ALGO_LL);
    eng_ctx_t x;
    eng_ctx_init(&a, N, 0, 1, &x);
    eng_chan_view_t v = {.rank = 0, .nranks = N, .depth = 4, .chunk = 256, .conns = &s.conns[0]};
    for (int k = 0; k < 3; k++)
        ck_assert_int_ne(eng_algo_progress(&a, &v, &x), ENG_DONE);
    ck_assert_int_eq(out[0], -1);
    ck_assert_int_eq(out[1], -1);
    /* flags: never 0 (fresh FIFOs), distinct across nearby steps, salted */
    const uint32_t salt = eng_ll_salt(0x1234abcdull);
    for (uint64_t k = 1; k < 100000; k++) {
        ck_assert_uint_ne(eng_ll_flag(salt, k), 0);
        ck_assert_uint_ne(eng_ll_flag(salt, k), eng_ll_flag(salt, k + 2));
        ck_assert_uint_ne(eng_ll_flag(salt, k), (uint32_t)k);
    }
    ck_assert_uint_ne(eng_ll_flag(salt, 1), eng_ll_flag(eng_ll_salt(0x1234abceull), 1));
    sim_free(&s);
}
END_TEST

START_TEST(ll_steps_reuse_and_wait)
{
    /* consecutive LL allreduces through the same connections (flags of every step differ,
     * the FIFO wraps), with injected stalls and resumption from copied contexts */
    const int N = 3;
    const size_t cnt = 21; /* 84 bytes: 11 lines, a half-filled last packet */
    sim_t s;
    sim_init(&s, N, 2, 256, 0);
    for (int round = 0; round < 9; round++) {
        float in[3][21], out[3][21];
        eng_coll_args_t args[3];
        for (int r = 0; r < N; r++) {
            for (size_t i = 0; i < cnt; i++) {
                in[r][i] = (float)((r * 5 + (int)i * 3 + round * 7) % 13) - 4.f;
                out[r][i] = -99.f;
            }
            args[r] = (eng_coll_args_t){.coll = ENG_COLL_ALLREDUCE,
                                        .dtype = dfcclFloat32,
                                        .op = dfcclSum,
                                        .count = cnt,
                                        .sendbuf = in[r],
                                        .recvbuf = round % 2 ? in[r] : out[r]};
            args[r].algo = (uint8_t)eng_algo_select(&args[r], N, 1024, 256, 0, 0, 0, 0);
            ck_assert_int_eq(args[r].algo, ENG_ALGO_LL);
        }
        float want[21];
        for (size_t i = 0; i < cnt; i++)
            want[i] = in[0][i] + in[1][i] + in[2][i];
        long waits = sim_run(&s, args, 1, 40, 1, 77u + (unsigned)round);
        ck_assert_msg(waits > 0, "round %d never waited: the test did not bite", round);
        for (int r = 0; r < N; r++)
            for (size_t i = 0; i < cnt; i++)
                ck_assert_msg(((float *)args[r].recvbuf)[i] == want[i], "round %d rank %d [%zu]: %g != %g",
                              round, r, i, ((float *)args[r].recvbuf)[i], want[i]);
    }
    /* an LL barrier with rank 2 absent: the others must wait; then rank 2 completes it */
    eng_coll_args_t b = {.coll = ENG_COLL_BARRIER};
    b.algo = (uint8_t)eng_algo_select(&b, N, 1024, 256, 0, 0, 0, 0);
    ck_assert_int_eq(b.algo, ENG_ALGO_LL);
    eng_ctx_t x[3];
    for (int r = 0; r < N; r++)
        eng_ctx_init(&b, N, 0, 1, &x[r]);
    for (int k = 0; k < 10; k++)
        for (int r = 0; r < 2; r++) {
            eng_chan_view_t v = {.rank = r, .nranks = N, .depth = 2, .chunk = 256, .conns = &s.conns[r * N]};
            ck_assert_int_ne(eng_algo_progress(&b, &v, &x[r]), ENG_DONE);
        }
    for (int r = 2; r >= 0; r--) {
        eng_chan_view_t v = {.rank = r, .nranks = N, .depth = 2, .chunk = 256, .conns = &s.conns[r * N]};
        ck_assert_int_eq(eng_algo_progress(&b, &v, &x[r]), ENG_DONE);
    }
    sim_free(&s);
}
END_TEST

/* Ranks whose arguments differ (eng_sig.h): a step of another signature is never taken,
 * so a rank that needs data from a mismatched peer waits (the stall the daemon then
 * diagnoses) instead of completing with it. mode: what rank 2 passes differently. */
static const struct {
    const char *name;
    int coll, algo_ll, oneshot, field; /* field: 0 op, 1 datatype, 2 root, 3 count */
    size_t count;
} sig_cases[] = {
    {"allreduce LL, op", ENG_COLL_ALLREDUCE, 1, 0, 0, 10},
    {"allreduce ring, op", ENG_COLL_ALLREDUCE, 0, 0, 0, 1000},
    {"allreduce one-shot, datatype", ENG_COLL_ALLREDUCE, 0, 1, 1, 40},
    {"allreduce ring, count", ENG_COLL_ALLREDUCE, 0, 0, 3, 1000},
    {"bcast LL, root", ENG_COLL_BCAST, 1, 0, 2, 10},
    {"bcast chain, root", ENG_COLL_BCAST, 0, 0, 2, 1000},
    {"reduce chain, root", ENG_COLL_REDUCE, 0, 0, 2, 1000},
};

START_TEST(signature_mismatch_never_taken)
{
    const int N = 3, k = _i;
    sim_t s;
    sim_init(&s, N, 4, 256, 0);
    for (int i = 0; i < N * N; i++)
        s.conns[i].ll_salt = eng_ll_salt(0x5151ull);
    int32_t in[3][1001], out[3][1001];
    eng_coll_args_t a[3];
    eng_ctx_t x[3];
    int done[3] = {0, 0, 0};
    for (int r = 0; r < N; r++) {
        for (int i = 0; i < 1001; i++)
            in[r][i] = r + 1, out[r][i] = -7;
        a[r] = (eng_coll_args_t){.coll = (uint8_t)sig_cases[k].coll,
                                 .dtype = dfcclInt32,
                                 .op = dfcclSum,
                                 .count = sig_cases[k].count,
                                 .sendbuf = in[r],
                                 .recvbuf = out[r]};
        if (r == 2) {
            const int f = sig_cases[k].field;
            a[r].op = f == 0 ? dfcclMax : a[r].op;
            a[r].dtype = f == 1 ? dfcclFloat32 : a[r].dtype;
            a[r].root = f == 2 ? 1 : 0;
            a[r].count += f == 3;
        }
        a[r].algo = (uint8_t)eng_algo_select(&a[r], N, sig_cases[k].oneshot ? 1024 : 0,
                                             sig_cases[k].algo_ll ? 256 : 0, 0, 0, 0, 0);
        eng_ctx_init(&a[r], N, 0, 1, &x[r]);
    }
    ck_assert_uint_ne(eng_coll_sig(&a[0]), eng_coll_sig(&a[2]));
    for (int round = 0; round < 500; round++)
        for (int r = 0; r < N; r++) {
            if (done[r])
                continue;
            eng_chan_view_t v = {.rank = r,
                                 .nranks = N,
                                 .depth = 4,
                                 .chunk = 256,
                                 .conns = &s.conns[r * N],
                                 .sig = eng_coll_sig(&a[r])};
            done[r] = eng_algo_progress(&a[r], &v, &x[r]) == ENG_DONE;
        }
    /* rank 2 receives from a peer of another signature in every case; an allreduce's
     * every rank does (a ring or a one-shot reads every peer, and the LL round too) */
    ck_assert_msg(!done[2], "%s: rank 2 completed with a peer of another signature", sig_cases[k].name);
    if (sig_cases[k].coll == ENG_COLL_ALLREDUCE)
        for (int r = 0; r < N; r++)
            ck_assert_msg(!done[r], "%s: rank %d completed", sig_cases[k].name, r);
    sim_free(&s);
}
END_TEST

START_TEST(signature_fields)
{
    /* a bcast moves bytes: 4 int32 and 16 uint8 are one signature; a reduction's datatype
     * counts; a v-collective's counts are each rank's own; the step word carries both */
    eng_coll_args_t b1 = {.coll = ENG_COLL_BCAST, .dtype = dfcclInt32, .count = 4, .root = 1};
    eng_coll_args_t b2 = {.coll = ENG_COLL_BCAST, .dtype = dfcclUint8, .count = 16, .root = 1};
    ck_assert_uint_eq(eng_coll_sig(&b1), eng_coll_sig(&b2));
    b2.root = 0;
    ck_assert_uint_ne(eng_coll_sig(&b1), eng_coll_sig(&b2));
    eng_coll_args_t r1 = {.coll = ENG_COLL_ALLREDUCE, .dtype = dfcclInt32, .op = dfcclSum, .count = 4};
    eng_coll_args_t r2 = r1;
    r2.dtype = dfcclFloat32;
    ck_assert_uint_ne(eng_coll_sig(&r1), eng_coll_sig(&r2));
    r2 = r1;
    r2.root = 3; /* not rooted: the root is no part of it */
    ck_assert_uint_eq(eng_coll_sig(&r1), eng_coll_sig(&r2));
    eng_coll_args_t g1 = {.coll = ENG_COLL_GATHERV, .dtype = dfcclUint8, .count = 100, .root = 0};
    eng_coll_args_t g2 = g1;
    g2.count = 7;
    ck_assert_uint_eq(eng_coll_sig(&g1), eng_coll_sig(&g2));
    for (uint64_t c = 0; c < 1000; c++) {
        r2 = r1;
        r2.count = c;
        ck_assert_uint_ne(eng_coll_sig(&r2), 0); /* 0 means "none" */
        ck_assert_uint_eq(eng_coll_sig(&r2) >> 31, 0);
        if (c != r1.count)
            ck_assert_uint_ne(eng_coll_sig(&r2), eng_coll_sig(&r1));
    }
    const uint32_t sig = eng_coll_sig(&r1);
    const uint64_t w = eng_step_word(65536, sig, 7);
    ck_assert_uint_eq(eng_step_bytes(w), 65536);
    ck_assert(eng_step_tagged(w, sig, 7) && eng_step_sig_ok(w, sig, 7));
    ck_assert(!eng_step_sig_ok(w, sig ^ 2, 7));
    /* a word an earlier step left in the slot (depth steps before) never passes */
    for (uint64_t k = 0; k < 64; k++)
        ck_assert(!eng_step_tagged(eng_step_word(8, sig, k), sig, k + 4));
    /* a word without a tag passes only a receiver without a signature (the net proxy
     * lands its sender's tag: check_net.c, net_landing_carries_tag) */
    ck_assert(!eng_step_sig_ok(65536, sig, 7) && !eng_step_tagged(65536, sig, 7));
    ck_assert(eng_step_sig_ok(65536, 0, 7) && eng_step_sig_ok(w, 0, 7));
}
END_TEST

Suite *check_algo_sim_suite(void)
{
    Suite *s = suite_create("algo_sim");
    TCase *t;
    t = tcase_create("algo");
    tcase_set_timeout(t, 60);
    tcase_add_loop_test(t, algo_uninterrupted_vs_stalled, 0, (int)(sizeof(cases) / sizeof(cases[0])));
    tcase_add_test(t, algo_barrier_waits_for_all);
    tcase_add_test(t, pairwise_sends_run_ahead);
    tcase_add_loop_test(t, reduce_scatterv_stalled, 0, 10);
    tcase_add_loop_test(t, read_owner_waits_for_every_reader, 0, 2);
    tcase_add_test(t, read_cma_from_another_process);
    tcase_add_test(t, ll_stale_simple_data_never_passes);
    tcase_add_test(t, ll_steps_reuse_and_wait);
    tcase_add_loop_test(t, signature_mismatch_never_taken, 0,
                        (int)(sizeof(sig_cases) / sizeof(sig_cases[0])));
    tcase_add_test(t, signature_fields);
    suite_add_tcase(s, t);
    return s;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests (Check) of the backend-neutral engine pieces: the submission ring, the
 * scheduler's decisions, the reductions, and every algorithm's state machine driven
 * step by step for N simulated ranks in one process, with injected stalls and context
 * copies, against a reference and against an uninterrupted run. */
#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "algo.h"
#include "eng_gpu_layout.h"
#include "eng_log.h"
#include "eng_ring.h"
#include "eng_sched.h"
#include "eng_trace.h"
#include "reduce.h"
#include "../../ucx_transport/net_landing.h"
#include "transport.h"

/* ---- submission ring ------------------------------------------------------------------ */

START_TEST(ring_order_full_and_wrap)
{
    enum { SZ = 8 };
    eng_sq_entry_t ents[SZ];
    memset(ents, 0, sizeof(ents));
    eng_ring_t r = {.entries = ents, .mask = SZ - 1};
    ck_assert_ptr_null(eng_ring_peek(&r));
    uint64_t next_in = 0, next_out = 0;
    for (int round = 0; round < 50; round++) {
        int put = 1 + round % SZ;
        for (int i = 0; i < put; i++) {
            eng_sq_entry_t *e = eng_ring_get_entry(&r);
            ck_assert_ptr_nonnull(e);
            e->seq = next_in++;
            eng_ring_commit(&r, e);
        }
        if (put == SZ)
            ck_assert_ptr_null(eng_ring_get_entry(&r)); /* full: never blocks */
        ck_assert_uint_eq(eng_ring_space_left(&r), (uint64_t)(SZ - put));
        for (int i = 0; i < put; i++) {
            eng_sq_entry_t *e = eng_ring_peek(&r);
            ck_assert_ptr_nonnull(e);
            ck_assert_uint_eq(e->seq, next_out++);
            eng_ring_advance(&r);
        }
        ck_assert_ptr_null(eng_ring_peek(&r));
    }
}
END_TEST

START_TEST(ring_unstamped_entry_invisible)
{
    eng_sq_entry_t ents[4];
    memset(ents, 0, sizeof(ents));
    eng_ring_t r = {.entries = ents, .mask = 3};
    eng_sq_entry_t *e = eng_ring_get_entry(&r);
    e->seq = 42; /* filled but not committed: the consumer must not see it */
    ck_assert_ptr_null(eng_ring_peek(&r));
    eng_ring_commit(&r, e);
    ck_assert_ptr_eq(eng_ring_peek(&r), e);
}
END_TEST

/* ---- scheduler decisions -------------------------------------------------------------- */

static const sched_params_t sp_on = {
    .preempt = 1, .base_ns = 1000, .max_ns = 100000, .growth = 4, .head_factor = 8};

START_TEST(sched_budget_rules)
{
    sched_params_t off = sp_on;
    off.preempt = 0;
    ck_assert_uint_eq(sched_budget(&off, 1000, 0), SCHED_FOREVER);
    ck_assert_uint_eq(sched_budget(&off, 1000, 1), SCHED_FOREVER);
    ck_assert_uint_eq(sched_budget(&sp_on, 1000, 0), 1000);
    ck_assert_uint_eq(sched_budget(&sp_on, 1000, 1), 8000); /* the head gets extra attempts */
    ck_assert_uint_eq(sched_budget(&sp_on, UINT64_MAX / 2, 1), SCHED_FOREVER); /* no overflow */
}
END_TEST

START_TEST(sched_threshold_adaptation)
{
    uint64_t t = sched_reset(&sp_on);
    ck_assert_uint_eq(t, 1000);
    t = sched_adapt(&sp_on, t, 100); /* quick wait: 4*100 < 1000, keep */
    ck_assert_uint_eq(t, 1000);
    t = sched_adapt(&sp_on, t, 2000); /* peers answer after 2 us: stick longer */
    ck_assert_uint_eq(t, 8000);
    t = sched_adapt(&sp_on, t, 10); /* never lowered while the task lives */
    ck_assert_uint_eq(t, 8000);
    t = sched_adapt(&sp_on, t, 1000000); /* capped */
    ck_assert_uint_eq(t, 100000);
    ck_assert_uint_eq(sched_reset(&sp_on), 1000); /* the next task starts over */
}
END_TEST

START_TEST(sched_slot_gating)
{
    /* K = 2: seq 0 and 1 may start; seq 2 only after seq 0 freed slot 0 */
    uint64_t slot_next[2] = {0, 1};
    ck_assert(sched_slot_free(slot_next[0], 0));
    ck_assert(sched_slot_free(slot_next[1], 1));
    ck_assert(!sched_slot_free(slot_next[0], 2));
    slot_next[0] = 0 + 2; /* seq 0 finished */
    ck_assert(sched_slot_free(slot_next[0], 2));
    ck_assert(!sched_slot_free(slot_next[0], 4));
}
END_TEST

/* ---- reductions ---------------------------------------------------------------------- */

START_TEST(reduce_int_and_float)
{
    int32_t a[5] = {1, -2, 3, INT32_MAX, 7}, b[5] = {4, 5, -6, 1, 7}, d[5];
    eng_reduce(d, a, b, 5, dfcclInt32, dfcclSum);
    ck_assert_int_eq(d[0], 5);
    ck_assert_int_eq(d[1], 3);
    ck_assert_int_eq(d[3], INT32_MIN); /* wraps, no UB */
    eng_reduce(d, a, b, 5, dfcclInt32, dfcclMax);
    ck_assert_int_eq(d[2], 3);
    eng_reduce(d, a, b, 5, dfcclInt32, dfcclMin);
    ck_assert_int_eq(d[2], -6);
    eng_reduce(d, a, b, 5, dfcclInt32, dfcclBxor);
    ck_assert_int_eq(d[4], 0);
    uint8_t ua[3] = {0xf0, 0x0f, 200}, ub[3] = {0x3c, 0x3c, 100}, ud[3];
    eng_reduce(ud, ua, ub, 3, dfcclUint8, dfcclBand);
    ck_assert_uint_eq(ud[0], 0x30);
    eng_reduce(ud, ua, ub, 3, dfcclUint8, dfcclBor);
    ck_assert_uint_eq(ud[1], 0x3f);
    eng_reduce(ud, ua, ub, 3, dfcclUint8, dfcclSum);
    ck_assert_uint_eq(ud[2], 44);
    double da[2] = {1.5, -2}, db[2] = {2, 3}, dd[2];
    eng_reduce(dd, da, db, 2, dfcclFloat64, dfcclProd);
    ck_assert(dd[0] == 3.0 && dd[1] == -6.0);
    ck_assert_int_eq(eng_reduce(dd, da, db, 2, dfcclFloat64, dfcclBand), -1);
    ck_assert(!eng_op_valid(dfcclFloat32, dfcclBor));
    ck_assert(!eng_op_valid(dfcclFloat16, dfcclBxor));
    ck_assert(eng_op_valid(dfcclInt64, dfcclBxor));
    ck_assert(!eng_op_valid(dfcclNumTypes, dfcclSum));
}
END_TEST

START_TEST(reduce_half_bf16)
{
    /* every half value round-trips through float */
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
            continue; /* nan payloads */
        ck_assert_uint_eq(eng_float_to_half(eng_half_to_float((uint16_t)h)), h);
    }
    ck_assert_uint_eq(eng_float_to_half(1.0f), 0x3c00);
    ck_assert_uint_eq(eng_float_to_half(65520.0f), 0x7c00);        /* rounds to inf */
    ck_assert_uint_eq(eng_float_to_half(1.0f + 0x1p-11f), 0x3c00); /* tie to even */
    ck_assert_uint_eq(eng_float_to_bf16(1.0f), 0x3f80);
    ck_assert(eng_bf16_to_float(eng_float_to_bf16(3.0f)) == 3.0f);
    uint16_t a[2] = {eng_float_to_half(1.5f), eng_float_to_half(-2.f)},
             b[2] = {eng_float_to_half(2.f), eng_float_to_half(8.f)}, d[2];
    eng_reduce(d, a, b, 2, dfcclFloat16, dfcclSum);
    ck_assert(eng_half_to_float(d[0]) == 3.5f && eng_half_to_float(d[1]) == 6.f);
    uint16_t x[1] = {eng_float_to_bf16(3.f)}, y[1] = {eng_float_to_bf16(5.f)}, z[1];
    eng_reduce(z, x, y, 1, dfcclBfloat16, dfcclMax);
    ck_assert(eng_bf16_to_float(z[0]) == 5.f);
}
END_TEST

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

/* Run every rank's state machine to completion. stall_pct: chance that a rank is
 * skipped in a round (an injected stall); copy_ctx: resume every time from a copy of
 * the saved context, as after a preemption. Returns the number of preemptions seen. */
static long sim_run(sim_t *s, eng_coll_args_t *args, int channels, int stall_pct, int copy_ctx, unsigned seed)
{
    const int N = s->N;
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
                                     .conns = &s[c].conns[r * N]};
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
} algo_case_t;

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
        args[r].algo = (uint8_t)eng_algo_select(&args[r], N, k->oneshot, k->ll, k->direct, k->oneshot_ranks);
    }
    sim_t sims[4];
    for (int c = 0; c < k->channels; c++)
        sim_init(&sims[c], N, k->depth, k->chunk, k->small);
    long waits = sim_run(sims, args, k->channels, stall_pct, copy_ctx, seed);
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
    {ENG_COLL_ALLREDUCE, 2, 1000, 0, 0, 256, 2, 1, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 3, 1001, 0, 1, 256, 4, 1, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 4, 7, 0, 0, 256, 2, 1, 0, 0, 0, 0, 0}, /* fewer elements than ranks */
    {ENG_COLL_ALLREDUCE, 5, 4099, 0, 0, 512, 3, 2, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 8, 1, 0, 0, 256, 2, 1, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 8, 0, 0, 0, 256, 2, 1, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 4, 50, 0, 0, 256, 2, 1, 1024, 0, 0, 0, 0}, /* one-shot */
    {ENG_COLL_ALLREDUCE, 3, 50, 0, 1, 256, 2, 1, 1024, 0, 0, 0, 0}, /* one-shot in place */
    {ENG_COLL_REDUCE_SCATTER, 4, 333, 0, 0, 256, 2, 1, 0, 0, 0, 0, 0},
    {ENG_COLL_REDUCE_SCATTER, 3, 333, 0, 1, 256, 2, 2, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLGATHER, 4, 333, 0, 0, 256, 2, 1, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLGATHER, 5, 100, 0, 1, 128, 2, 3, 0, 0, 0, 0, 0},
    {ENG_COLL_BCAST, 4, 1000, 2, 0, 256, 2, 1, 0, 0, 0, 0, 0},
    {ENG_COLL_BCAST, 3, 1000, 1, 1, 256, 3, 2, 0, 0, 0, 0, 0},
    {ENG_COLL_REDUCE, 4, 1000, 3, 0, 256, 2, 1, 0, 0, 0, 0, 0},
    {ENG_COLL_REDUCE, 5, 999, 1, 1, 128, 2, 2, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLTOALL, 4, 300, 0, 0, 256, 2, 1, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLTOALL, 3, 1, 0, 0, 256, 2, 2, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLTOALL, 1, 10, 0, 0, 256, 2, 1, 0, 0, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 1, 10, 0, 0, 256, 2, 1, 0, 0, 0, 0, 0},
    /* role-sized connections: large steps r-1 -> r -> r+1 only, as on the GPU */
    {ENG_COLL_ALLREDUCE, 5, 4099, 0, 0, 512, 3, 2, 0, 64, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 4, 30, 0, 1, 256, 2, 1, 128, 128, 0, 0, 0}, /* one-shot fits a small step */
    /* one-shot in several chunks (one per FIFO step): uniform and role-sized steps */
    {ENG_COLL_ALLREDUCE, 3, 120, 0, 1, 256, 2, 1, 1024, 0, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 4, 100, 0, 0, 512, 4, 1, 1024, 128, 0, 0, 0},
    {ENG_COLL_ALLREDUCE, 5, 97, 0, 1, 512, 4, 2, 1024, 128, 0, 0, 0},
    {ENG_COLL_REDUCE_SCATTER, 4, 333, 0, 0, 256, 2, 1, 0, 64, 0, 0, 0},
    {ENG_COLL_ALLGATHER, 3, 333, 0, 1, 256, 2, 2, 0, 64, 0, 0, 0},
    {ENG_COLL_BCAST, 4, 1000, 2, 0, 256, 2, 1, 0, 64, 0, 0, 0},
    {ENG_COLL_REDUCE, 5, 999, 1, 1, 256, 2, 2, 0, 64, 0, 0, 0},
    {ENG_COLL_ALLTOALL, 4, 300, 0, 0, 256, 2, 1, 0, 64, 0, 0, 0},
    {ENG_COLL_ALLTOALL, 5, 77, 0, 0, 512, 3, 2, 0, 128, 0, 0, 0},
    /* LL one-shot: odd counts (a half-filled last packet), in place, 8 ranks, role-sized */
    {ENG_COLL_ALLREDUCE, 4, 51, 0, 0, 512, 2, 1, 1024, 0, 256, 0, 0},
    {ENG_COLL_ALLREDUCE, 3, 63, 0, 1, 512, 2, 1, 1024, 0, 256, 0, 0},
    {ENG_COLL_ALLREDUCE, 8, 1, 0, 0, 256, 2, 1, 128, 0, 128, 0, 0},
    {ENG_COLL_ALLREDUCE, 5, 32, 0, 1, 512, 3, 2, 0, 256, 128, 0, 0},
    /* gather and scatter, pairwise */
    {ENG_COLL_GATHER, 4, 300, 2, 0, 256, 2, 1, 0, 0, 0, 0, 0},
    {ENG_COLL_GATHER, 3, 100, 1, 1, 256, 2, 2, 0, 64, 0, 0, 0},
    {ENG_COLL_SCATTER, 5, 200, 0, 0, 256, 2, 2, 0, 64, 0, 0, 0},
    {ENG_COLL_SCATTER, 4, 77, 3, 1, 256, 3, 1, 0, 0, 0, 0, 0},
    /* one round of LL lines, every collective: odd counts, in place, roots, role-sized */
    {ENG_COLL_BCAST, 4, 100, 2, 0, 1024, 2, 1, 0, 0, 512, 0, 0},
    {ENG_COLL_BCAST, 3, 33, 1, 1, 512, 2, 2, 0, 512, 256, 0, 0},
    {ENG_COLL_REDUCE, 5, 63, 3, 0, 512, 2, 1, 0, 0, 256, 0, 0},
    {ENG_COLL_REDUCE, 6, 31, 0, 1, 512, 3, 2, 0, 256, 128, 0, 0},
    {ENG_COLL_ALLGATHER, 4, 33, 0, 0, 512, 2, 1, 0, 0, 256, 0, 0},
    {ENG_COLL_ALLGATHER, 5, 17, 0, 1, 512, 2, 2, 0, 256, 128, 0, 0},
    {ENG_COLL_REDUCE_SCATTER, 4, 31, 0, 0, 512, 2, 1, 0, 0, 256, 0, 0},
    {ENG_COLL_REDUCE_SCATTER, 3, 21, 0, 1, 512, 2, 1, 0, 256, 128, 0, 0},
    {ENG_COLL_ALLTOALL, 4, 25, 0, 0, 512, 2, 1, 0, 0, 256, 0, 0},
    {ENG_COLL_ALLTOALL, 8, 3, 0, 0, 256, 3, 1, 0, 0, 64, 0, 0},
    {ENG_COLL_GATHER, 4, 21, 1, 0, 512, 2, 1, 0, 0, 256, 0, 0},
    {ENG_COLL_GATHER, 7, 9, 0, 1, 512, 2, 2, 0, 256, 128, 0, 0},
    {ENG_COLL_SCATTER, 5, 13, 4, 0, 512, 2, 1, 0, 0, 256, 0, 0},
    {ENG_COLL_SCATTER, 3, 7, 0, 1, 256, 2, 1, 0, 128, 64, 0, 0},
    /* direct exchange: two-shot allreduce (odd counts, short and empty last blocks, in
     * place, several windows of chunks, several channels), reduce_scatter, allgather and
     * alltoall (in place where MPI allows), role-sized connections */
    {ENG_COLL_ALLREDUCE, 2, 1000, 0, 0, 256, 2, 1, 0, 0, 0, 1 << 20, 0},
    {ENG_COLL_ALLREDUCE, 3, 1001, 0, 1, 256, 4, 1, 0, 0, 0, 1 << 20, 0},
    {ENG_COLL_ALLREDUCE, 8, 9, 0, 0, 256, 2, 1, 0, 0, 0, 1 << 20, 0},
    {ENG_COLL_ALLREDUCE, 5, 4099, 0, 0, 512, 3, 2, 0, 128, 0, 1 << 20, 0},
    {ENG_COLL_ALLREDUCE, 7, 30000, 0, 1, 1024, 4, 3, 0, 256, 0, 1 << 20, 0},
    {ENG_COLL_ALLREDUCE, 4, 100, 0, 0, 512, 4, 1, 64, 128, 32, 1 << 20, 0}, /* above one-shot and LL */
    {ENG_COLL_REDUCE_SCATTER, 4, 333, 0, 0, 256, 2, 1, 0, 64, 0, 1 << 20, 0},
    {ENG_COLL_REDUCE_SCATTER, 3, 2001, 0, 1, 256, 3, 2, 0, 0, 0, 1 << 20, 0},
    {ENG_COLL_ALLGATHER, 4, 333, 0, 0, 256, 2, 1, 0, 64, 0, 1 << 20, 0},
    {ENG_COLL_ALLGATHER, 5, 1001, 0, 1, 512, 2, 3, 0, 0, 0, 1 << 20, 0},
    {ENG_COLL_ALLTOALL, 4, 300, 0, 0, 256, 2, 1, 0, 64, 0, 1 << 20, 0},
    {ENG_COLL_ALLTOALL, 6, 777, 0, 0, 512, 4, 2, 0, 128, 0, 1 << 20, 0},
    /* the direct allreduce one-shot over every channel (few ranks) */
    {ENG_COLL_ALLREDUCE, 2, 1000, 0, 0, 256, 2, 1, 0, 0, 0, 1 << 20, 2},
    {ENG_COLL_ALLREDUCE, 3, 4099, 0, 1, 256, 4, 2, 0, 128, 0, 1 << 20, 4},
    {ENG_COLL_ALLREDUCE, 4, 30001, 0, 0, 1024, 3, 3, 0, 256, 0, 1 << 20, 4},
    {ENG_COLL_ALLREDUCE, 2, 7, 0, 1, 256, 2, 1, 0, 0, 0, 1 << 20, 2},
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

START_TEST(algo_select_rules)
{
    eng_coll_args_t a = {.coll = ENG_COLL_ALLREDUCE, .dtype = dfcclFloat32, .count = 16};
    ck_assert_int_eq(eng_algo_select(&a, 4, 64, 0, 0, 0), ENG_ALGO_ONESHOT);
    ck_assert_int_eq(eng_algo_select(&a, 4, 64, 32, 0, 0), ENG_ALGO_ONESHOT);
    ck_assert_int_eq(eng_algo_select(&a, 4, 64, 64, 0, 0), ENG_ALGO_LL);
    ck_assert_int_eq(eng_algo_select(&a, ENG_LL_MAX_RANKS + 1, 64, 64, 0, 0), ENG_ALGO_ONESHOT);
    a.count = 17;
    ck_assert_int_eq(eng_algo_select(&a, 4, 64, 64, 0, 0), ENG_ALGO_RING);
    ck_assert_int_eq(eng_algo_select(&a, 1, 64, 64, 0, 0), ENG_ALGO_SELF);
    a.coll = ENG_COLL_BCAST;
    ck_assert_int_eq(eng_algo_select(&a, 4, 64, 64, 0, 0), ENG_ALGO_CHAIN);
    a.coll = ENG_COLL_ALLTOALL;
    ck_assert_int_eq(eng_algo_select(&a, 4, 64, 64, 0, 0), ENG_ALGO_PAIRWISE);
    /* every uniform collective in one LL round while its piece fits ll_max, never a
     * table's, never an empty one */
    static const uint8_t ll_colls[] = {ENG_COLL_REDUCE,         ENG_COLL_BCAST,    ENG_COLL_ALLGATHER,
                                       ENG_COLL_REDUCE_SCATTER, ENG_COLL_ALLTOALL, ENG_COLL_GATHER,
                                       ENG_COLL_SCATTER};
    static const eng_block_t tab[4];
    for (size_t i = 0; i < sizeof ll_colls; i++) {
        eng_coll_args_t u = {.coll = ll_colls[i], .dtype = dfcclFloat32, .count = 16};
        ck_assert_int_eq(eng_algo_select(&u, 4, 64, 64, 0, 0), ENG_ALGO_LL);
        ck_assert_int_ne(eng_algo_select(&u, 4, 64, 63, 0, 0), ENG_ALGO_LL);
        ck_assert_int_ne(eng_algo_select(&u, 4, 64, 0, 0, 0), ENG_ALGO_LL);
        ck_assert_int_ne(eng_algo_select(&u, ENG_LL_MAX_RANKS + 1, 64, 64, 0, 0), ENG_ALGO_LL);
        u.count = 0;
        ck_assert_int_ne(eng_algo_select(&u, 4, 64, 64, 0, 0), ENG_ALGO_LL);
        u.count = 16;
        u.blocks = tab;
        ck_assert_int_ne(eng_algo_select(&u, 4, 64, 64, 0, 0), ENG_ALGO_LL);
    }
    /* the direct exchange: allreduce above one-shot, reduce_scatter, allgather and alltoall
     * whose larger buffer (N blocks but for allreduce) fits direct_max; never a table's,
     * an empty one, more than ENG_DX_MAX_RANKS ranks or the other collectives */
    eng_coll_args_t d = {.coll = ENG_COLL_ALLREDUCE, .dtype = dfcclFloat32, .count = 1024};
    ck_assert_int_eq(eng_algo_select(&d, 4, 64, 64, 4096, 0), ENG_ALGO_DIRECT);
    ck_assert_int_eq(eng_algo_select(&d, 4, 64, 64, 4095, 0), ENG_ALGO_RING);
    ck_assert_int_eq(eng_algo_select(&d, 4, 64, 64, 0, 0), ENG_ALGO_RING);
    ck_assert_int_eq(eng_algo_select(&d, 4, 4096, 64, 4096, 0), ENG_ALGO_ONESHOT);
    ck_assert_int_eq(eng_algo_select(&d, ENG_DX_MAX_RANKS + 1, 64, 64, 4096, 0), ENG_ALGO_RING);
    ck_assert_int_eq(eng_algo_select(&d, 4, 64, 64, 4096, 4), ENG_ALGO_DIRECT1);
    ck_assert_int_eq(eng_algo_select(&d, 5, 64, 64, 4096, 4), ENG_ALGO_DIRECT);
    ck_assert_int_eq(eng_algo_select(&d, 4, 64, 64, 0, 4), ENG_ALGO_RING);
    static const uint8_t dx_colls[] = {ENG_COLL_REDUCE_SCATTER, ENG_COLL_ALLGATHER, ENG_COLL_ALLTOALL};
    for (size_t i = 0; i < sizeof dx_colls; i++) {
        eng_coll_args_t u = {.coll = dx_colls[i], .dtype = dfcclFloat32, .count = 256};
        ck_assert_int_eq(eng_algo_select(&u, 4, 64, 64, 4096, 0), ENG_ALGO_DIRECT);
        ck_assert_int_ne(eng_algo_select(&u, 4, 64, 64, 4095, 0), ENG_ALGO_DIRECT);
        ck_assert_int_eq(eng_algo_select(&u, 4, 64, 1024, 4096, 0), ENG_ALGO_LL);
        u.blocks = tab;
        ck_assert_int_ne(eng_algo_select(&u, 4, 64, 64, 4096, 0), ENG_ALGO_DIRECT);
    }
    static const uint8_t no_dx[] = {ENG_COLL_REDUCE, ENG_COLL_BCAST, ENG_COLL_GATHER, ENG_COLL_SCATTER};
    for (size_t i = 0; i < sizeof no_dx; i++) {
        eng_coll_args_t u = {.coll = no_dx[i], .dtype = dfcclFloat32, .count = 256};
        ck_assert_int_ne(eng_algo_select(&u, 4, 64, 64, 1 << 20, 0), ENG_ALGO_DIRECT);
    }
    a.coll = ENG_COLL_BARRIER;
    ck_assert_int_eq(eng_algo_select(&a, 4, 64, 0, 0, 0), ENG_ALGO_ONESHOT);
    ck_assert_int_eq(eng_algo_select(&a, 4, 64, 64, 0, 0), ENG_ALGO_LL);
}
END_TEST

START_TEST(pairwise_pieces_partition_blocks)
{
    /* every block is cut into pieces that tile it exactly, once, over the channels a rank
     * takes part on; a table's pieces depend on the block alone (both ends agree), and a
     * rank's channels cover every block of its table */
    static const uint64_t bytes[] = {0, 1, 15, 16, 17, 65535, 65536, 65537, 1000003, 3u << 20};
    eng_block_t tab[2];
    for (size_t bi = 0; bi < sizeof bytes / sizeof bytes[0]; bi++)
        for (int C = 1; C <= 64; C = C * 2 + 1) {
            /* a table: this rank's largest block in count, as dfcclAllToAllv gives it */
            tab[0] = (eng_block_t){0, bytes[bi], 0, 7};
            tab[1] = (eng_block_t){0, 3, 0, bytes[bi]};
            eng_coll_args_t a = {.coll = ENG_COLL_ALLTOALLV,
                                 .dtype = dfcclUint8,
                                 .algo = ENG_ALGO_PAIRWISE,
                                 .count = DFCCL_MAX(bytes[bi], 7),
                                 .blocks = tab};
            const int k = eng_active_channels(&a, 2, C);
            ck_assert_int_eq(k, (int)eng_pair_chans(a.count, (uint64_t)C));
            for (int blk = 0; blk < 2; blk++) {
                const uint64_t B = blk ? 3 : bytes[bi];
                uint64_t covered = 0, next = 0;
                for (int c = 0; c < C; c++) {
                    eng_ctx_t x;
                    eng_ctx_init(&a, 2, c, C, &x);
                    ck_assert_int_eq(!x.done, c < k);
                    if (x.done)
                        continue;
                    uint64_t lo, hi;
                    pairwise_piece(&a, &x, B, &lo, &hi);
                    if (hi > lo) {
                        ck_assert_uint_eq(lo, next); /* in channel order, no gap, no overlap */
                        ck_assert_uint_eq(lo % 16, 0);
                        next = hi;
                        covered += hi - lo;
                    }
                }
                ck_assert_uint_eq(covered, B);
            }
            /* uniform: an alltoall of `count` floats per peer */
            eng_coll_args_t u = {.coll = ENG_COLL_ALLTOALL,
                                 .dtype = dfcclFloat32,
                                 .algo = ENG_ALGO_PAIRWISE,
                                 .count = bytes[bi] / 4};
            uint64_t covered = 0;
            for (int c = 0; c < C; c++) {
                eng_ctx_t x;
                eng_ctx_init(&u, 3, c, C, &x);
                if (x.done)
                    continue;
                uint64_t lo, hi;
                pairwise_piece(&u, &x, u.count * 4, &lo, &hi);
                covered += hi - lo;
            }
            ck_assert_uint_eq(covered, u.count * 4);
        }
}
END_TEST

START_TEST(active_channels_match_ranges)
{
    /* the closed form must count exactly the channels eng_ctx_init gives work */
    static const size_t counts[] = {1, 2, 3, 7, 15, 16, 17, 100, 1000, 65537};
    static const uint8_t algos[] = {ENG_ALGO_RING,     ENG_ALGO_ONESHOT, ENG_ALGO_SELF,   ENG_ALGO_CHAIN,
                                    ENG_ALGO_PAIRWISE, ENG_ALGO_LL,      ENG_ALGO_DIRECT, ENG_ALGO_DIRECT1};
    static const uint8_t colls[] = {ENG_COLL_ALLREDUCE, ENG_COLL_ALLGATHER, ENG_COLL_BCAST};
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
        for (size_t ai = 0; ai < sizeof algos; ai++)
            for (size_t oi = 0; oi < sizeof colls; oi++)
                for (int N = 1; N <= 9; N += 4)
                    for (int C = 1; C <= 32; C = C * 2 + 1) {
                        eng_coll_args_t a = {
                            .coll = colls[oi], .dtype = dfcclFloat32, .algo = algos[ai], .count = counts[ci]};
                        int k = 0;
                        for (int c = 0; c < C; c++) {
                            eng_ctx_t x;
                            eng_ctx_init(&a, N, c, C, &x);
                            k += !x.done;
                        }
                        ck_assert_int_eq(eng_active_channels(&a, N, C), k);
                    }
}
END_TEST

START_TEST(self_copy_pieces_cover_output)
{
    /* one rank: the channels' pieces tile [0, bytes) exactly and in order, on the lowest
     * channels: a small copy stays on channel 0 alone, a large one uses every channel it
     * has pieces for */
    static const size_t counts[] = {0, 1, 3, 65535, 65536, 65537, 1u << 20, (1u << 22) + 5};
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
        for (int C = 1; C <= 64; C = C * 2 + 1) {
            eng_coll_args_t a = {.coll = ENG_COLL_ALLREDUCE,
                                 .dtype = dfcclFloat32,
                                 .algo = ENG_ALGO_SELF,
                                 .count = counts[ci]};
            const uint64_t n = eng_self_bytes(&a);
            uint64_t next = 0;
            int active = 0;
            for (int c = 0; c < C; c++) {
                eng_ctx_t x;
                eng_ctx_init(&a, 1, c, C, &x);
                if (x.done)
                    continue;
                ck_assert_int_eq(c, active); /* the lowest channels, from channel 0 */
                active++;
                const uint64_t b0 = x.lo * ENG_SELF_PIECE;
                const uint64_t b1 = x.hi * ENG_SELF_PIECE < n ? x.hi * ENG_SELF_PIECE : n;
                if (n)
                    ck_assert_uint_eq(b0, next);
                next = b1 > next ? b1 : next;
            }
            ck_assert_uint_eq(next, n);
            ck_assert_int_eq(active, eng_active_channels(&a, 1, C));
            const uint64_t pieces = n ? (n + ENG_SELF_PIECE - 1) / ENG_SELF_PIECE : 1;
            ck_assert_int_eq(active, (int)(pieces < (uint64_t)C ? pieces : (uint64_t)C));
        }
}
END_TEST

START_TEST(direct_ranges_tile_blocks)
{
    /* the direct exchange's channels tile a block [0, S) exactly, in order, on 16-byte
     * boundaries, from channel 0 up, each at least ENG_DX_PIECE bytes but the last; an
     * allreduce's N blocks cover its buffer */
    static const size_t counts[] = {1, 3, 17, 1000, 4099, 65536, 262147, 1u << 22};
    static const uint8_t dtypes[] = {dfcclInt8, dfcclFloat16, dfcclFloat32, dfcclFloat64};
    static const uint8_t colls[] = {ENG_COLL_ALLREDUCE, ENG_COLL_ALLGATHER, ENG_COLL_ALLREDUCE};
    for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
        for (size_t ti = 0; ti < sizeof dtypes; ti++)
            for (size_t oi = 0; oi < sizeof colls; oi++)
                for (int N = 2; N <= 9; N += 7)
                    for (int C = 1; C <= 64; C = C * 2 + 1) {
                        eng_coll_args_t a = {.coll = colls[oi],
                                             .dtype = dtypes[ti],
                                             .algo = oi == 2 ? ENG_ALGO_DIRECT1 : ENG_ALGO_DIRECT,
                                             .count = counts[ci]};
                        const uint64_t ts = eng_type_size(a.dtype), G = eng_dx_grain(&a);
                        const uint64_t S = eng_dx_stride(&a, N);
                        if (a.algo == ENG_ALGO_DIRECT1)
                            ck_assert_uint_eq(S, (a.count + G - 1) / G * G);
                        else if (a.coll == ENG_COLL_ALLREDUCE) {
                            ck_assert_uint_eq(S % G, 0);
                            ck_assert_uint_ge(S * (uint64_t)N, a.count);
                            ck_assert_uint_lt(S * (uint64_t)(N - 1), a.count + G * (uint64_t)N);
                        }
                        uint64_t next = 0;
                        int active = 0;
                        for (int c = 0; c < C; c++) {
                            eng_ctx_t x;
                            eng_ctx_init(&a, N, c, C, &x);
                            if (x.done)
                                continue;
                            ck_assert_int_eq(c, active++);
                            const uint64_t lo = x.lo * G, hi = DFCCL_MIN(x.hi * G, S);
                            ck_assert_uint_eq(lo, next);
                            ck_assert_uint_gt(hi, lo);
                            if (hi < S)
                                ck_assert_uint_ge((hi - lo) * ts, ENG_DX_PIECE / 2);
                            next = hi;
                        }
                        ck_assert_uint_eq(next, S);
                        ck_assert_int_eq(active, eng_active_channels(&a, N, C));
                    }
}
END_TEST

START_TEST(gpu_fifo_layout)
{
    /* every connection of a receiver's FIFO memory is inside it, disjoint from the others,
     * aligned, large enough for its step size, and sender and receiver agree on it */
    const uint64_t chunks[][2] = {{131072, 16384}, {262144, 4096}, {1024, 1024}};
    for (size_t ci = 0; ci < sizeof chunks / sizeof chunks[0]; ci++)
        for (int N = 1; N <= 9; N++)
            for (uint32_t depth = 2; depth <= 4; depth += 2) {
                const uint64_t big = chunks[ci][0],
                               small = eng_gpu_small_chunk(chunks[ci][1], 4096, depth, big);
                const size_t bc = ENG_GPU_CTRL_BYTES + depth * big, sc = ENG_GPU_CTRL_BYTES + depth * small;
                const size_t G = 3; /* slots x channels */
                const size_t total = eng_gpu_fifo_off(G, 0, 0, N, bc, sc);
                ck_assert_uint_eq(total, G * (bc + (size_t)(N - 1) * sc));
                for (int R = 0; R < N; R++) {
                    size_t end_prev = 0;
                    for (size_t g = 0; g < G; g++)
                        for (int src = 0; src < N; src++) {
                            /* in address order: group by group, source by source */
                            const size_t off = eng_gpu_fifo_off(g, src, R, N, bc, sc);
                            const uint64_t step = eng_gpu_step(src, R, N, big, small);
                            const size_t len = ENG_GPU_CTRL_BYTES + depth * step;
                            ck_assert_uint_eq(off, end_prev);
                            ck_assert_uint_eq(off % 256, 0);
                            end_prev = off + len;
                            ck_assert_uint_le(end_prev, total);
                            /* the ring's direction gets the large steps (N = 2: both peers) */
                            ck_assert_uint_eq(step, src == (R - 1 + N) % N ? big : small);
                        }
                    ck_assert_uint_eq(end_prev, total);
                }
                /* a one-shot contribution always fits the small steps of one FIFO (one
                 * chunk per step), an LL one of 4 KiB one step */
                ck_assert_uint_ge(small * depth, DFCCL_MIN(chunks[ci][1], big * depth));
                ck_assert_uint_ge(small, DFCCL_MIN(8192, big));
            }
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

START_TEST(reduce_packet_matches_reduce)
{
    /* one thread's 8-byte packet reduction is the same as the element loop, every type/op */
    unsigned seed = 99;
    for (int t = 0; t < dfcclNumTypes; t++)
        for (int op = 0; op < dfcclNumOps; op++) {
            if (!eng_op_valid(t, op))
                continue;
            for (int k = 0; k < 200; k++) {
                uint64_t a = 0, b = 0, want;
                unsigned char *pa = (unsigned char *)&a, *pb = (unsigned char *)&b;
                for (int j = 0; j < 8; j++) {
                    pa[j] = (unsigned char)rand_r(&seed);
                    pb[j] = (unsigned char)rand_r(&seed);
                }
                if (t == dfcclFloat32 || t == dfcclFloat64 || t == dfcclFloat16 || t == dfcclBfloat16) {
                    /* finite values: clear the top exponent bit of every element */
                    const size_t ts = eng_type_size(t);
                    for (size_t e = 0; e < 8 / ts; e++) {
                        pa[e * ts + ts - 1] &= 0x3f;
                        pb[e * ts + ts - 1] &= 0x3f;
                    }
                }
                ck_assert_int_eq(eng_reduce(&want, &a, &b, 8 / eng_type_size(t), t, op), 0);
                const uint64_t got = eng_reduce_packet(a, b, t, op);
                ck_assert_msg(got == want, "type %d op %d: %016llx != %016llx", t, op,
                              (unsigned long long)got, (unsigned long long)want);
            }
        }
}
END_TEST

START_TEST(ll_packets_any_alignment)
{
    /* packets of a buffer at every alignment and length: loaded zero-padded, stored
     * without touching a byte past the end */
    unsigned char buf[64], out[64];
    for (int i = 0; i < 64; i++)
        buf[i] = (unsigned char)(i * 37 + 5);
    for (int off = 0; off < 8; off++)
        for (uint64_t len = 1; len <= 20; len++) {
            memset(out, 0xee, sizeof out);
            for (uint64_t i = 0; i < eng_ll_lines(len); i++) {
                const uint64_t pk = eng_ll_packet_load(buf + off, len, i);
                for (uint64_t j = 0; j < 8; j++) {
                    const unsigned char want = 8 * i + j < len ? buf[off + 8 * i + j] : 0;
                    ck_assert_uint_eq((pk >> (8 * j)) & 0xff, want);
                }
                eng_ll_packet_store(out + off, len, i, pk);
            }
            ck_assert_mem_eq(out + off, buf + off, len);
            for (int j = 0; j < 64; j++)
                if (j < off || j >= off + (int)len)
                    ck_assert_uint_eq(out[j], 0xee);
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
    a.algo = (uint8_t)eng_algo_select(&a, N, 1024, 256, 0, 0);
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
            args[r].algo = (uint8_t)eng_algo_select(&args[r], N, 1024, 256, 0, 0);
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
    b.algo = (uint8_t)eng_algo_select(&b, N, 1024, 256, 0, 0);
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

/* Net receiver: steps that land out of order are published in order, each with its
 * size; a duplicate or a step beyond the credited window is refused and changes
 * nothing. */
START_TEST(net_landing_in_order)
{
    eng_conn_ctrl_t c;
    memset(&c, 0, sizeof(c));
    net_landing_t l = {0, 0};
    const uint32_t depth = 4;
    ck_assert_int_eq(net_land(&l, &c, depth, 2, 200), 0); /* waits for 0 and 1 */
    ck_assert_int_eq(net_land(&l, &c, depth, 1, 100), 0);
    ck_assert_uint_eq(c.posted, 0);
    ck_assert_int_eq(net_land(&l, &c, depth, 1, 100), -1); /* landed already */
    ck_assert_int_eq(net_land(&l, &c, depth, 4, 1), -1);   /* no credit for it yet */
    ck_assert_int_eq(net_land(&l, &c, depth, 0, 7), 1);
    ck_assert_uint_eq(c.posted, 3);
    ck_assert_uint_eq(c.bytes[0], 7);
    ck_assert_uint_eq(c.bytes[1], 100);
    ck_assert_uint_eq(c.bytes[2], 200);
    ck_assert_int_eq(net_land(&l, &c, depth, 2, 5), -1); /* published: in the past */
    /* around the ring: 3..6 reuse slots 3, 0, 1, 2, once the daemon has read 0..2; land
     * them backwards */
    c.consumed = 3;
    for (int s = 6; s >= 4; s--)
        ck_assert_int_eq(net_land(&l, &c, depth, (uint64_t)s, (uint64_t)s * 10), 0);
    ck_assert_int_eq(net_land(&l, &c, depth, 7, 1), -1);
    ck_assert_int_eq(net_land(&l, &c, depth, 3, 30), 1);
    ck_assert_uint_eq(c.posted, 7);
    ck_assert_uint_eq(l.mask, 0);
    for (int s = 3; s <= 6; s++)
        ck_assert_uint_eq(c.bytes[s % depth], (uint64_t)s * 10);
    /* the deepest FIFO: every slot of a 64-bit mask */
    memset(&c, 0, sizeof(c));
    l = (net_landing_t){0, 0};
    for (int s = ENG_MAX_FIFO_DEPTH - 1; s >= 1; s--)
        ck_assert_int_eq(net_land(&l, &c, ENG_MAX_FIFO_DEPTH, (uint64_t)s, 1), 0);
    ck_assert_int_eq(net_land(&l, &c, ENG_MAX_FIFO_DEPTH, 0, 1), 1);
    ck_assert_uint_eq(c.posted, ENG_MAX_FIFO_DEPTH);
}
END_TEST

/* Net receiver, credits: a step lands only in a slot the daemon has read (consumed), not
 * merely one published to it; the sender's credits stop at consumed + depth, so a step
 * there is a protocol error even though the slot's previous step was published. */
START_TEST(net_landing_credit_window)
{
    eng_conn_ctrl_t c;
    memset(&c, 0, sizeof(c));
    net_landing_t l = {0, 0};
    const uint32_t depth = 4;
    uint64_t got[4] = {0, 0, 0, 0};
    for (uint64_t s = 0; s < depth; s++)
        ck_assert_int_eq(net_land(&l, &c, depth, s, 10 + s), 1);
    ck_assert_uint_eq(c.posted, 4);
    /* published 4, consumed none: step 4 would overwrite step 0, unread */
    ck_assert(!net_in_window(&l, &c, depth, 4));
    ck_assert_int_eq(net_land(&l, &c, depth, 4, 99), -1);
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 4, 1, 2), -1);
    ck_assert_uint_eq(c.bytes[0], 10);
    ck_assert_uint_eq(got[0], 0);
    ck_assert_uint_eq(l.mask, 0);
    /* the daemon read step 0: step 4 (consumed + depth - 1) is the edge, 5 beyond it */
    c.consumed = 1;
    ck_assert(net_in_window(&l, &c, depth, 4));
    ck_assert(!net_in_window(&l, &c, depth, 5));
    ck_assert_int_eq(net_land(&l, &c, depth, 5, 1), -1);
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 4, 1, 2), 0);
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 4, 1, 2), 1);
    ck_assert_uint_eq(c.posted, 5);
    ck_assert_uint_eq(c.bytes[0], 2);
    ck_assert_uint_eq(c.bytes[1], 11); /* step 1, unread, untouched */
}
END_TEST

/* Net sender, credits: a credit moves the sender's count forward, an older one is
 * ignored, and one for steps never sent is a protocol error. */
START_TEST(net_credit_checks)
{
    ck_assert_int_eq(net_credit(2, 5, 3), 1);
    ck_assert_int_eq(net_credit(2, 5, 5), 1); /* every step sent, consumed */
    ck_assert_int_eq(net_credit(2, 5, 6), -1);
    ck_assert_int_eq(net_credit(2, 5, UINT64_MAX), -1);
    ck_assert_int_eq(net_credit(2, 5, 2), 0); /* no newer */
    ck_assert_int_eq(net_credit(2, 5, 1), 0); /* an old one, late */
    ck_assert_int_eq(net_credit(0, 0, 1), -1);
    ck_assert_int_eq(net_credit(0, 0, 0), 0);
}
END_TEST

/* Net receiver, addressing: a message reaches a communicator only with its random key,
 * not by its guessable table id alone. */
START_TEST(net_addressed_by_key)
{
    const uint32_t id = 7;
    const uint64_t key = 0x9e3779b97f4a7c15ull;
    ck_assert(net_addressed(id, key, 7, key));
    ck_assert(!net_addressed(id, key, 7, 0));
    ck_assert(!net_addressed(id, key, 7, key ^ 1));
    ck_assert(!net_addressed(id, key, 7, key ^ (1ull << 63)));
    ck_assert(!net_addressed(id, key, 8, key));
}
END_TEST

/* Net receiver, eager pieces: a step lands with its last byte, whatever order its pieces
 * and its neighbours' come in; a piece that overfills its step, or one for a step
 * outside the window, is refused; a zero-byte step lands at once. */
START_TEST(net_landing_pieces)
{
    eng_conn_ctrl_t c;
    memset(&c, 0, sizeof(c));
    net_landing_t l = {0, 0};
    const uint32_t depth = 4;
    uint64_t got[4] = {0, 0, 0, 0};
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 1, 300, 700), 0); /* step 1: 300 of 700 */
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 0, 500, 1000), 0);
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 1, 400, 700), 0); /* 1 whole, waits for 0 */
    ck_assert_uint_eq(c.posted, 0);
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 0, 501, 1000), -1); /* overfills */
    ck_assert_uint_eq(got[0], 500);
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 4, 1, 1), -1);   /* no credit yet */
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 1, 1, 700), -1); /* landed already */
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 0, 500, 1000), 1);
    ck_assert_uint_eq(c.posted, 2);
    ck_assert_uint_eq(c.bytes[0], 1000);
    ck_assert_uint_eq(c.bytes[1], 700);
    ck_assert_uint_eq(got[0], 0);
    ck_assert_uint_eq(got[1], 0);
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 2, 0, 0), 1); /* an empty step */
    ck_assert_uint_eq(c.posted, 3);
    ck_assert_uint_eq(c.bytes[2], 0);
    ck_assert_int_eq(net_land_piece(&l, got, &c, depth, 1, 10, 10), -1); /* in the past */
    ck_assert_uint_eq(l.mask, 0);
}
END_TEST

/* ---- the locality decision (engine/locality.c) over a table of test transports ---- */

/* locality.c's message, as dfcclGetLastError gives it (engine/log.c); cleared before
 * each call that must fail, so a stale one never passes */
#define tp_err dfcclGetLastError()
static void tp_err_clear(void)
{
    eng_set_error(dfcclSuccess, "test", "%s", "");
}

/* the reaches of shm.c and net_conn.c, as they decide */
static int tp_same_host(const eng_tp_card_t *a, const eng_tp_card_t *b)
{
    return !a->net_only && !b->net_only && strncmp(a->host, b->host, sizeof(a->host)) == 0;
}

static int tp_anywhere(const eng_tp_card_t *a, const eng_tp_card_t *b)
{
    (void)a, (void)b;
    return 1;
}

static const eng_transport_t tp_shm = {.id = ENG_TP_SHM, .name = "shm", .reaches = tp_same_host};
static const eng_transport_t tp_ucx = {.id = ENG_TP_UCX, .name = "ucx", .reaches = tp_anywhere};
static const eng_transport_t *const table_both[ENG_TP_NUM] = {&tp_shm, &tp_ucx};
static const eng_transport_t *const table_shm[ENG_TP_NUM] = {&tp_shm, NULL};

/* a card in a larger record, as comm.c gathers it */
typedef struct {
    uint64_t pad;
    eng_tp_card_t card;
    uint32_t more;
} tp_boot_t;

static void tp_cards(tp_boot_t *b, int n, const char *const *hosts, uint32_t built, int net_only_rank)
{
    memset(b, 0, sizeof(*b) * (size_t)n);
    for (int r = 0; r < n; r++) {
        snprintf(b[r].card.host, sizeof b[r].card.host, "%s", hosts[r]);
        b[r].card.built = built;
        b[r].card.net_only = r == net_only_rank;
    }
}

START_TEST(locality_decisions)
{
    const uint32_t both = 1u << ENG_TP_SHM | 1u << ENG_TP_UCX, shm = 1u << ENG_TP_SHM;
    tp_boot_t b[4];
    uint8_t tp[4];
    uint32_t used;
    /* one host: shm between every pair, whatever the table has */
    const char *one[4] = {"a", "a", "a", "a"};
    tp_cards(b, 4, one, both, -1);
    for (int me = 0; me < 4; me++) {
        ck_assert_int_eq(eng_tp_pick(table_both, &b[0].card, sizeof b[0], 4, me, tp, &used), dfcclSuccess);
        for (int q = 0; q < 4; q++)
            ck_assert_int_eq(tp[q], ENG_TP_SHM);
        ck_assert_uint_eq(used, shm);
    }
    /* two hosts by parity: shm within, ucx across; ranks agree pair by pair */
    const char *two[4] = {"a", "b", "a", "b"};
    tp_cards(b, 4, two, both, -1);
    uint8_t all[4][4];
    for (int me = 0; me < 4; me++) {
        ck_assert_int_eq(eng_tp_pick(table_both, &b[0].card, sizeof b[0], 4, me, all[me], &used),
                         dfcclSuccess);
        ck_assert_uint_eq(used, both);
        for (int q = 0; q < 4; q++)
            ck_assert_int_eq(all[me][q], me % 2 == q % 2 ? ENG_TP_SHM : ENG_TP_UCX);
    }
    for (int p = 0; p < 4; p++)
        for (int q = 0; q < 4; q++)
            ck_assert_int_eq(all[p][q], all[q][p]);
    /* DFCCL_NET=ucx on rank 2 alone: every pair with rank 2 goes over ucx, the rest shm */
    tp_cards(b, 4, one, both, 2);
    for (int me = 0; me < 4; me++) {
        ck_assert_int_eq(eng_tp_pick(table_both, &b[0].card, sizeof b[0], 4, me, tp, &used), dfcclSuccess);
        for (int q = 0; q < 4; q++)
            ck_assert_int_eq(tp[q], q != me && (me == 2 || q == 2) ? ENG_TP_UCX : ENG_TP_SHM);
    }
    /* rank 3 built without UCX, on another host: every rank fails alike, naming rank 3 */
    const char *apart[4] = {"a", "a", "a", "b"};
    tp_cards(b, 4, apart, both, -1);
    b[3].card.built = shm;
    for (int me = 0; me < 4; me++) {
        tp_err_clear();
        ck_assert_int_eq(eng_tp_pick(table_both, &b[0].card, sizeof b[0], 4, me, tp, &used),
                         dfcclUnsupported);
        ck_assert_msg(strstr(tp_err, "rank 3 (host 'b')") && strstr(tp_err, "no UCX transport"), "%s",
                      tp_err);
    }
    /* hosts a, b, a with rank 2 built without UCX: ranks 0 and 1 reach each other over
     * ucx, rank 2 reaches rank 0 over shm and rank 1 not at all; every rank, rank 2 with
     * its own table (no ucx entry), fails alike and names rank 2 */
    const char *aba[3] = {"a", "b", "a"};
    tp_cards(b, 3, aba, both, -1);
    b[2].card.built = shm;
    for (int me = 0; me < 3; me++) {
        tp_err_clear();
        ck_assert_int_eq(
            eng_tp_pick(me == 2 ? table_shm : table_both, &b[0].card, sizeof b[0], 3, me, tp, &used),
            dfcclUnsupported);
        ck_assert_msg(strstr(tp_err, "rank 2 (host 'a')"), "rank %d: %s", me, tp_err);
    }
    /* the same in a build without UCX (no ucx entry), with every card saying so */
    tp_cards(b, 4, apart, shm, -1);
    tp_err_clear();
    ck_assert_int_eq(eng_tp_pick(table_shm, &b[0].card, sizeof b[0], 4, 0, tp, &used), dfcclUnsupported);
    ck_assert_msg(strstr(tp_err, "must be reached over the net"), "%s", tp_err);
    /* one rank: itself, over shm */
    ck_assert_int_eq(eng_tp_pick(table_shm, &b[0].card, sizeof b[0], 1, 0, tp, &used), dfcclSuccess);
    ck_assert_int_eq(tp[0], ENG_TP_SHM);
    ck_assert_uint_eq(used, shm);
}
END_TEST

/* ---- DFCCL_TRACE: the GPU daemon's records -------------------------------------------- */

/* The "ts" of the first line of the file that contains every one of the needles. */
static double trace_ts(const char *text, const char *a, const char *b)
{
    for (const char *l = text; l && *l;) {
        const char *e = strchr(l, '\n');
        const size_t n = e ? (size_t)(e - l) : strlen(l);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), l);
        const char *ts = strstr(line, "\"ts\": ");
        if (strstr(line, a) && (!b || strstr(line, b)) && ts)
            return atof(ts + 6);
        l = e ? e + 1 : NULL;
    }
    return -1;
}

/* Device-clock stretches land on the host's clock by the smallest host-minus-device gap
 * sampled (a bound from above), with the GPU's own numbering (communicator "<uid>/gpu"),
 * the block's lane and the late ranks; the CPU daemon's events of the same communicator
 * and number stay apart. */
/* Log and trace files: created 0600, never through a symbolic link, never another
 * user's file, never a FIFO (whose open would block). */
START_TEST(private_files_refuse_links_and_strangers)
{
    char dir[] = "/tmp/dfccl-files-unit.XXXXXX", path[128], target[128], why[600];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    /* a new file: 0600 whatever the umask allows */
    snprintf(path, sizeof path, "%s/new.log", dir);
    FILE *f = eng_open_private(path, why, sizeof why);
    ck_assert_msg(f != NULL, "%s", why);
    fputs("one\n", f);
    fclose(f);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    /* an existing one of ours: appended to, positioned at its end */
    f = eng_open_private(path, why, sizeof why);
    ck_assert_msg(f != NULL, "%s", why);
    ck_assert_int_eq(ftell(f), 4);
    fclose(f);
    /* a symbolic link to a file of ours: refused, the file untouched */
    snprintf(target, sizeof target, "%s/link.log", dir);
    ck_assert_int_eq(symlink(path, target), 0);
    f = eng_open_private(target, why, sizeof why);
    ck_assert_msg(f == NULL && strstr(why, "symbolic link"), "opened through a symlink (%s)", why);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_size, 4);
    unlink(target);
    /* a FIFO: refused at once */
    snprintf(target, sizeof target, "%s/fifo.log", dir);
    ck_assert_int_eq(mkfifo(target, 0600), 0);
    f = eng_open_private(target, why, sizeof why);
    ck_assert_msg(f == NULL, "opened a FIFO");
    unlink(target);
    /* another user's file (root can make one) */
    if (geteuid() == 0) {
        snprintf(target, sizeof target, "%s/other.log", dir);
        int fd = open(target, O_CREAT | O_WRONLY, 0666);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(fchown(fd, 65534, 65534), 0);
        close(fd);
        f = eng_open_private(target, why, sizeof why);
        ck_assert_msg(f == NULL && strstr(why, "belongs to uid 65534"), "opened another user's file (%s)",
                      why);
        unlink(target);
    }
    unlink(path);
    rmdir(dir);
}
END_TEST

/* DFCCL_TRACE's file name is known in advance (prefix.PID.json): a symbolic link put
 * there by someone else is refused and its target left alone. */
START_TEST(trace_refuses_a_symlink)
{
    char dir[] = "/tmp/dfccl-trace-link.XXXXXX", prefix[64], path[128], victim[128];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(prefix, sizeof prefix, "%s/t", dir);
    snprintf(path, sizeof path, "%s.%d.json", prefix, (int)getpid());
    snprintf(victim, sizeof victim, "%s/victim", dir);
    FILE *v = fopen(victim, "w");
    ck_assert_ptr_nonnull(v);
    fputs("precious\n", v);
    fclose(v);
    ck_assert_int_eq(symlink(victim, path), 0);
    setenv("DFCCL_TRACE", prefix, 1);
    eng_trace_setup();
    const eng_trace_key_t c = {.uid = 0xabc, .seq = 1, .rank = 0, .nranks = 2, .coll = ENG_COLL_ALLREDUCE};
    eng_trace_submit(&c, 1000);
    eng_trace_complete(&c, 0);
    eng_trace_flush();
    struct stat st;
    ck_assert_int_eq(stat(victim, &st), 0);
    ck_assert_int_eq(st.st_size, 9);
    unlink(path);
    unlink(victim);
    rmdir(dir);
}
END_TEST

START_TEST(trace_gpu_records_on_host_clock)
{
    char dir[] = "/tmp/dfccl-trace-unit.XXXXXX", prefix[64], path[128];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(prefix, sizeof prefix, "%s/t", dir);
    setenv("DFCCL_TRACE", prefix, 1);
    eng_trace_setup();
    ck_assert_int_eq(eng_trace_on, 1);
    const eng_trace_key_t g = {
        .uid = 0xabc, .seq = 7, .rank = 0, .nranks = 4, .coll = ENG_COLL_ALLREDUCE, .gpu = 1};
    eng_trace_key_t c = g;
    c.gpu = 0;
    eng_trace_submit(&c, 10700000);
    eng_trace_submit(&g, 10800000);
    eng_trace_gpu_clock(10000000, 1000000);  /* gap 9.0 ms */
    eng_trace_gpu_clock(10500000, 1600000);  /* 8.9 ms: the smallest */
    eng_trace_gpu_clock(20000000, 10500000); /* 9.5 ms */
    eng_trace_stretch(&g, 3, 2000000, 2001500, ENG_TR_STALLED, 1ull << 2 | 1ull << 3);
    eng_trace_stretch(&g, 3, 2002000, 2004000, ENG_TR_FINISHED, 0);
    /* 100 ms on (6 buckets of 2^24 ns further): the clocks drifted 0.4 ms, and a stretch
     * there is placed by the sample near it, not by the first ones */
    eng_trace_gpu_clock(110000000, 101500000); /* 8.5 ms */
    const eng_trace_key_t g2 = {
        .uid = 0xabc, .seq = 8, .rank = 0, .nranks = 4, .coll = ENG_COLL_BCAST, .gpu = 1};
    eng_trace_stretch(&g2, 0, 101000000, 101000500, ENG_TR_FINISHED, 0);
    eng_trace_complete(&g, 0);
    eng_trace_flush();
    snprintf(path, sizeof path, "%s.%d.json", prefix, (int)getpid());
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    static char text[65536];
    const size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    unlink(path);
    rmdir(dir);
    const double sub_cpu = trace_ts(text, "\"cat\": \"submit\"", "\"comm\": \"0000000000000abc\",");
    const double sub_gpu = trace_ts(text, "\"cat\": \"submit\"", "\"comm\": \"0000000000000abc/gpu\"");
    const double stalled = trace_ts(text, "\"outcome\": \"stalled\"", NULL);
    const double finished = trace_ts(text, "\"outcome\": \"finished\"", NULL);
    ck_assert_msg(sub_cpu > 0 && sub_gpu > 0 && stalled > 0 && finished > 0, "%s", text);
    /* 2.0 ms device + 8.9 ms = 10.9 ms host: 100 us after the GPU submission (µs since
     * the epoch in a double: a quarter-µs resolution) */
    ck_assert_msg(fabs(sub_gpu - sub_cpu - 100.0) < 0.5, "%f %f", sub_gpu, sub_cpu);
    ck_assert_msg(fabs(stalled - sub_gpu - 100.0) < 0.5, "%f %f", stalled, sub_gpu);
    ck_assert_msg(fabs(finished - stalled - 2.0) < 0.5, "%f %f", finished, stalled);
    const double later = trace_ts(text, "\"name\": \"bcast (GPU) #8\"", NULL);
    /* 101 ms + 8.5 ms = 109.5 ms host: 98.7 ms after the GPU submission */
    ck_assert_msg(fabs(later - sub_gpu - 98700.0) < 0.5, "%f %f", later, sub_gpu);
    ck_assert_msg(strstr(text, "\"dur\": 1.500"), "%s", text);
    ck_assert_msg(strstr(text, "\"late_ranks\": [2, 3]"), "%s", text);
    ck_assert_msg(strstr(text, "\"worker\": 67"), "%s", text);
    ck_assert_msg(strstr(text, "\"daemon\": \"gpu\"") && strstr(text, "\"daemon\": \"cpu\""), "%s", text);
    ck_assert_msg(strstr(text, "\"name\": \"allreduce (GPU) #7\""), "%s", text);
    ck_assert_msg(strstr(text, "\"cat\": \"complete\"") && strstr(text, "\"result\": 0"), "%s", text);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("engine");
    TCase *t = tcase_create("ring");
    tcase_add_test(t, ring_order_full_and_wrap);
    tcase_add_test(t, ring_unstamped_entry_invisible);
    suite_add_tcase(s, t);
    t = tcase_create("sched");
    tcase_add_test(t, sched_budget_rules);
    tcase_add_test(t, sched_threshold_adaptation);
    tcase_add_test(t, sched_slot_gating);
    suite_add_tcase(s, t);
    t = tcase_create("reduce");
    tcase_add_test(t, reduce_int_and_float);
    tcase_add_test(t, reduce_half_bf16);
    tcase_add_test(t, reduce_packet_matches_reduce);
    tcase_add_test(t, ll_packets_any_alignment);
    suite_add_tcase(s, t);
    t = tcase_create("algo");
    tcase_set_timeout(t, 60);
    tcase_add_loop_test(t, algo_uninterrupted_vs_stalled, 0, (int)(sizeof(cases) / sizeof(cases[0])));
    tcase_add_test(t, algo_select_rules);
    tcase_add_test(t, algo_barrier_waits_for_all);
    tcase_add_test(t, ll_stale_simple_data_never_passes);
    tcase_add_test(t, ll_steps_reuse_and_wait);
    tcase_add_test(t, active_channels_match_ranges);
    tcase_add_test(t, pairwise_pieces_partition_blocks);
    tcase_add_test(t, self_copy_pieces_cover_output);
    tcase_add_test(t, direct_ranges_tile_blocks);
    tcase_add_test(t, gpu_fifo_layout);
    suite_add_tcase(s, t);
    t = tcase_create("net");
    tcase_add_test(t, net_landing_in_order);
    tcase_add_test(t, net_landing_pieces);
    tcase_add_test(t, net_landing_credit_window);
    tcase_add_test(t, net_credit_checks);
    tcase_add_test(t, net_addressed_by_key);
    tcase_add_test(t, locality_decisions);
    suite_add_tcase(s, t);
    t = tcase_create("trace");
    tcase_add_test(t, trace_gpu_records_on_host_clock);
    tcase_add_test(t, trace_refuses_a_symlink);
    tcase_add_test(t, private_files_refuse_links_and_strangers);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

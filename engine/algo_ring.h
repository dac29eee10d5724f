/* SPDX-License-Identifier: BSD-3-Clause */
/* Ring allreduce (reduce-scatter + all-gather), reduce_scatter and allgather as one
 * resumable state machine. The data is N blocks (one per rank) of stride S elements;
 * each channel owns the element range [lo, hi) of every block and walks it in chunks;
 * each chunk takes the steps below. A step first checks every wait it needs (the
 * preemption points) and only then moves data, so a saved context is (off, step). */
#ifndef DFCCL_ALGO_RING_H
#define DFCCL_ALGO_RING_H

#include "eng_types.h"
#include "prims.h"

DFCCL_INLINE uint64_t ring_stride(const eng_coll_args_t *a, int nranks)
{
    return a->coll == ENG_COLL_ALLREDUCE ? DFCCL_DIV_UP(a->count, (uint64_t)nranks) : a->count;
}

/* Elements of block j present at block offset off, at most e. Only allreduce has short
 * (or empty) trailing blocks; a zero-length step is still sent so ranks stay in step. */
DFCCL_INLINE uint64_t ring_block_elems(const eng_coll_args_t *a, uint64_t stride, int j, uint64_t off,
                                       uint64_t e)
{
    uint64_t len = stride;
    if (a->coll == ENG_COLL_ALLREDUCE) {
        uint64_t start = (uint64_t)j * stride;
        len = start >= a->count ? 0 : DFCCL_MIN(stride, a->count - start);
    }
    return off >= len ? 0 : DFCCL_MIN(e, len - off);
}

DFCCL_DEV_INLINE eng_prog_t algo_ring_progress(const eng_coll_args_t *a, eng_chan_view_t *v, eng_ctx_t *x)
{
    const int N = v->nranks, r = v->rank;
    const size_t ts = eng_type_size(a->dtype);
    const uint64_t S = ring_stride(a, N), CE = eng_div(v->chunk, ts);
    eng_conn_t *in = &v->conns[(r - 1 + N) % N], *out = &v->conns[(r + 1) % N];
    const char *sbuf = (const char *)a->sendbuf;
    char *rbuf = (char *)a->recvbuf;
    /* allreduce: N-1 reduce-scatter steps + N all-gather steps; the others: N steps */
    const uint32_t last = a->coll == ENG_COLL_ALLREDUCE ? 2u * (uint32_t)N - 2 : (uint32_t)N - 1;
    eng_prog_t prog = ENG_WAIT;

    while (x->off < x->hi) {
        const uint64_t off = x->off, e = DFCCL_MIN(CE, x->hi - off);
        const uint32_t t = x->step;
        if (t > 0 && !prim_recv_ready(in, v))
            return prog;
        if (t < last && !prim_send_ready(out, v->depth))
            return prog;

        if (a->coll == ENG_COLL_ALLGATHER) {
            /* step t carries block (r - t): own block first, then the ones passed along */
            const int seg = ((r - (int)t) % N + N) % N;
            const uint64_t n = ring_block_elems(a, S, seg, off, e);
            char *dst = rbuf + ((uint64_t)seg * S + off) * ts;
            if (t == 0) {
                /* step 0: own block to the output and to the next rank */
                prim_copy(dst, sbuf + off * ts, n * ts);
                prim_send(out, v, sbuf + off * ts, n * ts);
            } else if (t < last) {
                /* steps 1..N-2: pass a block along, keeping a copy */
                prim_recv_copy_send(in, out, v, dst, n * ts);
            } else {
                /* step N-1: the last block arrives */
                prim_recv_copy(in, v, dst, n * ts);
            }
        } else {
            /* step t carries block (r - 1 - t); after N-1 steps rank r owns block r */
            const int seg = ((r - 1 - (int)t) % N + N) % N;
            const uint64_t n = ring_block_elems(a, S, seg, off, e);
            const char *src = sbuf + ((uint64_t)seg * S + off) * ts;
            const uint32_t rs_last = (uint32_t)N - 1;
            char *dst =
                a->coll == ENG_COLL_REDUCE_SCATTER ? rbuf + off * ts : rbuf + ((uint64_t)seg * S + off) * ts;
            if (t == 0) {
                /* step 0: push own contribution of block r-1 to the next rank */
                prim_send(out, v, src, n * ts);
            } else if (t < rs_last) {
                /* steps 1..N-2: reduce what arrived with own data and pass it on */
                prim_recv_reduce_send(in, out, v, src, n, a->dtype, a->op);
            } else if (t == rs_last && a->coll == ENG_COLL_REDUCE_SCATTER) {
                /* step N-1: block r is fully reduced */
                prim_recv_reduce_copy(in, v, src, dst, n, a->dtype, a->op);
            } else if (t == rs_last) {
                /* step N-1: block r is fully reduced; keep it and start the all-gather */
                prim_recv_reduce_copy_send(in, out, v, src, dst, n, a->dtype, a->op);
            } else if (t < last) {
                /* steps N..2N-3: pass reduced blocks along, keeping a copy */
                prim_recv_copy_send(in, out, v, dst, n * ts);
            } else {
                /* step 2N-2: the last reduced block arrives */
                prim_recv_copy(in, v, dst, n * ts);
            }
        }
        prog = ENG_PROGRESS;
        if (++x->step > last) {
            x->step = 0;
            x->off += e;
        }
    }
    return ENG_DONE;
}

#endif

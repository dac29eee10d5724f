/* SPDX-License-Identifier: BSD-3-Clause */
/* One-shot allreduce for small messages, and the barrier (a 0-byte one-shot): each rank
 * pushes its whole input into every rank's FIFO (its own included), then reduces the N
 * contributions in rank order, so every rank computes bit-identical results. Two hops
 * of latency; preemptible between any two peers. Runs on channel 0 only. */
#ifndef DFCCL_ALGO_ONESHOT_H
#define DFCCL_ALGO_ONESHOT_H

#include "eng_types.h"
#include "prims.h"

DFCCL_DEV_INLINE eng_prog_t algo_oneshot_progress(const eng_coll_args_t *a, eng_chan_view_t *v, eng_ctx_t *x)
{
    const int N = v->nranks, r = v->rank;
    const size_t ts = a->coll == ENG_COLL_BARRIER ? 0 : eng_type_size(a->dtype);
    const uint64_t bytes = a->count * ts;
    eng_prog_t prog = ENG_WAIT;

    if (x->step == 0) {
        /* step 0: post the input to every rank. Fast path: every FIFO has room, so
         * copy to all and post all at once */
        if (x->sub == 0 && prim_send_ready_all(v->conns, N, v->depth)) {
            for (int p = 0; p < N; p++)
                prim_copy(prim_send_buf(&v->conns[p], v), a->sendbuf, bytes);
            prim_send_post_all(v->conns, N, v, bytes);
            x->sub = (uint32_t)N;
            prog = ENG_PROGRESS;
        }
        /* otherwise one rank at a time, starting with the next one; x->sub counts the
         * ranks already served, so a preempted post resumes at the next */
        while (x->sub < (uint32_t)N) {
            eng_conn_t *c = &v->conns[(r + 1 + (int)x->sub) % N];
            if (!prim_send_ready(c, v->depth))
                return prog;
            prim_send(c, v, a->sendbuf, bytes);
            x->sub++;
            prog = ENG_PROGRESS;
        }
        x->step = 1;
    }
    /* step 1: once all N contributions are in, reduce them in rank order */
    if (!prim_recv_ready_all(v->conns, N))
        return prog;
    if (bytes) {
        prim_copy(a->recvbuf, prim_recv_buf(&v->conns[0], v, NULL), bytes);
        for (int p = 1; p < N; p++) {
            prim_barrier(); /* each pass reads what the previous one wrote */
            prim_reduce(a->recvbuf, a->recvbuf, prim_recv_buf(&v->conns[p], v, NULL), a->count, a->dtype,
                        a->op);
        }
    }
    prim_recv_done_all(v->conns, N);
    x->off = x->hi;
    return ENG_DONE;
}

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* One-shot allreduce for small messages, and the barrier (a 0-byte one-shot): each rank
 * pushes its whole input into every rank's FIFO (its own included), then reduces the N
 * contributions in rank order, so every rank computes bit-identical results. Two hops
 * of latency. The contribution travels in k chunks of one FIFO step each (the self
 * connection's step size, the smallest of any connection and the same on every rank);
 * every chunk is posted before any is reduced, so k <= the FIFO depth (the algorithm
 * selection guarantees it) and no rank ever waits inside one instance for a step its
 * peer can only give back later. Preemptible before every chunk. Runs on channel 0. */
#ifndef DFCCL_ALGO_ONESHOT_H
#define DFCCL_ALGO_ONESHOT_H

#include "eng_types.h"
#include "prims.h"

DFCCL_DEV_INLINE eng_prog_t algo_oneshot_progress(const eng_coll_args_t *a, eng_chan_view_t *v, eng_ctx_t *x)
{
    const int N = v->nranks, r = v->rank;
    const size_t ts = a->coll == ENG_COLL_BARRIER ? 0 : eng_type_size(a->dtype);
    const uint64_t n = ts ? a->count : 0;
    const uint64_t S = ts ? eng_div(v->conns[r].rchunk, ts) : 1; /* elements per chunk */
    const uint32_t k = n ? (uint32_t)DFCCL_DIV_UP(n, S) : 1;
    eng_prog_t prog = ENG_WAIT;

    /* step 0: post chunk x->sub of the input to every rank, each FIFO having room */
    while (x->step == 0 && x->sub < k) {
        if (!prim_send_ready_all(v->conns, N, v->depth))
            return prog;
        const uint64_t off = (uint64_t)x->sub * S, e = n ? DFCCL_MIN(S, n - off) : 0;
        for (int p = 0; p < N; p++)
            prim_copy(prim_send_buf(&v->conns[p], v, e * ts), (const char *)a->sendbuf + off * ts, e * ts);
        prim_send_post_all(v->conns, N, v, e * ts);
        if (++x->sub == k) {
            x->step = 1;
            x->sub = 0;
        }
        prog = ENG_PROGRESS;
    }
    /* step 1: once chunk x->sub of all N contributions is in, reduce it in rank order */
    while (x->sub < k) {
        if (!prim_recv_ready_all(v->conns, N, v))
            return prog;
        const uint64_t off = (uint64_t)x->sub * S, e = n ? DFCCL_MIN(S, n - off) : 0;
        if (e) {
            char *out = (char *)a->recvbuf + off * ts;
            prim_copy(out, prim_recv_buf(&v->conns[0], v, e * ts), e * ts);
            for (int p = 1; p < N; p++) {
                prim_barrier(); /* each pass reads what the previous one wrote */
                prim_reduce(out, out, prim_recv_buf(&v->conns[p], v, e * ts), e, a->dtype, a->op);
            }
        }
        prim_recv_done_all(v->conns, N);
        x->sub++;
        prog = ENG_PROGRESS;
    }
    x->off = x->hi;
    return ENG_DONE;
}

#endif

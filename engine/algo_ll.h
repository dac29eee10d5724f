/* SPDX-License-Identifier: BSD-3-Clause */
/* LL one-shot allreduce for the smallest messages, and the barrier: each rank writes its
 * input as LL lines (eng_types.h) into every rank's FIFO step (its own included, so an
 * in-place output never feeds back into a retry), then every rank reduces the N
 * contributions line by line in rank order, so all ranks compute bit-identical results.
 * Unlike the one-shot there is no step counter to post and acquire: the flag travels
 * inside each line, so one memory round trip after the sender's store the receiver has
 * both the data and its readiness. Preemptible before the post and at the reduce, which
 * is retried as a whole (it only reads FIFO lines, which stay until it gives the steps
 * back). Runs on channel 0 only; the contribution fits one step (2 x bytes <= step). */
#ifndef DFCCL_ALGO_LL_H
#define DFCCL_ALGO_LL_H

#include "eng_types.h"
#include "prims.h"

DFCCL_DEV_INLINE eng_prog_t algo_ll_progress(const eng_coll_args_t *a, eng_chan_view_t *v, eng_ctx_t *x)
{
    const int N = v->nranks;
    const uint64_t bytes = a->coll == ENG_COLL_BARRIER ? 0 : a->count * eng_type_size(a->dtype);
    eng_prog_t prog = ENG_WAIT;

    if (x->step == 0) {
        /* every rank's step must be free (its previous use consumed) */
        if (!prim_ll_send_all(v->conns, N, v, a->sendbuf, bytes))
            return ENG_WAIT;
        x->step = 1;
        prog = ENG_PROGRESS;
    }
    if (!prim_ll_reduce_all(v->conns, N, v, a, bytes))
        return prog;
    prim_ll_recv_done_all(v->conns, N);
    x->off = x->hi;
    return ENG_DONE;
}

#endif

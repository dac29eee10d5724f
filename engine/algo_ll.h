/* SPDX-License-Identifier: BSD-3-Clause */
/* LL one-round collectives for the smallest messages, and the barrier: each rank writes
 * its pieces as LL lines (eng_types.h) into the FIFO steps of the peers that need them
 * (its own included where it needs its own piece, so an in-place output never feeds back
 * into a retry), then reads the pieces meant for it: reduced line by line in rank order
 * (allreduce, reduce, reduce_scatter: every rank computes bit-identical results) or
 * copied to their place in the output (bcast, allgather, alltoall, gather, scatter).
 * One round replaces the N-1 dependent steps of a ring, chain or pairwise exchange:
 * there is no step counter to post and acquire, the flag travels inside each line, so
 * one memory round trip after the sender's store the receiver has both the data and its
 * readiness. Preemptible before the writes and at the read, which is retried as a whole
 * (it only reads FIFO lines, which stay until it gives the steps back; the writes read
 * the input before anything is written to the output). ENG_ALGO_LL runs on channel 0
 * alone; ENG_ALGO_LLW splits each piece's lines over the channels (eng_split_span), each
 * channel's lines at the start of its own connections' steps, so a piece of up to
 * channels x ll_max bytes still takes one round: its channels' rounds are independent
 * (each its own steps, flags and retries) and together cover every line once. One
 * channel's lines fit one step (2 x bytes <= step). */
#ifndef DFCCL_ALGO_LL_H
#define DFCCL_ALGO_LL_H

#include "eng_types.h"
#include "ll_plan.h"
#include "prims.h"

DFCCL_DEV_INLINE eng_prog_t algo_ll_progress(const eng_coll_args_t *a, eng_chan_view_t *v, eng_ctx_t *x)
{
    const int N = v->nranks;
    eng_ll_plan_t pl;
    /* the split round: this channel's lines; the plain one: all of them (the primitives
     * clip to the pieces' lines, as they worked them out before the split) */
    const int split = a->algo == ENG_ALGO_LLW;
    eng_ll_plan(a, v->rank, N, split ? x->lo : 0, split ? x->hi : UINT64_MAX, &pl);
    eng_prog_t prog = ENG_WAIT;

    if (x->step == 0) {
        /* every peer's step written to must be free (its previous use consumed) */
        if (pl.smask && !prim_ll_send_all(v->conns, N, v, a, &pl))
            return ENG_WAIT;
        x->step = 1;
        prog = ENG_PROGRESS;
    }
    if (pl.rmask) {
        if (!prim_ll_recv_all(v->conns, N, v, a, &pl))
            return prog;
        prim_ll_recv_done_all(v->conns, N, pl.rmask);
    }
    x->off = x->hi;
    return ENG_DONE;
}

#endif

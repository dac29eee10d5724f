/* SPDX-License-Identifier: BSD-3-Clause */
/* Chain broadcast and reduce, pipelined in chunks. Data always flows in the ring's
 * direction, rank r-1 -> r -> r+1 (the connections the GPU gives large FIFOs).
 * Broadcast starts at the root and ends at root-1; reduce starts at root+1 and ends at
 * the root, whose result folds the contributions in that fixed order on every run.
 * A rank's position p is its distance along the data's path from its start. */
#ifndef DFCCL_ALGO_CHAIN_H
#define DFCCL_ALGO_CHAIN_H

#include "eng_types.h"
#include "prims.h"

DFCCL_DEV_INLINE eng_prog_t algo_chain_progress(const eng_coll_args_t *a, eng_chan_view_t *v, eng_ctx_t *x)
{
    const int N = v->nranks, r = v->rank, root = a->root;
    const int bcast = a->coll == ENG_COLL_BCAST;
    const int p = bcast ? (r - root + N) % N : (root - r + N) % N;
    const size_t ts = eng_type_size(a->dtype);
    const uint64_t CE = eng_div(v->chunk, ts);
    /* upstream / downstream neighbours in the direction of the data */
    const int up_pos = bcast ? p - 1 : p + 1, down_pos = bcast ? p + 1 : p - 1;
    const int has_up = up_pos >= 0 && up_pos < N, has_down = down_pos >= 0 && down_pos < N;
    eng_conn_t *in = has_up ? &v->conns[(r - 1 + N) % N] : NULL;
    eng_conn_t *out = has_down ? &v->conns[(r + 1) % N] : NULL;
    const char *sbuf = (const char *)a->sendbuf;
    char *rbuf = (char *)a->recvbuf;
    eng_prog_t prog = ENG_WAIT;

    while (x->off < x->hi) {
        const uint64_t off = x->off, n = DFCCL_MIN(CE, x->hi - off), bytes = n * ts;
        if (in && !prim_recv_ready(in, v))
            return prog;
        if (out && !prim_send_ready(out, v->depth))
            return prog;
        if (bcast) {
            if (!in) {
                /* root: keep its own copy, push the chunk down the chain */
                prim_copy(rbuf + off * ts, sbuf + off * ts, bytes);
                prim_send(out, v, sbuf + off * ts, bytes);
            } else if (out) {
                /* middle: keep a copy and pass it on */
                prim_recv_copy_send(in, out, v, rbuf + off * ts, bytes);
            } else {
                /* tail: keep it */
                prim_recv_copy(in, v, rbuf + off * ts, bytes);
            }
        } else {
            if (!in) {
                /* chain head: push own contribution */
                prim_send(out, v, sbuf + off * ts, bytes);
            } else if (out) {
                /* middle: fold own contribution in, pass on */
                prim_recv_reduce_send(in, out, v, sbuf + off * ts, n, a->dtype, a->op);
            } else {
                /* root: the final fold lands in the output */
                prim_recv_reduce_copy(in, v, sbuf + off * ts, rbuf + off * ts, n, a->dtype, a->op);
            }
        }
        prog = ENG_PROGRESS;
        x->off += n;
    }
    return ENG_DONE;
}

#endif

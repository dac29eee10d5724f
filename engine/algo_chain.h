/* SPDX-License-Identifier: BSD-3-Clause */
/* Chain broadcast and reduce, pipelined in chunks. Ranks are placed on a chain by their
 * distance from the root (position p = rank - root mod N). Broadcast flows from p = 0
 * to p = N-1; reduce flows from p = N-1 to the root at p = 0, so the root's result is
 * x_root op (x_root+1 op (... x_root-1)), the same on every run. */
#ifndef DFCCL_ALGO_CHAIN_H
#define DFCCL_ALGO_CHAIN_H

#include "eng_types.h"
#include "prims.h"

DFCCL_DEV_INLINE eng_prog_t algo_chain_progress(const eng_coll_args_t *a, eng_chan_view_t *v,
                                            eng_ctx_t *x)
{
    const int N = v->nranks, r = v->rank, root = a->root;
    const int p = (r - root + N) % N;
    const size_t ts = eng_type_size(a->dtype);
    const uint64_t CE = v->chunk / ts;
    const int bcast = a->coll == ENG_COLL_BCAST;
    /* upstream / downstream neighbours in the direction of the data */
    const int up_pos = bcast ? p - 1 : p + 1, down_pos = bcast ? p + 1 : p - 1;
    const int has_up = up_pos >= 0 && up_pos < N, has_down = down_pos >= 0 && down_pos < N;
    eng_conn_t *in = has_up ? &v->conns[(up_pos + root) % N] : NULL;
    eng_conn_t *out = has_down ? &v->conns[(down_pos + root) % N] : NULL;
    const char *sbuf = (const char *)a->sendbuf;
    char *rbuf = (char *)a->recvbuf;
    eng_prog_t prog = ENG_WAIT;

    while (x->off < x->hi) {
        const uint64_t off = x->off, n = DFCCL_MIN(CE, x->hi - off), bytes = n * ts;
        if (in && !prim_recv_ready(in))
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
                prim_recv_reduce_copy(in, v, sbuf + off * ts, rbuf + off * ts, n, a->dtype,
                                      a->op);
            }
        }
        prog = ENG_PROGRESS;
        x->off += n;
    }
    return ENG_DONE;
}

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* Inclusive and exclusive scan: a chain from rank 0 to rank N-1 in the ring's
 * direction (r-1 -> r, the connections the GPU gives large FIFOs), pipelined in chunks.
 * The running prefix arrives from r-1; scan keeps (prefix op own) and passes it on,
 * exscan keeps the prefix and passes (prefix op own) on; rank 0 starts the chain with
 * its own data and, for exscan, leaves its output untouched (MPI leaves it undefined).
 * Contributions are folded in rank order, the order MPI defines. */
#ifndef DFCCL_ALGO_SCAN_H
#define DFCCL_ALGO_SCAN_H

#include "eng_types.h"
#include "prims.h"

DFCCL_DEV_INLINE eng_prog_t algo_scan_progress(const eng_coll_args_t *a, eng_chan_view_t *v, eng_ctx_t *x)
{
    const int N = v->nranks, r = v->rank, ex = a->coll == ENG_COLL_EXSCAN;
    const size_t ts = eng_type_size(a->dtype);
    const uint64_t CE = eng_div(v->chunk, ts);
    eng_conn_t *in = r > 0 ? &v->conns[r - 1] : NULL;
    eng_conn_t *out = r < N - 1 ? &v->conns[r + 1] : NULL;
    const char *sbuf = (const char *)a->sendbuf;
    char *rbuf = (char *)a->recvbuf;
    eng_prog_t prog = ENG_WAIT;

    while (x->off < x->hi) {
        const uint64_t off = x->off, n = DFCCL_MIN(CE, x->hi - off), bytes = n * ts;
        if (in && !prim_recv_ready(in, v))
            return prog;
        if (out && !prim_send_ready(out, v->depth))
            return prog;
        const char *own = sbuf + off * ts;
        char *res = rbuf + off * ts;
        if (!in) {
            /* rank 0: its prefix is its own data */
            if (!ex)
                prim_copy(res, own, bytes);
            if (out)
                prim_send(out, v, own, bytes);
        } else if (!ex) {
            if (out)
                prim_recv_reduce_copy_send(in, out, v, own, res, n, a->dtype, a->op);
            else
                prim_recv_reduce_copy(in, v, own, res, n, a->dtype, a->op);
        } else {
            if (out)
                prim_recv_reduce_send_copy(in, out, v, own, res, n, a->dtype, a->op);
            else
                prim_recv_copy(in, v, res, bytes);
        }
        prog = ENG_PROGRESS;
        x->off += n;
    }
    return ENG_DONE;
}

#endif

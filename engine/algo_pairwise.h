/* SPDX-License-Identifier: BSD-3-Clause */
/* Pairwise all-to-all: at step s (1..N-1) rank r sends its block for r+s and receives
 * the block of r-s, each in chunks; both directions progress independently, so the
 * pair never waits on itself. Step 0 is the local block. Context: (step, chunks sent,
 * chunks received). */
#ifndef DFCCL_ALGO_PAIRWISE_H
#define DFCCL_ALGO_PAIRWISE_H

#include "eng_types.h"
#include "prims.h"

DFCCL_DEV_INLINE eng_prog_t algo_pairwise_progress(const eng_coll_args_t *a, eng_chan_view_t *v, eng_ctx_t *x)
{
    const int N = v->nranks, r = v->rank;
    const size_t ts = eng_type_size(a->dtype);
    const uint64_t span = x->hi - x->lo;
    const char *sbuf = (const char *)a->sendbuf;
    char *rbuf = (char *)a->recvbuf;
    eng_prog_t prog = ENG_WAIT;

    if (span == 0)
        return ENG_DONE;
    if (x->step == 0) {
        /* step 0: own block */
        prim_copy(rbuf + ((uint64_t)r * a->count + x->lo) * ts, sbuf + ((uint64_t)r * a->count + x->lo) * ts,
                  span * ts);
        x->step = 1;
        prog = ENG_PROGRESS;
    }
    while (x->step < (uint32_t)N) {
        const int to = (r + (int)x->step) % N, from = (r - (int)x->step + N) % N;
        eng_conn_t *out = &v->conns[to], *in = &v->conns[from];
        /* each direction steps by its own connection's size (the same at both ends) */
        const uint64_t CO = eng_div(out->schunk, ts), CI = eng_div(in->rchunk, ts);
        const uint32_t nout = (uint32_t)DFCCL_DIV_UP(span, CO), nin = (uint32_t)DFCCL_DIV_UP(span, CI);
        while (x->sub < nout && prim_send_ready(out, v->depth)) {
            const uint64_t off = x->lo + (uint64_t)x->sub * CO, n = DFCCL_MIN(CO, x->hi - off);
            prim_send(out, v, sbuf + ((uint64_t)to * a->count + off) * ts, n * ts);
            x->sub++;
            prog = ENG_PROGRESS;
        }
        while (x->sub2 < nin && prim_recv_ready(in)) {
            const uint64_t off = x->lo + (uint64_t)x->sub2 * CI, n = DFCCL_MIN(CI, x->hi - off);
            prim_recv_copy(in, v, rbuf + ((uint64_t)from * a->count + off) * ts, n * ts);
            x->sub2++;
            prog = ENG_PROGRESS;
        }
        if (x->sub < nout || x->sub2 < nin)
            return prog;
        x->step++;
        x->sub = x->sub2 = 0;
    }
    return ENG_DONE;
}

#endif

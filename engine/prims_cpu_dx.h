/* SPDX-License-Identifier: BSD-3-Clause */
/* CPU-backend primitives of the direct exchange (algo_direct.h), written over the base
 * primitives (prims_cpu.h) and the composite ones (prims_compose.h), which prims.h
 * includes before this. */
#ifndef DFCCL_PRIMS_CPU_DX_H
#define DFCCL_PRIMS_CPU_DX_H

#include <string.h>

#include "prims_compose.h"
#include "prims_cpu.h"

/* --- direct exchange (algo_direct.h): a chunk to or from every peer of a mask ------- */

/* Every peer of rmask has a step posted and every peer of smask has room. */
DFCCL_DEV_INLINE int prim_ready_mask(const eng_conn_t *conns, int n, uint32_t rmask, uint32_t smask,
                                     const eng_chan_view_t *v)
{
    for (int p = 0; p < n; p++) {
        if ((rmask >> p & 1) && !prim_recv_ready(&conns[p], v))
            return 0;
        if ((smask >> p & 1) && !prim_send_ready(&conns[p], v->depth))
            return 0;
    }
    return 1;
}

/* Post to every peer p of mask its piece of the chunk: src's block p, or (own) the
 * rank's own block, which src points at, to every peer. */
DFCCL_DEV_INLINE void prim_dx_send(eng_conn_t *conns, int n, uint32_t mask, const eng_chan_view_t *v,
                                   const eng_dx_chunk_t *d, const void *src, int own)
{
    const uint64_t own_bytes = eng_dx_elems(d, v->rank) * d->ts;
    for (int p = 0; p < n; p++)
        if (mask >> p & 1) {
            const uint64_t at = own ? d->off : (uint64_t)p * d->S + d->off;
            prim_send(&conns[p], v, (const char *)src + at * d->ts,
                      own ? own_bytes : eng_dx_elems(d, p) * d->ts);
        }
}

/* Every peer p of mask: its step to dst's block p. */
DFCCL_DEV_INLINE void prim_dx_recv(eng_conn_t *conns, int n, uint32_t mask, const eng_chan_view_t *v,
                                   const eng_dx_chunk_t *d, void *dst)
{
    for (int p = 0; p < n; p++)
        if (mask >> p & 1)
            prim_recv_copy(&conns[p], v, (char *)dst + ((uint64_t)p * d->S + d->off) * d->ts,
                           eng_dx_elems(d, p) * d->ts);
}

/* out = the rank's own block of the chunk reduced over every rank in rank order (own
 * data in the rank's place, the peers of mask from their steps), so every rank that
 * reduces the same inputs gets the same bits; with send, also posted to every peer of
 * mask. out may be own: folded a piece at a time in a temporary. */
DFCCL_DEV_INLINE void prim_dx_reduce(eng_conn_t *conns, int n, uint32_t mask, const eng_chan_view_t *v,
                                     const eng_dx_chunk_t *d, const void *own, void *out, int dtype, int op,
                                     int send)
{
    const uint64_t m = eng_dx_elems(d, v->rank), ts = d->ts, piece = 4096 / ts;
    uint64_t tmp[512];
    for (uint64_t o = 0; o < m; o += piece) {
        const uint64_t k = DFCCL_MIN(piece, m - o);
        int first = 1;
        for (int p = 0; p < n; p++) {
            if (p != v->rank && !(mask >> p & 1))
                continue;
            const char *src =
                (p == v->rank ? (const char *)own : prim_recv_buf(&conns[p], v, m * ts)) + o * ts;
            if (first)
                memcpy(tmp, src, k * ts);
            else
                (void)eng_reduce(tmp, tmp, src, k, dtype, op);
            first = 0;
        }
        memcpy((char *)out + o * ts, tmp, k * ts);
    }
    for (int p = 0; p < n; p++)
        if (mask >> p & 1) {
            if (send)
                prim_send(&conns[p], v, out, m * ts);
            prim_recv_done(&conns[p]);
        }
}

#endif

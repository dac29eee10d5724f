/* SPDX-License-Identifier: BSD-3-Clause */
/* CPU-backend primitives: how a step is checked, posted, consumed, copied and reduced
 * by one host thread over POSIX shared memory. The algorithms (algo_*.h) only call
 * these; the GPU backend provides the same names over CUDA IPC with a cooperating
 * thread block. Names list the data movement in order (NCCL prims). */
#ifndef DFCCL_PRIMS_CPU_H
#define DFCCL_PRIMS_CPU_H

#include <string.h>

#include "eng_atomic.h"
#include "eng_bell.h"
#include "eng_sig.h"
#include "eng_types.h"
#include "ll_packet.h"
#include "ll_plan.h"
#include "reduce.h"

/* --- readiness: never wait here; the scheduler owns every wait ---------------------- */

/* A step from the peer is posted, not yet consumed, and of a collective with this one's
 * signature (else it is never ready: a mismatch stalls, and the stall's diagnosis names
 * it). The step's word is read first, so that its miss overlaps `posted`'s, and again only
 * when that early read does not show this step's tag (eng_step_word). Pairs with the
 * release store of `posted` in prim_send_post. */
DFCCL_DEV_INLINE int prim_recv_ready(const eng_conn_t *c, const eng_chan_view_t *v)
{
    const uint64_t *wp = &c->recv_ctrl->bytes[eng_mod(c->recvd, v->depth)];
    uint64_t w = DFCCL_READ_ONCE(*wp);
    if (dfccl_load_acquire64(&c->recv_ctrl->posted) <= c->recvd)
        return 0;
    if (!eng_step_tagged(w, v->sig, c->recvd))
        w = DFCCL_READ_ONCE(*wp); /* read before the post: now the step's own */
    return eng_step_sig_ok(w, v->sig, c->recvd);
}

/* The peer has room for one more step. Pairs with the release store of `consumed` in
 * prim_recv_done, so the receiver's reads of a slot happen before we overwrite it. */
DFCCL_DEV_INLINE int prim_send_ready(const eng_conn_t *c, uint32_t depth)
{
    return c->sent - dfccl_load_acquire64(&c->send_ctrl->consumed) < depth;
}

/* --- slot access --------------------------------------------------------------------- */

/* The current step's data; `bytes`, its size as the algorithm knows it, places it on the
 * GPU (cuda_prims.cuh: small steps of some net peers are host-staged), not here. */
DFCCL_DEV_INLINE const char *prim_recv_buf(const eng_conn_t *c, const eng_chan_view_t *v, uint64_t bytes)
{
    (void)bytes;
    return c->recv_data + eng_mod(c->recvd, v->depth) * c->rchunk;
}

/* The size the peer posted with the current step (a reply whose size is its message). */
DFCCL_DEV_INLINE uint64_t prim_recv_bytes(const eng_conn_t *c, const eng_chan_view_t *v)
{
    return eng_step_bytes(DFCCL_READ_ONCE(c->recv_ctrl->bytes[eng_mod(c->recvd, v->depth)]));
}

DFCCL_DEV_INLINE char *prim_send_buf(const eng_conn_t *c, const eng_chan_view_t *v, uint64_t bytes)
{
    (void)bytes;
    return c->send_data + eng_mod(c->sent, v->depth) * c->schunk;
}

/* Publish one step: data and size (with the signature) first, then `posted` with release
 * (the receiver's acquire in prim_recv_ready is the counterpart). */
DFCCL_DEV_INLINE void prim_send_post(eng_conn_t *c, const eng_chan_view_t *v, uint64_t bytes)
{
    c->send_ctrl->bytes[eng_mod(c->sent, v->depth)] = eng_step_word(bytes, v->sig, c->sent);
    c->sent++;
    dfccl_store_release64(&c->send_ctrl->posted, c->sent);
    eng_bell_ring(c->bell);
}

/* Give the slot back to the sender once its data has been read. */
DFCCL_DEV_INLINE void prim_recv_done(eng_conn_t *c)
{
    c->recvd++;
    dfccl_store_release64(&c->recv_ctrl->consumed, c->recvd);
    eng_bell_ring(c->bell);
}

/* --- every connection at once (one-shot): the GPU checks and posts them in parallel -- */

DFCCL_DEV_INLINE int prim_recv_ready_all(const eng_conn_t *conns, int n, const eng_chan_view_t *v)
{
    for (int p = 0; p < n; p++)
        if (!prim_recv_ready(&conns[p], v))
            return 0;
    return 1;
}

DFCCL_DEV_INLINE int prim_send_ready_all(const eng_conn_t *conns, int n, uint32_t depth)
{
    for (int p = 0; p < n; p++)
        if (!prim_send_ready(&conns[p], depth))
            return 0;
    return 1;
}

DFCCL_DEV_INLINE void prim_send_post_all(eng_conn_t *conns, int n, const eng_chan_view_t *v, uint64_t bytes)
{
    for (int p = 0; p < n; p++)
        prim_send_post(&conns[p], v, bytes);
}

DFCCL_DEV_INLINE void prim_recv_done_all(eng_conn_t *conns, int n)
{
    for (int p = 0; p < n; p++)
        prim_recv_done(&conns[p]);
}

/* --- LL lines: each 8-byte word {4 data bytes, flag} is one atomic store, so a reader
 * that sees the flag sees its data; the words need no order among themselves -------- */

/* Every peer of the plan's smask has its current step free: write each its piece
 * (sendbuf + p * sstride, or the table's block for p) as lines and return 1; else 0,
 * nothing written. LL steps publish nothing
 * else: `posted` stays at the last Simple step, which is all a later Simple step's check
 * needs (it waits for its own, absolute, count). */
DFCCL_DEV_INLINE int prim_ll_send_all(eng_conn_t *conns, int n, const eng_chan_view_t *v,
                                      const eng_coll_args_t *a, const eng_ll_plan_t *pl)
{
    const void *src = a->sendbuf;
    for (int p = 0; p < n; p++)
        if ((pl->smask >> p & 1) && !prim_send_ready(&conns[p], v->depth))
            return 0;
    for (int p = 0; p < n; p++) {
        if (!(pl->smask >> p & 1))
            continue;
        eng_conn_t *c = &conns[p];
        /* the piece for p: a table's block (reduce_scatterv), else p strides in; this
         * channel's lines of it [l0, hi), at line 0 of the step */
        const uint64_t bytes = pl->tab ? pl->tab[p].sbytes : pl->bytes, l0 = pl->l0;
        const uint64_t lines = eng_ll_chan_lines(l0, pl->l1, bytes);
        uint64_t *dst = (uint64_t *)prim_send_buf(c, v, 16 * lines);
        const char *s = (const char *)src + (pl->tab ? pl->tab[p].soff : (uint64_t)p * pl->sstride);
        /* the signature salts the flag: a peer of another signature never sees the line */
        const uint64_t flag = (uint64_t)eng_ll_flag(c->ll_salt ^ v->sig, c->sent + 1) << 32;
        for (uint64_t i = 0; i < lines; i++) {
            const uint64_t pk = bytes ? eng_ll_packet_load(s, bytes, l0 + i) : 0;
            dfccl_store_relaxed64(&dst[2 * i], flag | (uint32_t)pk);
            dfccl_store_relaxed64(&dst[2 * i + 1], flag | (pk >> 32));
        }
        c->sent++;
        eng_bell_ring(c->bell);
    }
    return 1;
}

/* The 8 data bytes of line i of a step (its two words' low halves). */
DFCCL_DEV_INLINE uint64_t ll_line_packet(const uint64_t *step, uint64_t i)
{
    return (uint32_t)dfccl_load_relaxed64(&step[2 * i]) |
           (uint64_t)(uint32_t)dfccl_load_relaxed64(&step[2 * i + 1]) << 32;
}

/* Every peer of the plan's rmask has all lines of its current step with their flag: reduce them
 * in rank order into recvbuf, or copy peer p's to recvbuf + p * rstride, and return 1;
 * otherwise 0 and nothing is written. */
DFCCL_DEV_INLINE int prim_ll_recv_all(eng_conn_t *conns, int n, const eng_chan_view_t *v,
                                      const eng_coll_args_t *a, const eng_ll_plan_t *pl)
{
    /* this channel's lines [l0, l0 + lines) of the pieces (a table's: of this rank's) */
    const uint64_t bytes = pl->bytes, l0 = pl->l0, lines = eng_ll_chan_lines(l0, pl->l1, bytes);
    const uint64_t *src[ENG_LL_MAX_RANKS]; /* each connection's current step */
    for (int p = 0; p < n; p++) {
        if (!(pl->rmask >> p & 1))
            continue;
        src[p] = (const uint64_t *)prim_recv_buf(&conns[p], v, 16 * lines);
        const uint32_t flag = eng_ll_flag(conns[p].ll_salt ^ v->sig, conns[p].recvd + 1);
        for (uint64_t i = 0; i < 2 * lines; i++)
            if ((uint32_t)(dfccl_load_relaxed64(&src[p][i]) >> 32) != flag)
                return 0;
    }
    if (!bytes)
        return 1;
    /* every line is in place, and stays until prim_ll_recv_done_all gives the steps back */
    if (pl->reduce) { /* a reduction reads every rank */
        for (uint64_t i = 0; i < lines; i++) {
            uint64_t acc = 0;
            for (int p = 0; p < n; p++)
                acc = p ? eng_reduce_packet(acc, ll_line_packet(src[p], i), a->dtype, a->op)
                        : ll_line_packet(src[p], i);
            eng_ll_packet_store(a->recvbuf, bytes, l0 + i, acc);
        }
        return 1;
    }
    for (int p = 0; p < n; p++) {
        if (!(pl->rmask >> p & 1))
            continue;
        char *dst = (char *)a->recvbuf + (uint64_t)p * pl->rstride;
        for (uint64_t i = 0; i < lines; i++)
            eng_ll_packet_store(dst, bytes, l0 + i, ll_line_packet(src[p], i));
    }
    return 1;
}

/* After a read that returned 1: the step of every peer of rmask back to its sender. */
DFCCL_DEV_INLINE void prim_ll_recv_done_all(eng_conn_t *conns, int n, uint32_t rmask)
{
    for (int p = 0; p < n; p++)
        if (rmask >> p & 1)
            prim_recv_done(&conns[p]);
}

/* --- data movement, named in dataflow order ------------------------------------------ */

DFCCL_DEV_INLINE void prim_copy(void *dst, const void *src, size_t bytes)
{
    if (bytes && dst != src)
        memmove(dst, src, bytes);
}

DFCCL_DEV_INLINE void prim_reduce(void *dst, const void *a, const void *b, size_t n, int dtype, int op)
{
    (void)eng_reduce(dst, a, b, n, dtype, op);
}

DFCCL_DEV_INLINE void prim_barrier(void)
{
    /* one thread: nothing to wait for */
}

/* One peer's block of a v-collective's table. */
DFCCL_DEV_INLINE void prim_load_block(eng_block_t *b, const eng_block_t *src)
{
    *b = *src;
}

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* Direct exchange for the mid range: every rank talks to every peer at once, so a
 * collective takes one or two dependent steps instead of the ring's N-1 or 2N-1.
 *
 *   allreduce (two-shot): scatter block p to rank p -> reduce own block, send it to
 *                         every peer -> gather the reduced blocks
 *   allreduce (one-shot,  the whole input to every peer -> reduce it all
 *     ENG_ALGO_DIRECT1):  (few ranks: one dependent step, N-1 times the traffic)
 *   reduce_scatter:       scatter -> reduce own block into the output
 *   allgather:            own block to every peer -> gather
 *   alltoall:             block p to rank p -> gather
 *   bcast:                the root's buffer to every peer -> each peer copies it out
 *   reduce:               every peer's buffer to the root -> the root reduces them all
 *
 * The data is N blocks of S elements (block p: rank p's share); channel c owns the same
 * range [lo, hi) of every block, in grains of 16 bytes so that vector copies stay aligned,
 * and walks it in windows of up to W chunks, one FIFO step per chunk and peer (the self
 * connection's step, the smallest of any, the same on every rank). Own data never goes
 * through a FIFO: a rank reduces its own block straight from its input.
 *
 * A window's phase checks every step it needs on every peer (the preemption points)
 * before it moves anything, so a saved context is (off, step, sub) and no data phase is
 * ever run twice. A rank starts window w+1 only after its last phase of window w, which
 * needs every rank's phase 1 of window w. W is half the FIFO depth for two-shot (a
 * window's scatter and its reduced blocks may sit in one FIFO together, so its sends
 * never wait for room) and the whole depth for the one-phase exchanges, whose sends of
 * window w+1 may wait for the room a peer frees in its last phase of window w, which
 * needs nothing more from the sender: no credit cycle forms inside one collective. Every reduction folds the
 * ranks' inputs in rank order, own data in its place: in two-shot the owner alone reduces
 * its block and sends the result, in one-shot every rank reduces the whole buffer in that
 * same order, so every rank gets the same bits. */
#ifndef DFCCL_ALGO_DIRECT_H
#define DFCCL_ALGO_DIRECT_H

#include "algo_read.h"
#include "eng_types.h"
#include "prims.h"

/* A channel's range is at least this many bytes of a block: below it the flag round trips
 * of another channel cost more than the data it would take. */
#define ENG_DX_PIECE 2048u

/* Elements of a 16-byte grain. */
DFCCL_INLINE uint64_t eng_dx_grain(const eng_coll_args_t *a)
{
    return eng_div(16, eng_type_size(a->dtype));
}

/* Elements of one block: allreduce's N blocks (rounded up to whole grains, the last ones
 * short or empty) cover its buffer, the one-shot's one block is all of it, the others'
 * block is the per-rank count. */
DFCCL_INLINE uint64_t eng_dx_stride(const eng_coll_args_t *a, int nranks)
{
    if (a->coll != ENG_COLL_ALLREDUCE)
        return a->count;
    const uint64_t G = eng_dx_grain(a);
    const uint64_t n = a->algo == ENG_ALGO_DIRECT1 ? a->count : DFCCL_DIV_UP(a->count, (uint64_t)nranks);
    return eng_div(n + G - 1, G) * G;
}

/* bcast and reduce: the root talks to every peer at once, in one dependent step instead
 * of the chain's N-1 hops; their one block is the whole buffer, as the one-shot's. */
DFCCL_INLINE int eng_dx_rooted(const eng_coll_args_t *a)
{
    return a->coll == ENG_COLL_BCAST || a->coll == ENG_COLL_REDUCE;
}

/* What eng_algo_select compares with direct_max, in bytes: allreduce, bcast and reduce
 * their buffer, reduce_scatter and allgather the larger of a rank's input and output (N
 * blocks), alltoall one block (what a rank sends one peer). The alltoall's alternative, the
 * pairwise exchange, takes N-1 dependent steps at every size: on one H200 at 8 ranks the
 * direct exchange took 0.46-0.58x its time for 256 KiB-1 MiB blocks (N blocks of 2-8 MiB),
 * where the allgather's ring already beat it from 512 KiB blocks (bench/RESULTS.md). */
DFCCL_INLINE uint64_t eng_dx_bytes(const eng_coll_args_t *a, int nranks)
{
    const uint64_t b = a->count * eng_type_size(a->dtype);
    return a->coll == ENG_COLL_ALLREDUCE || a->coll == ENG_COLL_ALLTOALL || eng_dx_rooted(a)
               ? b
               : b * (uint64_t)nranks;
}

/* One phase of one chunk (elements [off, off + e) of every block): 0 sends it to every
 * peer, 1 reduces the own block (two-shot: and sends it to every peer) or gathers the
 * peers' blocks, 2 gathers the reduced blocks (two-shot). Returns 0, having moved
 * nothing, when a peer's step is not there yet or a peer has no room. */
DFCCL_DEV_INLINE int eng_dx_phase(const eng_coll_args_t *a, const eng_chan_view_t *v, uint64_t off,
                                  uint64_t e, uint32_t phase)
{
    const int N = v->nranks, r = v->rank, rooted = eng_dx_rooted(a);
    const uint32_t all = N >= 32 ? 0xffffffffu : (1u << N) - 1u, peers = all & ~(1u << r);
    const int one = a->algo == ENG_ALGO_DIRECT1 || rooted, two = a->coll == ENG_COLL_ALLREDUCE && !one;
    /* the peers a phase receives from and sends to: everyone, or for bcast and reduce the
     * root alone (a peer) or every peer (the root), in the direction the data flows */
    uint32_t rmask = phase ? peers : 0, smask = phase == 0 || (phase == 1 && two) ? peers : 0;
    if (rooted) {
        const int at_root = r == a->root, to_root = a->coll == ENG_COLL_REDUCE;
        const uint32_t far = at_root ? peers : 1u << a->root; /* the other end(s) */
        rmask = phase == 1 && to_root == at_root ? far : 0;
        smask = phase == 0 && to_root != at_root ? far : 0;
    }
    if (!prim_ready_mask(v->conns, N, rmask, smask, v))
        return 0;
    const uint32_t ts = (uint32_t)eng_type_size(a->dtype);
    const uint64_t S = eng_dx_stride(a, N);
    const char *sbuf = (const char *)a->sendbuf;
    char *rbuf = (char *)a->recvbuf;
    eng_dx_chunk_t d;
    d.S = one ? 0 : S; /* the one-shot: every rank's "block" is the whole buffer */
    d.total = a->coll == ENG_COLL_ALLREDUCE || rooted ? a->count : (uint64_t)N * S;
    d.off = off;
    d.e = e;
    d.ts = ts;
    const uint64_t own = ((uint64_t)r * d.S + off) * ts; /* the rank's own block of the chunk */
    if (phase == 0) {
        const int mine = a->coll == ENG_COLL_ALLGATHER || one; /* the own block to every peer */
        prim_dx_send(v->conns, N, smask, v, &d, sbuf, mine);
        if ((mine && !one) || a->coll == ENG_COLL_ALLTOALL ||
            (a->coll == ENG_COLL_BCAST && r == a->root && sbuf != rbuf))
            prim_copy(rbuf + own, sbuf + (mine ? off * ts : own), eng_dx_elems(&d, r) * ts);
    } else if (phase == 1 && (a->coll == ENG_COLL_ALLREDUCE || a->coll == ENG_COLL_REDUCE_SCATTER ||
                              (a->coll == ENG_COLL_REDUCE && r == a->root))) {
        prim_dx_reduce(v->conns, N, rmask, v, &d, sbuf + own, rbuf + (two ? own : off * ts), a->dtype, a->op,
                       two);
    } else {
        prim_dx_recv(v->conns, N, rmask, v, &d, rbuf); /* (a reduce's peer: nothing) */
    }
    return 1;
}

/* Out of line on the GPU (inlined, the daemon kernel spilled 1036 bytes), and the entry
 * of the zero-copy read too (one call site in the kernel). Even so the
 * kernel that holds it spills 450 bytes where it spilled 144, and allreduce at 8 B-1 MiB
 * through the ring and LL ran 1.5-4 us slower (bench/RESULTS.md): the GPU daemon has a
 * kernel without it, launched unless DFCCL_DIRECT_MAX is set (gpu_daemon_launch). */
DFCCL_DEV_OUTLINE eng_prog_t algo_direct_progress(const eng_coll_args_t *a, eng_chan_view_t *v, eng_ctx_t *x)
{
    if (a->algo == ENG_ALGO_READ) /* the zero-copy read shares the call site (algo_read.h) */
        return algo_read_progress(a, v, x);
    const uint32_t ts = (uint32_t)eng_type_size(a->dtype);
    const uint64_t G = eng_div(16, ts), S = eng_dx_stride(a, v->nranks);
    const uint32_t last = a->algo == ENG_ALGO_DIRECT ? (a->coll == ENG_COLL_ALLREDUCE ? 2 : 1)
                                                     : 1; /* the window's last phase */
    const uint32_t W = last == 2 ? DFCCL_MAX(v->depth / 2, 1u) : v->depth;
    const uint64_t CE = eng_div(v->conns[v->rank].rchunk, ts); /* elements per step: whole grains */
    const uint64_t end = DFCCL_MIN(x->hi * G, S);
    eng_prog_t prog = ENG_WAIT;
    while (x->off < x->hi) {
        const uint64_t o = x->off * G;
        const uint32_t k = (uint32_t)DFCCL_MIN((uint64_t)W, eng_div(end - o + CE - 1, CE));
        /* phase by phase, each over the window's k chunks */
        while (x->step <= last) {
            const uint64_t c = o + (uint64_t)x->sub * CE;
            if (!eng_dx_phase(a, v, c, DFCCL_MIN(CE, end - c), x->step))
                return prog;
            prog = ENG_PROGRESS;
            if (++x->sub == k) {
                x->step++;
                x->sub = 0;
            }
        }
        /* the window is done: the next one */
        x->off = DFCCL_MIN(x->hi, x->off + (uint64_t)k * eng_div(CE, G));
        x->step = 0;
    }
    return ENG_DONE;
}

#endif

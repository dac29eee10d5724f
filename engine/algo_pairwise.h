/* SPDX-License-Identifier: BSD-3-Clause */
/* Pairwise exchange, for every collective that moves blocks between pairs of ranks:
 * all-to-all(v/w), gather(v), scatter(v), all-gather-v, reduce-scatter-v. Send step s (1..N-1) sends
 * rank r's block for r+s, receive step s receives the block of r-s, each in chunks.
 * The two directions advance on their own: a send waits only for room in its own
 * connection (and, the sends going in step order, for the sends before it), so the
 * sends run ahead of the receives (every block that fits the FIFO is posted in the
 * first pass instead of one dependent round trip per step). No cycle of
 * waits forms: a receive of r from p blocked on data means p's send step is below r's
 * receive step (at it, p's chunks or its full FIFO would be there), and p's send is
 * blocked on room at a peer q whose receive step is below that send step, and so on
 * down to a receive that can move. Step 0 is the local block.
 * A collective is a per-peer table of {send offset, bytes; receive offset, bytes}: the
 * uniform ones compute it from count and root, the v- and w-ones read it (blocks).
 * Steps where a block is empty pass at once, so a gather's senders all post at once and
 * the root drains them in step order.
 * Every peer's block is cut the same way over the collective's channels, from the
 * block's size alone (the same at both ends), so a very uneven v-collective still moves
 * its large blocks on every channel. Context: send step (step) and chunks sent (sub),
 * receive step (off) and chunks received (sub2).
 * reduce-scatter-v receives every peer's block into the same place, recvbuf, and reduces
 * it there (step 0 put the rank's own block there first): each element is reduced by the
 * one channel that owns it in every step, in receive order (own, r-1, r-2, ...). On the
 * GPU the block's threads split a copy and a reduction differently; the barriers in
 * prim_recv_ready and prim_recv_done keep the step-0 copy and each reduction apart. A
 * chunk is reduced and given back in one call, so a preemption never reduces a chunk
 * twice. */
#ifndef DFCCL_ALGO_PAIRWISE_H
#define DFCCL_ALGO_PAIRWISE_H

#include "eng_types.h"
#include "prims.h"

/* Channels a table's block of `bytes` is cut over, of the communicator's C: one per
 * ENG_PAIR_PIECE, so a small block stays on channel 0 (a v-collective of small blocks
 * completes on a few blocks of the GPU daemon, not on all of them) and a large one
 * moves on every channel. The same at both ends of a block. 16 KiB: on one H200 at 8
 * ranks a 64 KiB alltoallv or allgatherv took 0.48x the time of 64 KiB pieces (one
 * channel), 81.6 against 171 us (bench/RESULTS.md). */
#define ENG_PAIR_PIECE 16384u
DFCCL_INLINE uint64_t eng_pair_chans(uint64_t bytes, uint64_t C)
{
    const uint64_t k = (bytes + ENG_PAIR_PIECE - 1) / ENG_PAIR_PIECE;
    return k == 0 ? 1 : k < C ? k : C;
}

/* Rank r's block with peer p. */
DFCCL_DEV_INLINE void pairwise_block(const eng_coll_args_t *a, int r, int p, eng_block_t *b)
{
    if (a->blocks) {
        prim_load_block(b, &a->blocks[p]);
        return;
    }
    const uint64_t B = a->count * eng_type_size(a->dtype);
    switch (a->coll) {
    case ENG_COLL_GATHER: /* everyone -> root: rank p's block at p * B */
        *b = (eng_block_t){0, p == a->root ? B : 0, (uint64_t)p * B, r == a->root ? B : 0};
        break;
    case ENG_COLL_SCATTER: /* root -> everyone: block p from p * B */
        *b = (eng_block_t){(uint64_t)p * B, r == a->root ? B : 0, 0, p == a->root ? B : 0};
        break;
    default: /* ENG_COLL_ALLTOALL */ *b = (eng_block_t){(uint64_t)p * B, B, (uint64_t)p * B, B}; break;
    }
}

/* This channel's piece [*lo, *hi) of a block of `bytes`. Uniform collectives: the share
 * [x->lo, x->hi) of [0, x->span) the channel owns, in elements (span is the element
 * count). Tables: channel x->lo of the eng_pair_chans(bytes) channels the block is cut
 * over, in 16-byte units (the GPU's vector copy); x->chans is the communicator's. */
DFCCL_DEV_INLINE void pairwise_piece(const eng_coll_args_t *a, const eng_ctx_t *x, uint64_t bytes,
                                     uint64_t *lo, uint64_t *hi)
{
    uint64_t l, h, U;
    if (a->blocks) {
        const uint64_t k = eng_pair_chans(bytes, x->chans), units = DFCCL_DIV_UP(bytes, 16);
        U = 16;
        l = x->lo < k ? eng_div(units * x->lo, k) : units;
        h = x->lo < k ? eng_div(units * (x->lo + 1), k) : units;
    } else {
        const uint64_t units = DFCCL_DIV_UP(bytes, eng_type_size(a->dtype));
        U = eng_type_size(a->dtype);
        l = units == x->span ? x->lo : eng_div(units * x->lo, x->span);
        h = units == x->span ? x->hi : eng_div(units * x->hi, x->span);
    }
    *lo = DFCCL_MIN(l * U, bytes);
    *hi = DFCCL_MIN(h * U, bytes);
}

/* One received chunk to dst: copied, or (reduce-scatter-v) reduced into it; chunks and
 * pieces are whole elements (64-byte chunks, 16-byte pieces). Out of line on the GPU,
 * one call site for both: the reduction inlined made the direct kernel spill 40 bytes,
 * a second call site 32, this one 8. */
DFCCL_DEV_OUTLINE void pairwise_recv(eng_conn_t *in, const eng_chan_view_t *v, char *dst, uint64_t bytes,
                                     const eng_coll_args_t *a)
{
    if (a->coll == ENG_COLL_REDUCE_SCATTERV)
        prim_recv_reduce_copy(in, v, dst, dst, bytes / eng_type_size(a->dtype), a->dtype, a->op);
    else
        prim_recv_copy(in, v, dst, bytes);
}

DFCCL_DEV_INLINE eng_prog_t algo_pairwise_progress(const eng_coll_args_t *a, eng_chan_view_t *v, eng_ctx_t *x)
{
    const int N = v->nranks, r = v->rank;
    const char *sbuf = (const char *)a->sendbuf;
    char *rbuf = (char *)a->recvbuf;
    eng_prog_t prog = ENG_WAIT;
    eng_block_t b;
    uint64_t lo, hi;

    if (x->step == 0) {
        /* step 0: own block (a no-op in place) */
        pairwise_block(a, r, r, &b);
        pairwise_piece(a, x, DFCCL_MIN(b.sbytes, b.rbytes), &lo, &hi);
        if (hi > lo)
            prim_copy(rbuf + b.roff + lo, sbuf + b.soff + lo, hi - lo);
        x->step = 1; /* the send step */
        x->off = 1;  /* the receive step */
        prog = ENG_PROGRESS;
    }
    while (x->off < (uint64_t)N) {
        const int from = (r - (int)x->off + N) % N;
        eng_conn_t *in = &v->conns[from];
        pairwise_block(a, r, from, &b);
        pairwise_piece(a, x, b.rbytes, &lo, &hi);
        const uint64_t C = in->rchunk;
        const uint32_t k = (uint32_t)DFCCL_DIV_UP(hi - lo, C);
        while (x->sub2 < k && prim_recv_ready(in, v)) {
            const uint64_t off = lo + (uint64_t)x->sub2 * C;
            pairwise_recv(in, v, rbuf + b.roff + off, DFCCL_MIN(C, hi - off), a);
            x->sub2++;
            prog = ENG_PROGRESS;
        }
        if (x->sub2 < k)
            break;
        x->off++;
        x->sub2 = 0;
        prog = ENG_PROGRESS;
    }
    /* the sends, after the receives that can move: a send waits only for room in its
     * own connection, so every block that fits the FIFO is posted in the first pass.
     * (Receives first: the other order made the daemon kernel spill 8 bytes; one loop
     * body for both directions spilled 172.) */
    while (x->step < (uint32_t)N) {
        const int to = (r + (int)x->step) % N;
        eng_conn_t *out = &v->conns[to];
        pairwise_block(a, r, to, &b);
        pairwise_piece(a, x, b.sbytes, &lo, &hi);
        const uint64_t C = out->schunk; /* the same at both ends */
        const uint32_t k = (uint32_t)DFCCL_DIV_UP(hi - lo, C);
        while (x->sub < k && prim_send_ready(out, v->depth)) {
            const uint64_t off = lo + (uint64_t)x->sub * C;
            prim_send(out, v, sbuf + b.soff + off, DFCCL_MIN(C, hi - off));
            x->sub++;
            prog = ENG_PROGRESS;
        }
        if (x->sub < k)
            break;
        x->step++;
        x->sub = 0;
        prog = ENG_PROGRESS;
    }
    return x->step < (uint32_t)N || x->off < (uint64_t)N ? prog : ENG_DONE;
}

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* Algorithm choice, per-channel context set-up and dispatch. Backend-neutral: the
 * backend includes its primitives header (prims_cpu.h or the CUDA twin) first. */
#ifndef DFCCL_ALGO_H
#define DFCCL_ALGO_H

#include "algo_chain.h"
#include "algo_direct.h"
#include "algo_ll.h"
#include "algo_oneshot.h"
#include "algo_pairwise.h"
#include "algo_ring.h"
#include "algo_scan.h"

/* The choice depends only on arguments every rank passes identically (and on the
 * communicator), so all ranks pick the same algorithm. Every uniform collective whose
 * piece (eng_ll_piece: what one rank sends one peer) is at most ll_max bytes runs in one
 * round of LL lines (0: never), and one whose piece is above 2 x ENG_LL_CHAN_BYTES and
 * at most ll_wide (DFCCL_LL_WIDE_MAX, eng_ll_wide_max, capped at the channels x ll_max;
 * 0: never) in one round split over the channels (ENG_ALGO_LLW; checked before every
 * other choice but the read, so pieces of 4-8 KiB are split too); allreduces up to oneshot_max one-shot;
 * allreduce, reduce_scatter, allgather, alltoall, bcast and reduce up to direct_max bytes (eng_dx_bytes: the
 * larger of a rank's input and output; alltoall: one block; bcast, reduce: the buffer) in a direct exchange
 * with every peer at once (0: never), the allreduce one-shot over every channel on up to oneshot_ranks ranks,
 * else two-shot (the caller passes direct_max 0 below DFCCL_DIRECT_RANKS ranks, and with net peers); the rest
 * in a ring, chain or pairwise exchange. The switch points and what they rest on (one H200, 2-8 ranks under
 * MPS; bench/RESULTS.md):
 *
 *   collective             piece <= DFCCL_LL_MAX (8 KiB)   above
 *   allreduce              LL round                        one-shot to DFCCL_ONESHOT_MAX
 *                                                          (32 KiB; eng_oneshot_max on the
 *                                                          GPU), to DFCCL_DIRECT_MAX
 *                                                          one-shot on every channel up
 *                                                          to DFCCL_ONESHOT_RANKS ranks,
 *                                                          else two-shot; then ring
 *   reduce, bcast          LL round                        direct to DFCCL_DIRECT_MAX / 2,
 *                                                          chain
 *   allgather, red._scat.  LL round                        direct to DFCCL_DIRECT_MAX, ring
 *   alltoall               LL round                        direct to DFCCL_DIRECT_MAX, pairwise
 *   gather, scatter        LL round                        pairwise
 *   barrier                LL round (one empty line)       -
 *   reduce_scatterv        LL round (largest block)        pairwise
 *   v-, w-collectives,     -                               pairwise; scan: chain
 *   scan, exscan
 *
 * - LL against the one-shot for allreduce: LL faster everywhere it fits, by 0.5-2.2 us at
 *   2 ranks and 4.8-6.3 us at 8 ("Protocol switch points"), hence 8 KiB.
 * - one-shot against ring at 32 KiB: ring 1.5 us faster at 2 ranks, one-shot 25% / 41%
 *   faster at 4 / 8; at 64 KiB the ring wins at every rank count, hence 32 KiB.
 * - direct: DFCCL_DIRECT_MAX 1 MiB from DFCCL_DIRECT_RANKS 4 ranks: the allreduce 0.41-0.58x
 *   the ring's time at 8 ranks and 0.71-0.84x at 4 from 64 KiB to 1 MiB, 1.01-1.13x at 2
 *   ranks ("Direct exchange ... and the 256-thread daemon").
 * - bcast and reduce, direct against chain (OSU, 2026-12-04): direct 0.66-0.75x the
 *   chain's time at 8 ranks from 16 to 256 KiB, 0.86-1.06x at 512 KiB, but 1.05-1.36x at
 *   1 MiB (4 ranks: 0.84-1.03x to 512 KiB, 1.22-1.28x at 1 MiB), hence half of it.
 * - LL round against chain, ring and pairwise, OSU at 8 B and 4 KiB: 1.3-1.7x faster at
 *   2 ranks, 1.9-3.3x at 4, 2.5-5.6x at 8 ("Small collectives in one LL round"); 8 KiB
 *   itself not measured for these, the allreduce limit is reused.
 * With net peers ll_max and direct_max are 0 (the proxy's copies are not 8-byte atomic;
 * the direct exchange's small steps would cross the network one by one).
 *
 * Before all of these, an alltoall or allgather whose block (what one rank sends one
 * peer) is at least read_min bytes reads its peers' blocks where they are
 * (ENG_ALGO_READ, algo_read.h; 0: never; the caller passes 0 with net peers and FIFOs
 * shallower than 2 steps). */
DFCCL_INLINE eng_algo_t eng_algo_select(const eng_coll_args_t *a, int nranks, uint64_t oneshot_max,
                                        uint64_t ll_max, uint64_t direct_max, uint32_t oneshot_ranks,
                                        uint64_t read_min, uint64_t ll_wide)
{
    if (nranks == 1)
        return a->blocks ? ENG_ALGO_PAIRWISE : ENG_ALGO_SELF; /* a table's displacements */
    if (eng_read_pick(a, nranks, read_min))
        return ENG_ALGO_READ;
    const int ll = ll_max > 0 && nranks <= ENG_LL_MAX_RANKS;
    const uint64_t piece = eng_ll_piece(a);
    /* split over the channels: a uniform piece of more than two channels' shares (4 KiB
     * in one round on channel 0 was 0.7-1.3 us faster at 2 and 4 ranks on one H100), up
     * to ll_wide */
    const int wide = ll && piece > 2 * ENG_LL_CHAN_BYTES && piece <= ll_wide && !a->blocks;
    const eng_algo_t lla = wide ? ENG_ALGO_LLW : ENG_ALGO_LL;
    /* a uniform collective with data, whose piece fits ll_max (or the split round) */
    const int ll_round = wide || (ll && piece > 0 && piece <= ll_max && !a->blocks);
    /* a uniform collective with data, up to direct_max */
    const uint64_t dx = eng_dx_bytes(a, nranks);
    const int direct = nranks <= ENG_DX_MAX_RANKS && !a->blocks && dx > 0 && dx <= direct_max;
    switch (a->coll) {
    case ENG_COLL_ALLREDUCE:
        if (wide || (ll && piece <= ll_max))
            return lla;
        if (piece <= oneshot_max)
            return ENG_ALGO_ONESHOT;
        if (!direct)
            return ENG_ALGO_RING;
        return (uint32_t)nranks <= oneshot_ranks ? ENG_ALGO_DIRECT1 : ENG_ALGO_DIRECT;
    case ENG_COLL_BARRIER: return ll ? ENG_ALGO_LL : ENG_ALGO_ONESHOT;
    case ENG_COLL_REDUCE:
    case ENG_COLL_BCAST: /* direct to half of direct_max: the chain's pipeline wins above */
        return ll_round ? lla : direct && dx <= direct_max / 2 ? ENG_ALGO_DIRECT : ENG_ALGO_CHAIN;
    case ENG_COLL_ALLTOALL: return ll_round ? lla : direct ? ENG_ALGO_DIRECT : ENG_ALGO_PAIRWISE;
    case ENG_COLL_GATHER:
    case ENG_COLL_SCATTER: return ll_round ? lla : ENG_ALGO_PAIRWISE;
    case ENG_COLL_GATHERV:
    case ENG_COLL_SCATTERV:
    case ENG_COLL_ALLGATHERV:
    case ENG_COLL_ALLTOALLV:
    case ENG_COLL_ALLTOALLW: return ENG_ALGO_PAIRWISE;
    case ENG_COLL_REDUCE_SCATTERV: /* its counts are every rank's alike: one choice */
        return ll && piece > 0 && piece <= ll_max ? ENG_ALGO_LL : ENG_ALGO_PAIRWISE;
    case ENG_COLL_SCAN:
    case ENG_COLL_EXSCAN: return ENG_ALGO_SCAN;
    case ENG_COLL_ALLGATHER:
    case ENG_COLL_REDUCE_SCATTER: return ll_round ? lla : direct ? ENG_ALGO_DIRECT : ENG_ALGO_RING;
    default: return ENG_ALGO_RING;
    }
}

/* The largest piece of an LL round split over the channels (eng_algo_select's ll_wide)
 * for the caller's DFCCL_LL_WIDE_MAX, its LL limit ll_max (at most half the smallest
 * step) and the communicator's channels: a channel takes at least ENG_LL_CHAN_BYTES of
 * the piece, under 2 x that of it while the channels last (so ll_max must reach that
 * far), and at most ll_max of it once they are all in use. */
DFCCL_INLINE uint64_t eng_ll_wide(uint64_t wide_max, uint64_t ll_max, uint64_t chans)
{
    return ll_max < 2 * (uint64_t)ENG_LL_CHAN_BYTES ? 0 : DFCCL_MIN(wide_max, ll_max * chans);
}

/* The FIFO one-shot allreduce's limit: oneshot_max, or where the GPU daemon has the
 * direct exchange, oneshot_max * 2 / N (16 KiB at 4 ranks, 8 KiB at 8 with the
 * defaults). The one-shot sends N-1 copies of the whole buffer through the FIFOs in
 * chunks of flag round trips; the direct exchange's traffic does not grow with N. On one
 * H200 (OSU, 2026-12-03) the direct exchange took 0.54x the one-shot's time at 8 ranks
 * and 32 KiB, 0.87x at 16 KiB, 0.77x at 4 ranks and 32 KiB, but 1.17x at 4 ranks and
 * 16 KiB. */
DFCCL_INLINE uint64_t eng_oneshot_max(uint64_t oneshot_max, int nranks, int direct)
{
    return direct && nranks > 2 ? DFCCL_MIN(oneshot_max, oneshot_max * 2 / (uint64_t)nranks) : oneshot_max;
}

/* Bytes one rank's collective covers in its output (for the one-rank copy; an exscan's
 * only rank gets nothing). */
DFCCL_INLINE uint64_t eng_self_bytes(const eng_coll_args_t *a)
{
    return a->coll == ENG_COLL_BARRIER || a->coll == ENG_COLL_EXSCAN ? 0 : a->count * eng_type_size(a->dtype);
}

/* A one-rank copy is split over the channels in pieces this big, one piece per channel
 * from channel 0 up: a small one stays on channel 0 alone (block 0, no completion across
 * blocks), a large one moves at the copy rate of all the blocks instead of one block's
 * (47 GB/s for 16 MiB on an H200). */
#define ENG_SELF_PIECE 262144u

/* The range the algorithm splits over the channels, and the channels it uses: all C,
 * or (one-shot) channel 0 alone. with_direct: as in eng_algo_progress_in (0: a direct
 * exchange gets no channel). */
DFCCL_INLINE uint64_t eng_split_span(const eng_coll_args_t *a, int nranks, int *C, const int with_direct)
{
    switch (a->algo) {
    case ENG_ALGO_RING: return ring_stride(a, nranks);
    case ENG_ALGO_ONESHOT:
    case ENG_ALGO_LL: *C = 1; return 1; /* (the LL round: every line, algo_ll.h) */
    case ENG_ALGO_LLW: {                /* the lines over the channels, at least ENG_LL_CHAN_BYTES each */
        const uint64_t piece = eng_ll_piece(a), chans = piece / ENG_LL_CHAN_BYTES;
        if (chans < (uint64_t)*C)
            *C = chans ? (int)chans : 1;
        return eng_ll_lines(piece);
    }
    case ENG_ALGO_DIRECT:
    case ENG_ALGO_DIRECT1:
    case ENG_ALGO_READ: { /* the same ranges of every block as the direct exchange */
        if (!with_direct) {
            *C = 1;
            return 1;
        }
        /* a block in grains; channels of at least ENG_DX_PIECE bytes of it */
        const uint64_t G = eng_dx_grain(a), S = eng_dx_stride(a, nranks);
        const uint64_t pieces = DFCCL_DIV_UP(S * eng_type_size(a->dtype), (uint64_t)ENG_DX_PIECE);
        if (pieces < (uint64_t)*C)
            *C = pieces ? (int)pieces : 1;
        return eng_div(S + G - 1, G);
    }
    case ENG_ALGO_SELF: {
        uint64_t pieces = (eng_self_bytes(a) + ENG_SELF_PIECE - 1) / ENG_SELF_PIECE;
        pieces = pieces ? pieces : 1;
        if (pieces < (uint64_t)*C)
            *C = (int)pieces; /* channels 0 .. pieces-1, not every C/pieces-th one */
        return pieces;
    }
    case ENG_ALGO_PAIRWISE: {
        if (!a->blocks)
            return a->count;
        /* a table: the channels this rank's largest block is cut over (count holds its
         * bytes); every channel a peer's block with this rank uses is among them */
        const uint64_t k = eng_pair_chans(a->count, (uint64_t)*C);
        *C = (int)k;
        return k;
    }
    default: return a->count;
    }
}

/* Channel c of C owns elements [lo, hi) of the range the algorithm splits. Returns the
 * channels with elements to move (eng_active_channels_in), from the same split: the GPU
 * daemon's intake wants both, and its one thread pays for every branch twice. */
DFCCL_INLINE int eng_ctx_init_in(const eng_coll_args_t *a, int nranks, int c, int C, eng_ctx_t *x,
                                 const int with_direct)
{
    x->chans = (uint32_t)C;
    const uint64_t span = eng_split_span(a, nranks, &C, with_direct);
    x->lo = c < C ? eng_div(span * (uint64_t)c, (uint64_t)C) : 0;
    x->hi = c < C ? eng_div(span * (uint64_t)(c + 1), (uint64_t)C) : 0;
    x->off = x->lo;
    x->step = x->sub = x->sub2 = 0;
    x->span = span;
    x->done = x->lo >= x->hi;
    return span < (uint64_t)C ? (int)span : C;
}

/* Channels of C with elements to move: only those take part on the GPU (a one-shot
 * runs on block 0 alone, and the others never see it). Channel c owns
 * [span*c/C, span*(c+1)/C), so exactly min(span, C) ranges are non-empty; closed form,
 * because 64-bit divisions are slow on the GPU and every block computes this. */
DFCCL_INLINE int eng_active_channels_in(const eng_coll_args_t *a, int nranks, int C, const int with_direct)
{
    const uint64_t span = eng_split_span(a, nranks, &C, with_direct);
    return span < (uint64_t)C ? (int)span : C;
}

DFCCL_INLINE void eng_ctx_init(const eng_coll_args_t *a, int nranks, int c, int C, eng_ctx_t *x)
{
    eng_ctx_init_in(a, nranks, c, C, x, 1);
}

DFCCL_INLINE int eng_active_channels(const eng_coll_args_t *a, int nranks, int C)
{
    return eng_active_channels_in(a, nranks, C, 1);
}

/* One call of a's algorithm on one channel. with_direct (a constant where it is
 * inlined): whether the direct exchange is compiled in. The GPU daemon has a kernel
 * without it, run unless DFCCL_DIRECT_MAX is set: the out-of-line call alone changes
 * how the kernel's registers are spent, and its other paths slowed down. */
DFCCL_DEV_INLINE eng_prog_t eng_algo_progress_in(const eng_coll_args_t *a, eng_chan_view_t *v, eng_ctx_t *x,
                                                 const int with_direct)
{
    switch (a->algo) {
    case ENG_ALGO_RING: return algo_ring_progress(a, v, x);
    case ENG_ALGO_ONESHOT: return algo_oneshot_progress(a, v, x);
    case ENG_ALGO_LL:
    case ENG_ALGO_LLW: return algo_ll_progress(a, v, x);
    case ENG_ALGO_DIRECT:
    case ENG_ALGO_DIRECT1:
    case ENG_ALGO_READ: /* one call site: a second out-of-line call made the kernel spill */
        if (with_direct)
            return algo_direct_progress(a, v, x);
        return ENG_DONE; /* not reached: the caller refuses such a task */
    case ENG_ALGO_CHAIN: return algo_chain_progress(a, v, x);
    case ENG_ALGO_PAIRWISE: return algo_pairwise_progress(a, v, x);
    case ENG_ALGO_SCAN: return algo_scan_progress(a, v, x);
    case ENG_ALGO_SELF:
    default: {
        /* this channel's pieces [lo, hi) of the copy */
        const uint64_t n = eng_self_bytes(a), b0 = x->lo * ENG_SELF_PIECE;
        const uint64_t b1 = x->hi * ENG_SELF_PIECE < n ? x->hi * ENG_SELF_PIECE : n;
        if (a->recvbuf && b1 > b0)
            prim_copy((char *)a->recvbuf + b0, (const char *)a->sendbuf + b0, b1 - b0);
        x->off = x->hi;
        return ENG_DONE;
    }
    }
}

DFCCL_DEV_INLINE eng_prog_t eng_algo_progress(const eng_coll_args_t *a, eng_chan_view_t *v, eng_ctx_t *x)
{
    return eng_algo_progress_in(a, v, x, 1);
}

#endif

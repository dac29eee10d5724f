/* SPDX-License-Identifier: BSD-3-Clause */
/* The plan of one round of LL lines (algo_ll.h): which peers a rank writes to and reads
 * from, and where the pieces come from and go. A pure function of the arguments every
 * rank passes and of its rank, so both ends of a connection agree; computed by the
 * algorithm and again inside each backend's LL primitives, so the GPU's out-of-line
 * calls take no plan through memory. */
#ifndef DFCCL_LL_PLAN_H
#define DFCCL_LL_PLAN_H

#include "eng_types.h"
#include "reduce.h"

/* One round of LL lines (algo_ll.h): every rank writes one piece to each peer of smask
 * and reads one from each peer of rmask (bit p: rank p, the rank itself included; the
 * two ends of a connection agree: p is in my smask exactly when I am in p's rmask). */
typedef struct {
    uint64_t bytes;         /* one piece (reduce_scatterv: the one each peer sends this rank) */
    uint64_t sstride;       /* the piece for peer p is sendbuf + p * sstride */
    const eng_block_t *tab; /* reduce_scatterv: the piece for peer p is tab[p] (soff, sbytes) */
    uint64_t rstride;       /* copied: peer p's piece lands at recvbuf + p * rstride */
    uint32_t smask, rmask;  /* peers written to, read from */
    int reduce;             /* else copied: the pieces of every rank reduced in rank order */
    uint64_t l0, l1;        /* this channel's lines of every piece: [l0, l1) at line 0 of its
                               steps, clipped to each piece's lines (UINT64_MAX: all of them) */
} eng_ll_plan_t;

/* Bytes of the piece one rank sends one peer (what eng_algo_select compares with
 * ll_max): the whole buffer for allreduce, reduce, bcast, a rank's block for the rest;
 * reduce_scatterv its largest block (its count holds those bytes, every rank's alike). */
DFCCL_INLINE uint64_t eng_ll_piece(const eng_coll_args_t *a)
{
    return a->coll == ENG_COLL_BARRIER           ? 0
           : a->coll == ENG_COLL_REDUCE_SCATTERV ? a->count
                                                 : a->count * eng_type_size(a->dtype);
}

/* Of a piece of bytes, the lines this channel moves: [l0, l0 + the count returned), the
 * plan's range clipped to the piece's lines (a table's pieces differ in size; the plain
 * round's range is every line). Both backends' LL primitives ask it per piece. */
DFCCL_INLINE uint64_t eng_ll_chan_lines(uint64_t l0, uint64_t l1, uint64_t bytes)
{
    const uint64_t hi = DFCCL_MIN(l1, eng_ll_lines(bytes));
    return hi > l0 ? hi - l0 : 0;
}

/* Who writes to whom, and where the pieces come from and go, for rank r of N; the
 * channel's lines [l0, l1) of each piece (ENG_ALGO_LLW's split: eng_split_span). */
DFCCL_INLINE void eng_ll_plan(const eng_coll_args_t *a, int r, int N, uint64_t l0, uint64_t l1,
                              eng_ll_plan_t *pl)
{
    const uint32_t all = N >= 32 ? 0xffffffffu : (1u << N) - 1u, root = 1u << (a->root & 31);
    const uint64_t B = eng_ll_piece(a);
    const int is_root = r == a->root;
    pl->bytes = B;
    pl->sstride = pl->rstride = 0;
    pl->tab = NULL;
    pl->smask = pl->rmask = all;
    pl->reduce = 0;
    pl->l0 = l0;
    pl->l1 = l1;
    switch (a->coll) {
    case ENG_COLL_ALLREDUCE: pl->reduce = 1; break;
    case ENG_COLL_REDUCE_SCATTER:
        pl->reduce = 1;
        pl->sstride = B;
        break;
    case ENG_COLL_REDUCE_SCATTERV: /* every peer sends this rank its block of the table */
        pl->reduce = 1;
        pl->tab = a->blocks;
        pl->bytes = a->blocks[r].rbytes;
        break;
    case ENG_COLL_REDUCE:
        pl->reduce = 1;
        pl->smask = root;
        pl->rmask = is_root ? all : 0;
        break;
    case ENG_COLL_BCAST: /* the root too reads its own piece: its output may differ from its input */
        pl->smask = is_root ? all : 0;
        pl->rmask = root;
        break;
    case ENG_COLL_SCATTER:
        pl->smask = is_root ? all : 0;
        pl->rmask = root;
        pl->sstride = B;
        break;
    case ENG_COLL_GATHER:
        pl->smask = root;
        pl->rmask = is_root ? all : 0;
        pl->rstride = B;
        break;
    case ENG_COLL_ALLGATHER: pl->rstride = B; break;
    case ENG_COLL_ALLTOALL: pl->sstride = pl->rstride = B; break;
    default: break; /* ENG_COLL_BARRIER: one empty line to and from every rank */
    }
}

#endif

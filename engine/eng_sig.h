/* SPDX-License-Identifier: BSD-3-Clause */
/* A collective's signature: what every rank must pass alike to one collective (its kind,
 * count, datatype, op, root, and its epoch: the calls its daemon refused before it; a
 * refused call takes no number, so a rank's next call has the number its peers gave the
 * call it refused, and must not complete with their steps), as the fields the ranks
 * compare and as a 31-bit hash that travels in band with the data each step already
 * sends: mixed into the LL lines' flag (eng_ll_flag) and in the upper half of a Simple
 * step's size word (eng_step_word). A receiver whose own signature differs never takes
 * the step: the collective stalls instead of completing with another collective's data,
 * and the stall's diagnosis (engine/sig.c) compares the fields every rank published at
 * submission and fails it with the difference named. Backend-neutral: the GPU daemon
 * computes the hash from the task's arguments (nothing more in its submission entry). */
#ifndef DFCCL_ENG_SIG_H
#define DFCCL_ENG_SIG_H

#include <stdint.h>

#include "eng_inline.h"
#include "eng_types.h"
#include "reduce.h"

DFCCL_INLINE int eng_coll_reduces(int coll)
{
    return coll == ENG_COLL_ALLREDUCE || coll == ENG_COLL_REDUCE || coll == ENG_COLL_REDUCE_SCATTER ||
           coll == ENG_COLL_SCAN || coll == ENG_COLL_EXSCAN || coll == ENG_COLL_REDUCE_SCATTERV;
}

DFCCL_INLINE int eng_coll_rooted(int coll)
{
    return coll == ENG_COLL_REDUCE || coll == ENG_COLL_BCAST || coll == ENG_COLL_GATHER ||
           coll == ENG_COLL_SCATTER || coll == ENG_COLL_GATHERV || coll == ENG_COLL_SCATTERV;
}

/* The v- and w-collectives: each rank's counts are its own (a root receives more than it
 * sends), so their count is no part of the signature. reduce_scatterv is tabled too, but
 * its counts are every rank's alike: as a reduction its count (the largest block's
 * bytes) is compared, and a hash of every count travels as its root. */
DFCCL_INLINE int eng_coll_tabled(int coll)
{
    return coll == ENG_COLL_GATHERV || coll == ENG_COLL_SCATTERV || coll == ENG_COLL_ALLGATHERV ||
           coll == ENG_COLL_ALLTOALLV || coll == ENG_COLL_ALLTOALLW || coll == ENG_COLL_REDUCE_SCATTERV;
}

/* The fields every rank must pass alike. A collective that only moves bytes compares
 * bytes, not (count, datatype): MPI's matching rule is on type signatures, and the
 * component may pack one rank's derived type into bytes where another passes a
 * predefined type; a reduction compares count, datatype and op. */
typedef struct {
    uint8_t coll, dtype, op;
    uint8_t epoch; /* eng_coll_args_t's: ranks that refused different calls are out of step */
    int32_t root;
    uint64_t count; /* elements (reductions), bytes (the others), 0 (tabled, barrier) */
} eng_sig_fields_t;

DFCCL_INLINE eng_sig_fields_t eng_sig_fields(const eng_coll_args_t *a)
{
    eng_sig_fields_t f;
    f.coll = a->coll;
    f.epoch = a->epoch;
    /* reduce_scatterv: the hash of its counts (api.c) */
    f.root = eng_coll_rooted(a->coll) || a->coll == ENG_COLL_REDUCE_SCATTERV ? a->root : 0;
    if (eng_coll_reduces(a->coll)) {
        f.dtype = a->dtype;
        f.op = a->op;
        f.count = a->count;
    } else {
        f.dtype = f.op = 0;
        f.count = eng_coll_tabled(a->coll) || a->coll == ENG_COLL_BARRIER
                      ? 0
                      : (uint64_t)a->count * eng_type_size(a->dtype);
    }
    return f;
}

/* The hash: never 0 (0 stands for "no signature": the unit tests' bare views).
 * Two different signatures share a hash with probability 2^-31. */
DFCCL_INLINE uint32_t eng_sig_hash(const eng_sig_fields_t *f)
{
    uint64_t x = (uint64_t)f->coll | (uint64_t)f->dtype << 8 | (uint64_t)f->op << 16 |
                 (uint64_t)f->epoch << 24 | (uint64_t)(uint32_t)f->root << 32;
    x ^= f->count * 0x9E3779B97F4A7C15ull;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return ((uint32_t)(x >> 32) & 0x7fffffffu) | 1u; /* 31 bits: eng_ll_flag drops bit 31 */
}

DFCCL_INLINE uint32_t eng_coll_sig(const eng_coll_args_t *a)
{
    const eng_sig_fields_t f = eng_sig_fields(a);
    return eng_sig_hash(&f);
}

/* A Simple step's size word: the bytes in the low half (a step is far below 4 GiB), in
 * the high half the sender's signature mixed with the connection's step number (its tag),
 * written by the store that already publishes the size, so the signature costs the sender
 * nothing. The step number makes a word left in the slot by an earlier step never pass
 * for the current one, so a receiver may read the word before it acquires `posted` (the
 * two reads overlap) and trust it when it matches, rereading it only when it does not.
 * A sender without a signature writes tag 0. */
DFCCL_INLINE uint32_t eng_step_tag(uint32_t sig, uint64_t step)
{
    return sig ? (sig ^ (uint32_t)step * 0x9E3779B1u) | 1u : 0u;
}

DFCCL_INLINE uint64_t eng_step_word(uint64_t bytes, uint32_t sig, uint64_t step)
{
    return bytes | (uint64_t)eng_step_tag(sig, step) << 32;
}

DFCCL_INLINE uint64_t eng_step_bytes(uint64_t word)
{
    return word & 0xffffffffull;
}

/* The word is step `step`'s, of signature sig (exactly: what a read that may predate the
 * post can trust), or the receiver has no signature. */
DFCCL_INLINE int eng_step_tagged(uint64_t word, uint32_t sig, uint64_t step)
{
    return !sig || (uint32_t)(word >> 32) == eng_step_tag(sig, step);
}

/* A word read after the step was posted is of the receiver's signature. A step the net
 * proxy landed carries its sender's tag too (ucx_transport/net_landing.h), so a step
 * without one passes only a receiver without a signature. */
DFCCL_INLINE int eng_step_sig_ok(uint64_t word, uint32_t sig, uint64_t step)
{
    return eng_step_tagged(word, sig, step);
}

#endif

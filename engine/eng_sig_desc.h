/* SPDX-License-Identifier: BSD-3-Clause */
/* The descriptions in a segment's header (eng_seg_hdr_t: its collectives' signatures, the
 * text of its latest refusal or abort) as one writer and any number of readers share
 * them, without a lock: a seqlock per entry. The writer zeroes the entry's number, writes
 * the fields, then publishes the number (release); a reader loads the number (acquire),
 * the fields, then the number again, and takes the entry only when both loads agree.
 * Host code: engine/sig.c (this rank's own header, and its peers' on shared memory), and
 * the net transport's proxy, which copies a header's descriptions into a message and a
 * message into its copy of the sender's header (ucx_transport/). */
#ifndef DFCCL_ENG_SIG_DESC_H
#define DFCCL_ENG_SIG_DESC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "eng_atomic.h"
#include "eng_inline.h"
#include "eng_types.h"

/* The header's text of a refusal or an abort: how long it may be. */
#define ENG_SIG_WHY_LEN sizeof(((eng_seg_hdr_t *)0)->why)

DFCCL_INLINE void eng_sig_entry_store(eng_sig_entry_t *e, const eng_sig_entry_t *v)
{
    dfccl_store_relaxed64(&e->seq1, 0);
    dfccl_fence_release(); /* the zero before the fields: a reader rereads seq1 after them */
    dfccl_store_relaxed64(&e->count, v->count);
    dfccl_store_relaxed64(&e->call, v->call);
    dfccl_store_relaxed(&e->root, v->root);
    dfccl_store_relaxed(&e->coll, v->coll);
    dfccl_store_relaxed(&e->dtype, v->dtype);
    dfccl_store_relaxed(&e->op, v->op);
    dfccl_store_relaxed(&e->refused, v->refused);
    dfccl_store_relaxed(&e->sig, v->sig);
    dfccl_store_relaxed(&e->refusals, v->refusals);
    dfccl_store_release64(&e->seq1, v->seq1);
}

/* A copy of the entry, with its number (out->seq1; 0 when it is being written). */
DFCCL_INLINE uint64_t eng_sig_entry_load(const eng_sig_entry_t *e, eng_sig_entry_t *out)
{
    const uint64_t s = dfccl_load_acquire64(&e->seq1);
    out->count = dfccl_load_relaxed64(&e->count);
    out->call = dfccl_load_relaxed64(&e->call);
    out->root = dfccl_load_relaxed(&e->root);
    out->coll = dfccl_load_relaxed(&e->coll);
    out->dtype = dfccl_load_relaxed(&e->dtype);
    out->op = dfccl_load_relaxed(&e->op);
    out->refused = dfccl_load_relaxed(&e->refused);
    out->sig = dfccl_load_relaxed(&e->sig);
    out->refusals = dfccl_load_relaxed(&e->refusals);
    dfccl_fence_acquire(); /* the fields before seq1 again: unchanged means not torn */
    out->seq1 = s && dfccl_load_relaxed64(&e->seq1) == s && out->coll < ENG_COLL_NUM ? s : 0;
    return out->seq1;
}

/* The text (why_seq1 tells which collective's refusal, or an abort: engine/sig.c). */
DFCCL_INLINE void eng_sig_why_store(eng_seg_hdr_t *h, uint64_t seq1, const char *msg)
{
    dfccl_store_relaxed64(&h->why_seq1, 0);
    dfccl_fence_release();
    snprintf(h->why, sizeof h->why, "%s", msg);
    dfccl_store_release64(&h->why_seq1, seq1);
}

/* A copy of the text into buf (ENG_SIG_WHY_LEN bytes), with its why_seq1; 0 when there
 * is none or it is being written. */
DFCCL_INLINE uint64_t eng_sig_why_load(const eng_seg_hdr_t *h, char *buf)
{
    const uint64_t s = dfccl_load_acquire64(&h->why_seq1);
    memcpy(buf, h->why, ENG_SIG_WHY_LEN);
    buf[ENG_SIG_WHY_LEN - 1] = 0;
    dfccl_fence_acquire();
    return s && dfccl_load_relaxed64(&h->why_seq1) == s ? s : 0;
}

#endif

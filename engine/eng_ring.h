/* SPDX-License-Identifier: BSD-3-Clause */
/* The submission ring: fixed-size stamped entries, free-running 64-bit head and tail,
 * power-of-two size, `& mask` indexing, a wrap-safe full test (liburing discipline).
 * Producers (host threads) serialize on a lock, fill an entry, then release-store its
 * stamp = position + 1; the one consumer (the daemon) acquire-loads the stamp of the
 * entry at head, so a complete entry is recognized without reading the tail, then
 * release-stores head so producers may reuse the entry. */
#ifndef DFCCL_ENG_RING_H
#define DFCCL_ENG_RING_H

#include "eng_atomic.h"
#include "eng_types.h"

typedef enum { ENG_SQ_COLL = 1, ENG_SQ_DESTROY = 2 } eng_sq_kind_t;

struct dfccl_comm;
struct dfccl_request;

typedef struct {
    uint64_t stamp; /* position + 1 once the entry is complete */
    uint32_t kind;
    uint32_t pad;
    uint64_t seq;
    struct dfccl_comm *comm;
    struct dfccl_request *req;
    eng_coll_args_t args;
} eng_sq_entry_t;

typedef struct {
    eng_sq_entry_t *entries;
    uint64_t mask;
    uint64_t head; /* consumer position; written by the daemon only (release) */
    char pad[DFCCL_CACHELINE - sizeof(uint64_t)];
    uint64_t tail; /* producer position; under the producers' lock */
} eng_ring_t;

DFCCL_INLINE uint64_t eng_ring_space_left(const eng_ring_t *r)
{
    /* acquire: the consumer has finished copying the entries before head moved */
    return r->mask + 1 - (r->tail - dfccl_load_acquire64(&r->head));
}

/* Producer: the next entry to fill, or NULL when the ring is full (never blocks). */
DFCCL_INLINE eng_sq_entry_t *eng_ring_get_entry(eng_ring_t *r)
{
    if (eng_ring_space_left(r) == 0)
        return NULL;
    return &r->entries[r->tail & r->mask];
}

/* Producer: publish the entry returned by eng_ring_get_entry. */
DFCCL_INLINE void eng_ring_commit(eng_ring_t *r, eng_sq_entry_t *e)
{
    r->tail++;
    dfccl_store_release64(&e->stamp, r->tail); /* pairs with the acquire in peek */
}

/* Consumer: the entry at head if it is complete, else NULL. */
DFCCL_INLINE eng_sq_entry_t *eng_ring_peek(eng_ring_t *r)
{
    eng_sq_entry_t *e = &r->entries[r->head & r->mask];
    return dfccl_load_acquire64(&e->stamp) == r->head + 1 ? e : NULL;
}

/* Consumer: the entry returned by peek has been copied out. */
DFCCL_INLINE void eng_ring_advance(eng_ring_t *r)
{
    dfccl_store_release64(&r->head, r->head + 1);
}

#endif

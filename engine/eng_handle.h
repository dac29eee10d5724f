/* SPDX-License-Identifier: BSD-3-Clause */
/* Handles of the public objects (communicators, requests): what the caller holds is a
 * word naming a slot of a table and the generation the slot had when it was handed
 * out, never an address. Slots live in chunks that are never freed, so a stale copy, a
 * handle waited on twice or a forged word is looked up and rejected, never
 * dereferenced. Generations come from one process-wide 40-bit counter: a handle of one
 * table never names a live slot of another, and a slot reused after its object went
 * carries a new one (the same one again only after 2^40 handles). */
#ifndef DFCCL_ENG_HANDLE_H
#define DFCCL_ENG_HANDLE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define ENG_HANDLE_IDX_BITS   24 /* at most 16 Mi live objects of a kind */
#define ENG_HANDLE_GEN_BITS   40
#define ENG_HANDLE_CHUNK_BITS 10
#define ENG_HANDLE_CHUNKS     (1u << (ENG_HANDLE_IDX_BITS - ENG_HANDLE_CHUNK_BITS))

/* The first member of every element of a table. */
typedef struct eng_hslot {
    uint64_t gen;       /* the generation a live slot's handle carries; 0: free */
    uint32_t idx;       /* its index */
    uint32_t next_free; /* free list: index + 1 of the next free slot, 0: none */
} eng_hslot_t;

typedef struct eng_htab {
    size_t elem; /* bytes of one element, an eng_hslot_t first */
    pthread_mutex_t lock;
    uint32_t used;      /* slots handed out at least once */
    uint32_t free_head; /* index + 1 of a free slot, 0: none */
    char *chunks[ENG_HANDLE_CHUNKS];
} eng_htab_t;

#define ENG_HTAB_INITIALIZER(_type)                                                                          \
    {                                                                                                        \
        .elem = sizeof(_type), .lock = PTHREAD_MUTEX_INITIALIZER                                             \
    }

/* A free slot, its element zeroed but for the header, and the handle naming it; NULL
 * when out of memory or slots. */
void *eng_handle_alloc(eng_htab_t *t, uint64_t *handle_p);
/* The live element a handle names, or NULL (0, stale, forged, another table's). Lock-free:
 * the caller must not race it with a free of the same handle (a usage error anyway). */
void *eng_handle_get(eng_htab_t *t, uint64_t handle);
/* The element back to the table: its handle, and every copy of it, names nothing now. */
void eng_handle_free(eng_htab_t *t, void *elem);

#endif

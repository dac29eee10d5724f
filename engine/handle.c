/* SPDX-License-Identifier: BSD-3-Clause */
/* Generation-tagged handles (eng_handle.h). */
#include <stdlib.h>
#include <string.h>

#include "eng_atomic.h"
#include "eng_handle.h"

_Static_assert(sizeof(uintptr_t) == 8, "a handle is a 64-bit word");

#define IDX_MASK   ((1ull << ENG_HANDLE_IDX_BITS) - 1)
#define GEN_MASK   ((1ull << ENG_HANDLE_GEN_BITS) - 1)
#define CHUNK_MASK ((1u << ENG_HANDLE_CHUNK_BITS) - 1)

static uint64_t gen_counter;

/* the next generation, never 0 (a handle never equals a small integer or NULL) */
static uint64_t next_gen(void)
{
    uint64_t g;
    do
        g = dfccl_add_fetch_relaxed(&gen_counter, 1) & GEN_MASK;
    while (g == 0);
    return g;
}

static eng_hslot_t *slot_at(char *chunk, const eng_htab_t *t, uint32_t idx)
{
    return (eng_hslot_t *)(chunk + (size_t)(idx & CHUNK_MASK) * t->elem);
}

void *eng_handle_alloc(eng_htab_t *t, uint64_t *handle_p)
{
    eng_hslot_t *s = NULL;
    pthread_mutex_lock(&t->lock);
    if (t->free_head) {
        const uint32_t idx = t->free_head - 1;
        s = slot_at(t->chunks[idx >> ENG_HANDLE_CHUNK_BITS], t, idx);
        t->free_head = s->next_free;
    } else if (t->used <= IDX_MASK) {
        const uint32_t idx = t->used, c = idx >> ENG_HANDLE_CHUNK_BITS;
        if (!t->chunks[c]) {
            char *chunk = calloc((size_t)1 << ENG_HANDLE_CHUNK_BITS, t->elem);
            if (!chunk)
                goto out;
            /* release: a lock-free reader that finds the chunk finds it zeroed (gen 0) */
            dfccl_store_release(&t->chunks[c], chunk);
        }
        s = slot_at(t->chunks[c], t, idx);
        s->idx = idx;
        t->used++;
    }
    if (s) {
        const uint32_t idx = s->idx;
        memset(s, 0, t->elem);
        s->idx = idx;
        const uint64_t g = next_gen();
        dfccl_store_release(&s->gen, g);
        *handle_p = g << ENG_HANDLE_IDX_BITS | idx;
    }
out:
    pthread_mutex_unlock(&t->lock);
    return s;
}

void *eng_handle_get(eng_htab_t *t, uint64_t handle)
{
    const uint64_t gen = handle >> ENG_HANDLE_IDX_BITS;
    const uint32_t idx = (uint32_t)(handle & IDX_MASK);
    if (!gen)
        return NULL;
    char *chunk = dfccl_load_acquire(&t->chunks[idx >> ENG_HANDLE_CHUNK_BITS]);
    if (!chunk)
        return NULL;
    eng_hslot_t *s = slot_at(chunk, t, idx);
    /* acquire: pairs with the release of the generation after the slot was set up */
    return dfccl_load_acquire(&s->gen) == gen ? s : NULL;
}

void eng_handle_free(eng_htab_t *t, void *elem)
{
    eng_hslot_t *s = elem;
    pthread_mutex_lock(&t->lock);
    dfccl_store_release(&s->gen, 0);
    s->next_free = t->free_head;
    t->free_head = s->idx + 1;
    pthread_mutex_unlock(&t->lock);
}

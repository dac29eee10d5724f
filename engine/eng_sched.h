/* SPDX-License-Identifier: BSD-3-Clause */
/* Scheduler decisions, kept pure so both daemons share them and unit tests can drive
 * them: how long a task may wait at a peer before it is preempted, and how that budget
 * adapts. Thresholds are time (ns), so they mean the same on every CPU and GPU. */
#ifndef DFCCL_SCHED_H
#define DFCCL_SCHED_H

#include <stdint.h>

#include "eng_inline.h"

typedef struct {
    int preempt;
    uint64_t base_ns, max_ns;
    uint32_t growth, head_factor;
} sched_params_t;

#define SCHED_FOREVER UINT64_MAX

/* Budget of one scheduling attempt: the task's threshold, times head_factor for the
 * head of the task list (the oldest runnable task gets extra attempts, so the whole
 * job keeps moving toward it); unbounded when preemption is off. */
DFCCL_INLINE uint64_t sched_budget(const sched_params_t *p, uint64_t threshold_ns, int is_head)
{
    if (!p->preempt)
        return SCHED_FOREVER;
    const uint64_t f = is_head ? p->head_factor : 1u;
    /* no division on this path (the GPU's is slow): head_factor <= 1024 (2^10), so
     * only thresholds beyond any real wait could overflow */
    return threshold_ns >= (SCHED_FOREVER >> 10) ? SCHED_FOREVER : threshold_ns * f;
}

/* A wait was satisfied after waited_ns: the peers are active on this collective, so raise
 * its threshold toward growth * waited_ns (never down, capped). Every rank does this on
 * its own; ranks whose peers are all present converge on the same collective (gang
 * scheduling without a message), while one whose peers are elsewhere keeps a short
 * threshold and yields quickly. */
DFCCL_INLINE uint64_t sched_adapt(const sched_params_t *p, uint64_t threshold_ns, uint64_t waited_ns)
{
    uint64_t want = waited_ns * p->growth;
    if (want > p->max_ns)
        want = p->max_ns;
    return want > threshold_ns ? want : threshold_ns;
}

/* A finished task's successor starts from the base threshold. */
DFCCL_INLINE uint64_t sched_reset(const sched_params_t *p)
{
    return p->base_ns;
}

/* Instance seq may use its slot once instance seq-K of the same communicator is done:
 * waits then only point from later to earlier instances of one communicator, so they
 * can never form a cycle. slot_next is the sequence number the slot admits next. */
DFCCL_INLINE int sched_slot_free(uint64_t slot_next, uint64_t seq)
{
    return slot_next == seq;
}

#endif

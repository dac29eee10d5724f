/* SPDX-License-Identifier: BSD-3-Clause */
/* Doorbells: how a CPU daemon thread that has waited long enough blocks instead of
 * spinning, and how the peer whose step or credit it waits for wakes it. A blocked
 * thread gets a core back as soon as it is woken (the kernel favours a thread that
 * slept); one that spins or yields waits out the time slice of whatever busy process
 * holds the core, which cost an 8-byte allreduce milliseconds with more busy threads
 * than cores. The word is a futex in the owner's shared segment (eng_seg_hdr_t), so
 * every process that maps the segment can ring it.
 *
 * Dekker between the sleeper and the ringer: the sleeper counts itself in `sleepers`,
 * fences, then looks at its connections once more; the ringer publishes its step,
 * fences, then looks at `sleepers`. At least one of the two sees the other, so a wake
 * is never lost; a ring that finds nobody asleep costs a fence and a load. Sleeps are
 * bounded anyway (the caller's timeout), so work that rings no bell (an abort, a
 * dead peer) is still seen. */
#ifndef DFCCL_ENG_BELL_H
#define DFCCL_ENG_BELL_H

#include <limits.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "eng_atomic.h"
#include "eng_types.h"

/* Wake every thread blocked on b (unconditionally). */
static inline void eng_bell_kick(eng_bell_t *b)
{
    dfccl_fetch_add_seq_cst(&b->seq, 1);
    /* not FUTEX_PRIVATE: the word is in memory shared with other processes */
    syscall(SYS_futex, &b->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* After publishing a step or a credit to b's owner: wake it if it sleeps. NULL: the
 * peer has no bell here (a net peer: its proxy rings; the GPU). */
static inline void eng_bell_ring(eng_bell_t *b)
{
    if (!b)
        return;
    dfccl_fence_seq_cst(); /* the publication before the look at sleepers */
    if (dfccl_load_relaxed(&b->sleepers))
        eng_bell_kick(b);
}

/* Sleeper, step 1: returns the value to block on; then look at the connections once
 * more, and call eng_bell_block only if nothing moved. */
static inline uint32_t eng_bell_enter(eng_bell_t *b)
{
    const uint32_t seq = dfccl_load_acquire(&b->seq);
    dfccl_fetch_add_seq_cst(&b->sleepers, 1); /* and fence: before the last look */
    return seq;
}

/* Sleeper, step 2: block until a ring after eng_bell_enter, or timeout_ns. */
static inline void eng_bell_block(eng_bell_t *b, uint32_t seq, uint64_t timeout_ns)
{
    struct timespec ts = {.tv_sec = (time_t)(timeout_ns / 1000000000ull),
                          .tv_nsec = (long)(timeout_ns % 1000000000ull)};
    syscall(SYS_futex, &b->seq, FUTEX_WAIT, seq, &ts, NULL, 0);
}

/* Sleeper, step 3 (whether or not it blocked). */
static inline void eng_bell_leave(eng_bell_t *b)
{
    dfccl_fetch_sub_seq_cst(&b->sleepers, 1);
}

#endif

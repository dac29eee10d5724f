/* SPDX-License-Identifier: BSD-3-Clause */
/* How the CPU daemon's threads and the threads waiting on it behave when the cores are
 * contended (engine/cpu_wait.c). */
#ifndef DFCCL_ENG_CPU_WAIT_H
#define DFCCL_ENG_CPU_WAIT_H

#include <stdint.h>

#include "eng_clock.h"

/* One yield of a waiting loop. 1: block instead of spinning on. That is when the cores
 * are already known contended (then it does not yield), or when this yield took long
 * enough that a thread which does not yield ran meanwhile (a busy process), which marks
 * the cores contended for a while. */
int eng_yield(void);

/* 1 while a recent eng_yield (of any thread) found the core taken: a waiting thread
 * then blocks at once, since a spin or a yield would only lose the core for a slice. */
int eng_cores_contended(void);

/* Give the calling thread a short scheduler slice (Linux 6.12 and later take
 * sched_runtime for ordinary threads; older kernels ignore it), so that when it is woken
 * it preempts a busy thread at once instead of at the next tick. Returns the slice it
 * had (ns; 0 when it could not be read), for eng_thread_slice_restore. */
uint64_t eng_thread_slice_short(void);
void eng_thread_slice_restore(uint64_t old_ns);

#endif

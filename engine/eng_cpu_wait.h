/* SPDX-License-Identifier: BSD-3-Clause */
/* How the CPU daemon's threads and the threads waiting on it behave when the cores are
 * contended (engine/cpu_wait.c). */
#ifndef DFCCL_ENG_CPU_WAIT_H
#define DFCCL_ENG_CPU_WAIT_H

#include <stdint.h>

/* 1 when more threads are runnable on the machine than it has cores online (looked up
 * at most every ENG_CONTENDED_REFRESH_NS; any thread may ask). A waiting thread then
 * blocks at once: a spin or a yield would only lose the core to a busy process. */
int eng_cores_contended(void);

/* Give the calling thread a short scheduler slice (Linux 6.12 and later take
 * sched_runtime for ordinary threads; older kernels ignore it), so that when it is woken
 * it preempts a busy thread at once instead of at the next tick. Returns the slice it
 * had (ns; 0 when it could not be read), for eng_thread_slice_restore. */
uint64_t eng_thread_slice_short(void);
void eng_thread_slice_restore(uint64_t old_ns);

#endif

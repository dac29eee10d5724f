/* SPDX-License-Identifier: BSD-3-Clause */
/* Waiting on contended cores. With more runnable threads than cores (ranks beside busy
 * processes, or more ranks than cores), a thread that spins or yields while it waits
 * for a peer keeps or gives away a time slice, and the peer it waits for runs a slice
 * later: milliseconds for an 8-byte collective. So the daemon's threads and the callers
 * waiting on them block instead, on a doorbell or a condition variable that the event
 * they wait for signals, and they carry a short scheduler slice, so that the kernel
 * (EEVDF) lets a woken one preempt the busy thread at once rather than at its next
 * tick. Measured in bench/RESULTS.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "eng_atomic.h"
#include "eng_cpu_wait.h"

uint64_t eng_now_ns(void);

#define ENG_CONTENDED_REFRESH_NS 10000000ull /* 10 ms */
#define ENG_SHORT_SLICE_NS       100000ull   /* the shortest slice Linux accepts */

static uint64_t probe_at; /* when the machine was last looked at (atomic) */
static int contended_now; /* what it showed (atomic) */

/* Runnable threads on the machine now: the fourth field of /proc/loadavg, "R/T". */
static long runnable_threads(void)
{
    FILE *f = fopen("/proc/loadavg", "re");
    if (!f)
        return -1;
    double l1, l5, l15;
    long running = -1, total;
    if (fscanf(f, "%lf %lf %lf %ld/%ld", &l1, &l5, &l15, &running, &total) != 5)
        running = -1;
    fclose(f);
    return running;
}

int eng_cores_contended(void)
{
    const uint64_t now = eng_now_ns();
    uint64_t at = __atomic_load_n(&probe_at, __ATOMIC_RELAXED);
    if (now - at >= ENG_CONTENDED_REFRESH_NS &&
        __atomic_compare_exchange_n(&probe_at, &at, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        /* one thread looks; the others use the last answer */
        const long cores = sysconf(_SC_NPROCESSORS_ONLN), r = runnable_threads();
        __atomic_store_n(&contended_now, r > 0 && cores > 0 && r > cores, __ATOMIC_RELAXED);
    }
    return __atomic_load_n(&contended_now, __ATOMIC_RELAXED);
}

/* struct sched_attr of sched_setattr(2), declared here: the kernel's header clashes
 * with the C library's struct sched_param */
typedef struct {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
    uint32_t util_min, util_max;
} eng_sched_attr_t;

uint64_t eng_thread_slice_short(void)
{
#if defined(SYS_sched_getattr) && defined(SYS_sched_setattr)
    eng_sched_attr_t a;
    memset(&a, 0, sizeof a);
    if (syscall(SYS_sched_getattr, 0, &a, (unsigned)sizeof a, 0) || a.policy != 0 /* SCHED_OTHER */)
        return 0; /* a real-time or batch thread keeps what it has */
    const uint64_t old = a.runtime;
    if (old && old <= ENG_SHORT_SLICE_NS)
        return old;
    a.size = sizeof a;
    a.runtime = ENG_SHORT_SLICE_NS;
    a.flags = 0;
    if (syscall(SYS_sched_setattr, 0, &a, 0))
        return 0;
    return old ? old : 1; /* 1: the kernel's default (runtime 0) to restore */
#else
    return 0;
#endif
}

void eng_thread_slice_restore(uint64_t old_ns)
{
#if defined(SYS_sched_getattr) && defined(SYS_sched_setattr)
    if (!old_ns || old_ns == ENG_SHORT_SLICE_NS)
        return;
    eng_sched_attr_t a;
    memset(&a, 0, sizeof a);
    if (syscall(SYS_sched_getattr, 0, &a, (unsigned)sizeof a, 0) || a.policy != 0)
        return;
    a.size = sizeof a;
    a.runtime = old_ns == 1 ? 0 : old_ns;
    a.flags = 0;
    (void)syscall(SYS_sched_setattr, 0, &a, 0);
#else
    (void)old_ns;
#endif
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* Waiting on contended cores. With more runnable threads than cores (ranks beside busy
 * processes, or more ranks than cores), a thread that spins or yields while it waits
 * for a peer keeps or gives away a time slice, and the peer it waits for runs a slice
 * later: milliseconds for an 8-byte collective. So the daemon's threads and the callers
 * waiting on them block instead, on a doorbell or a condition variable that the event
 * they wait for signals, and they carry a short scheduler slice, so that the kernel
 * (EEVDF) lets a woken one preempt the busy thread at once rather than at its next
 * tick. Measured in bench/RESULTS.md.
 *
 * What tells contention is a yield that takes long: among threads that wait and yield
 * (dfccl's own, more ranks than cores) a yield comes back within microseconds, and
 * yielding is then the fastest hand-over, so those keep spinning; a thread that does
 * not yield holds the core for its whole slice. Counting runnable threads instead
 * (/proc/loadavg) took dfccl's own spinning threads for contention and made an idle
 * machine's 8-byte allreduce 5x slower. */
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "eng_atomic.h"
#include "eng_cpu_wait.h"

uint64_t eng_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define ENG_YIELD_TAKEN_NS 2000000ull   /* a yield this long: a thread that does not yield ran */
#define ENG_CONTENDED_NS   100000000ull /* how long one such yield marks the cores contended */
#define ENG_SHORT_SLICE_NS 100000ull    /* the shortest slice Linux accepts */

static uint64_t taken_at; /* when a yield last found the core taken (atomic; 0: never) */

int eng_cores_contended(void)
{
    const uint64_t at = dfccl_load_relaxed64(&taken_at);
    return at && eng_now_ns() - at < ENG_CONTENDED_NS;
}

int eng_yield(void)
{
    if (eng_cores_contended())
        return 1; /* a yield would lose the core for a slice */
    const uint64_t t0 = eng_now_ns();
    sched_yield();
    const uint64_t t1 = eng_now_ns();
    if (t1 - t0 < ENG_YIELD_TAKEN_NS)
        return 0;
    dfccl_store_relaxed64(&taken_at, t1);
    return 1;
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

/* Set the calling thread's slice to ns (0: the kernel's default) if it is an ordinary
 * (SCHED_OTHER) thread; its slice before in *old. 0 on success; a real-time or batch
 * thread keeps what it has. */
static int slice_set(uint64_t ns, uint64_t *old)
{
#if defined(SYS_sched_getattr) && defined(SYS_sched_setattr)
    eng_sched_attr_t a;
    memset(&a, 0, sizeof a);
    if (syscall(SYS_sched_getattr, 0, &a, (unsigned)sizeof a, 0) || a.policy != 0 /* SCHED_OTHER */)
        return -1;
    *old = a.runtime;
    if (a.runtime == ns)
        return 0;
    a.size = sizeof a;
    a.runtime = ns;
    a.flags = 0;
    return syscall(SYS_sched_setattr, 0, &a, 0) ? -1 : 0;
#else
    (void)ns, (void)old;
    return -1;
#endif
}

uint64_t eng_thread_slice_short(void)
{
    uint64_t old;
    if (slice_set(ENG_SHORT_SLICE_NS, &old))
        return 0;
    return old ? old : 1; /* 1: the kernel's default (runtime 0) to restore */
}

void eng_thread_slice_restore(uint64_t old_ns)
{
    uint64_t cur;
    if (old_ns && old_ns != ENG_SHORT_SLICE_NS)
        (void)slice_set(old_ns == 1 ? 0 : old_ns, &cur);
}

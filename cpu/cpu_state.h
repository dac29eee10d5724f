/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU daemon's own state, shared by its files (nothing outside cpu/ includes it).
 * They call one way, each only the ones below it: the daemon (cpu_daemon.c: life cycle,
 * destroy, the engine's eng_cpu table) over its scheduler (cpu_sched.c: the workers'
 * passes, waits and sleeps) over its diagnostics (cpu_diag.c: stall reports, dead
 * peers, timeouts) over its intake (cpu_intake.c: submissions, task lists, inboxes,
 * completions, and the daemon's state cpu_d).
 *
 * The CPU daemon: DFCCL_CPU_THREADS host threads (workers) per process run every
 * communicator's collectives through the shared scheduler and algorithms. Worker w runs
 * channel c of every collective for c mod workers = w, as block c of the GPU daemon
 * runs channel c: each worker keeps its own task list, runs it in submission order,
 * preempts a task that waits longer than its threshold at a peer (its context is
 * already saved in the task: the algorithms keep it there), and sleeps when there is
 * nothing to do. Worker 0 takes the submissions and hands each task to the workers
 * that own one of its channels; the last worker done with a task posts its completion.
 * Channels of one collective share nothing but the slot, so workers need no lock
 * between them, and waits stay deadlock-free for the GPU daemon's reason: each worker
 * is a scheduler of its own over disjoint connections. */
#ifndef DFCCL_CPU_STATE_H
#define DFCCL_CPU_STATE_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "eng_bell.h"
#include "eng_comm.h"
#include "eng_cpu.h"
#include "eng_cpu_wait.h"
#include "eng_log.h"
#include "eng_trace.h"
#include "algo.h"

#define ENG_RING_ENTRIES       1024u
#define ENG_SPINS_BEFORE_YIELD 64u
/* Waiting, on a machine whose cores may be taken (more busy threads than cores): a
 * thread spins, then yields, and blocks (a doorbell or a condition variable) once a
 * yield shows that another thread wanted the core, or after the spin time. A blocked
 * thread is woken by the event it waits for and preempts a busy process at once; a
 * yielding one waits out that process's time slice (milliseconds). */
#define ENG_SPIN_NS 2000000ull /* spin and yield at most this long, then block */
/* longest doorbell sleep: what rings no bell (an abort, a dead peer, a task of another
 * communicator than the one slept on) is seen this late at worst */
#define ENG_BLOCK_NS 1000000ull
/* an idle worker's sleep while the cores are contended: a submission that deferred its
 * wake (cpu_daemon_submit) and that nobody waits for or tests runs this late at worst */
#define ENG_IDLE_CONTENDED_NS 10000000ull

typedef struct {
    uint32_t id;
    pthread_t thread;
    /* the right to run this worker: its thread holds it except while it sleeps idle,
     * and a caller waiting in cpu_daemon_wait may take it then (help) */
    pthread_mutex_t run;
    int helping; /* a caller holds `run` (written by the holder) */
    /* inbox (workers > 0; worker 0 appends) and sleep, under lock */
    pthread_mutex_t lock;
    pthread_cond_t cv;
    uint32_t sleeping;     /* worker 0: read by submitters without the lock */
    eng_bell_t *bell_wait; /* the doorbell it blocks on (written under lock; worker 0's
                              read by submitters without it) */
    eng_wnode_t *in_head, *in_tail;
    int handback;  /* a helper left tasks in the list: the thread resumes them */
    int contended; /* a yield of its own found the core taken: block, don't spin */
    int sliced;    /* it runs with a short scheduler slice (since it first blocked) */
    /* this worker's own */
    eng_wnode_t *head, *tail;
} eng_worker_t;

typedef struct {
    pthread_mutex_t life_lock; /* refcount, thread start and join */
    int refcount;
    uint32_t nworkers; /* running threads; fixed while refcount > 0 */
    int stop;
    /* submission ring: many producers under sq_lock, worker 0 consumes */
    pthread_mutex_t sq_lock;
    eng_ring_t ring;
    /* hosts sleeping in cpu_daemon_wait */
    pthread_mutex_t done_lock;
    pthread_cond_t done_cv;
    uint32_t waiters;
    sched_params_t sp;
    eng_worker_t w[ENG_MAX_WORKERS];
} eng_daemon_t;

extern eng_daemon_t cpu_d;

/* A communicator's destroy marker: one node per worker, pushed in submission order, and
 * the workers yet to reach theirs. It lives on the stack of cpu_daemon_destroy, which
 * waits for req, so the communicator carries nothing of the CPU daemon's. */
typedef struct {
    eng_wnode_t node[ENG_MAX_WORKERS]; /* first: node w's marker is (node - w) */
    uint32_t left;
    uint64_t first_failed; /* the lowest sequence number failed here (atomic) */
    struct dfccl_request req;
} destroy_mark_t;

static inline void cpu_abs_deadline(struct timespec *ts, uint64_t ns)
{
    clock_gettime(CLOCK_REALTIME, ts);
    uint64_t t = (uint64_t)ts->tv_nsec + ns;
    ts->tv_sec += (time_t)(t / 1000000000ull);
    ts->tv_nsec = (long)(t % 1000000000ull);
}

static inline void cpu_stat_add(uint64_t *p, uint64_t v)
{
    dfccl_fetch_add_relaxed(p, v); /* several workers count into one comm */
}

/* Why c's collectives fail, or 0 (written by a worker's timeout or the net proxy). */
static inline dfcclResult_t cpu_comm_aborted(struct dfccl_comm *c)
{
    return dfccl_load_acquire(&c->aborted);
}

/* The task's result becomes res unless a worker recorded a failure first. */
static inline void cpu_task_fail(eng_task_t *t, dfcclResult_t res)
{
    int32_t ok = dfcclSuccess;
    dfccl_cas_relaxed(&t->result, &ok, (int32_t)res);
}

/* ---- cpu_intake.c ---- */
/* Complete req with res, waking the callers asleep in cpu_daemon_wait. */
void cpu_post_completion(struct dfccl_request *req, dfcclResult_t res);
/* Worker W is done with its channels of n's task (res: how they ended). */
void cpu_part_finish(eng_worker_t *W, eng_wnode_t *n, dfcclResult_t res);
/* Wake W from its idle sleep or a doorbell (under W's lock). */
void cpu_wake_locked(eng_worker_t *W);
void cpu_worker_wake(eng_worker_t *W);
/* Worker W > 0: move its inbox into its list, in order. */
void cpu_inbox_drain(eng_worker_t *W);
/* Worker 0: move every complete submission into the task lists; returns how many. */
int cpu_take_submissions(void);
dfcclResult_t cpu_daemon_submit(uint32_t kind, struct dfccl_comm *comm, const eng_coll_args_t *args,
                                struct dfccl_request *req);
void cpu_daemon_kick(struct dfccl_request *req);

/* ---- cpu_diag.c ---- */
/* DFCCL_TRACE: worker W ran t from t0 (eng_now_ns) until now, with this outcome. */
void cpu_trace_run(const eng_worker_t *W, const eng_task_t *t, uint64_t t0, int outcome);
/* Stall report, dead peer and timeout (the run began at run_t0, for the trace). Returns 1
 * when this worker's part was failed. */
int cpu_check_stall(eng_worker_t *W, eng_wnode_t *n, uint64_t now, uint64_t run_t0);

/* ---- cpu_sched.c ---- */
/* A worker thread's life: take input, run passes, block or sleep, until stopped. */
void *cpu_worker_main(void *arg);
void cpu_daemon_wait(struct dfccl_request *req);

#endif

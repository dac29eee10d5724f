/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU daemon: DFCCL_CPU_THREADS host threads (workers) per process run every
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
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eng_bell.h"
#include "eng_comm.h"
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
 * wake (eng_daemon_submit) and that nobody waits for or tests runs this late at worst */
#define ENG_IDLE_CONTENDED_NS 10000000ull

typedef struct {
    uint32_t id;
    pthread_t thread;
    /* the right to run this worker: its thread holds it except while it sleeps idle,
     * and a caller waiting in eng_daemon_wait may take it then (help) */
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
    /* hosts sleeping in eng_daemon_wait */
    pthread_mutex_t done_lock;
    pthread_cond_t done_cv;
    uint32_t waiters;
    sched_params_t sp;
    eng_worker_t w[ENG_MAX_WORKERS];
} eng_daemon_t;

static eng_daemon_t D = {
    .life_lock = PTHREAD_MUTEX_INITIALIZER,
    .sq_lock = PTHREAD_MUTEX_INITIALIZER,
    .done_lock = PTHREAD_MUTEX_INITIALIZER,
    .done_cv = PTHREAD_COND_INITIALIZER,
};

static void abs_deadline(struct timespec *ts, uint64_t ns)
{
    clock_gettime(CLOCK_REALTIME, ts);
    uint64_t t = (uint64_t)ts->tv_nsec + ns;
    ts->tv_sec += (time_t)(t / 1000000000ull);
    ts->tv_nsec = (long)(t % 1000000000ull);
}

static void stat_add(uint64_t *p, uint64_t v)
{
    dfccl_fetch_add_relaxed(p, v); /* several workers count into one comm */
}

/* ---- completions --------------------------------------------------------------------- */

static void post_completion(struct dfccl_request *req, dfcclResult_t res)
{
    req->result = res;
    /* release: results (written by this thread, or by workers whose last access to the
     * task was an acq_rel decrement this thread observed) are visible before the word
     * flips; the host's acquire in dfcclTest/eng_daemon_wait is the counterpart */
    dfccl_store_release32(&req->done, 1);
    dfccl_fence_seq_cst(); /* order the store before reading `waiters` (Dekker with wait) */
    if (DFCCL_READ_ONCE(D.waiters)) {
        pthread_mutex_lock(&D.done_lock);
        pthread_cond_broadcast(&D.done_cv);
        pthread_mutex_unlock(&D.done_lock);
    }
}

/* ---- task lists ------------------------------------------------------------------------ */

static void list_append(eng_worker_t *W, eng_wnode_t *n)
{
    n->next = NULL;
    n->prev = W->tail;
    if (W->tail)
        W->tail->next = n;
    else
        W->head = n;
    W->tail = n;
}

static void list_remove(eng_worker_t *W, eng_wnode_t *n)
{
    if (n->prev)
        n->prev->next = n->next;
    else
        W->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        W->tail = n->prev;
}

/* Every worker is done with t: free its slot for the next instance, post. */
static void task_done(eng_task_t *t)
{
    struct dfccl_comm *c = t->comm;
    dfccl_store_release64(&c->slot_next[t->slot], t->seq + c->slots);
    eng_bell_ring(&eng_seg_hdr(c, c->rank)->bell); /* the slot's next task may wait on it */
    stat_add(&c->stats.completed, 1);
    if (eng_trace_on) {
        const eng_trace_key_t k = eng_trace_key(c, t->seq, t->args.coll, 0);
        eng_trace_complete(&k, dfccl_load_acquire(&t->result));
    }
    post_completion(t->req, (dfcclResult_t)dfccl_load_acquire(&t->result));
    free(t);
}

/* Why c's collectives fail, or 0 (written by a worker's timeout or the net proxy). */
static dfcclResult_t comm_aborted(struct dfccl_comm *c)
{
    return dfccl_load_acquire(&c->aborted);
}

/* The task's result becomes res unless a worker recorded a failure first. */
static void task_fail(eng_task_t *t, dfcclResult_t res)
{
    int32_t ok = dfcclSuccess;
    dfccl_cas_relaxed(&t->result, &ok, (int32_t)res);
}

/* Worker W is done with its channels of n's task (res: how they ended). */
static void part_finish(eng_worker_t *W, eng_wnode_t *n, dfcclResult_t res)
{
    eng_task_t *t = n->task;
    list_remove(W, n);
    if (res != dfcclSuccess)
        task_fail(t, res);
    if (dfccl_sub_fetch_acq_rel(&t->workers_left, 1) == 0)
        task_done(t);
}

/* A communicator's destroy marker: one node per worker, pushed in submission order, and
 * the workers yet to reach theirs. It lives on the stack of eng_daemon_destroy, which
 * waits for req, so the communicator carries nothing of the CPU daemon's. */
typedef struct {
    eng_wnode_t node[ENG_MAX_WORKERS]; /* first: node w's marker is (node - w) */
    uint32_t left;
    uint64_t first_failed; /* the lowest sequence number failed here (atomic) */
    struct dfccl_request req;
} destroy_mark_t;

/* Worker W has reached c's destroy marker m: every task of c it still holds is failed
 * (it holds all it will ever get: inboxes keep submission order); the last worker
 * to get here completes the destroy, after which c may be freed. */
static void destroy_seen(eng_worker_t *W, struct dfccl_comm *c, destroy_mark_t *m)
{
    for (eng_wnode_t *n = W->head, *nx; n; n = nx) {
        nx = n->next;
        if (n->comm != c)
            continue;
        /* what the peers may still wait for starts here (read before the part can free t) */
        const uint64_t seq = n->task->seq;
        uint64_t lo = dfccl_load_relaxed(&m->first_failed);
        while (seq < lo && !dfccl_cas_relaxed(&m->first_failed, &lo, seq))
            ;
        part_finish(W, n, dfcclCommAborted);
    }
    if (dfccl_sub_fetch_acq_rel(&m->left, 1) == 0)
        post_completion(&m->req, dfcclSuccess); /* m is gone once this lands */
}

/* Wake W from idle_sleep or worker_block (a no-op when it is awake: it re-checks
 * before sleeping). Under W's lock, a doorbell it blocks on is still mapped: W leaves
 * it before it takes any input, a destroy marker included. */
static void wake_locked(eng_worker_t *W)
{
    pthread_cond_signal(&W->cv);
    if (W->bell_wait)
        eng_bell_kick(W->bell_wait);
}

static void inbox_push(eng_worker_t *W, eng_wnode_t *n)
{
    n->next = NULL;
    pthread_mutex_lock(&W->lock);
    if (W->in_tail)
        W->in_tail->next = n;
    else
        W->in_head = n;
    W->in_tail = n;
    wake_locked(W);
    pthread_mutex_unlock(&W->lock);
}

/* Worker W > 0: move its inbox into its list, in order. */
static void inbox_drain(eng_worker_t *W)
{
    pthread_mutex_lock(&W->lock);
    eng_wnode_t *n = W->in_head;
    W->in_head = W->in_tail = NULL;
    pthread_mutex_unlock(&W->lock);
    for (eng_wnode_t *nx; n; n = nx) {
        nx = n->next;
        if (n->task)
            list_append(W, n);
        else
            destroy_seen(W, n->comm, (destroy_mark_t *)(void *)(n - W->id));
    }
}

/* W is about to sleep on b: count it in, and publish b for submitters to kick (before
 * W's last look at its input). Returns the value to block on. */
static uint32_t bell_enter(eng_worker_t *W, eng_bell_t *b)
{
    if (!W->helping && !W->sliced && eng_cores_contended()) {
        /* from its first block on a contended core on, a woken worker preempts a busy
         * thread at once (cpu_wait.c) */
        W->sliced = 1;
        (void)eng_thread_slice_short();
    }
    const uint32_t seq = eng_bell_enter(b);
    pthread_mutex_lock(&W->lock);
    dfccl_store_seq_cst(&W->bell_wait, b);
    pthread_mutex_unlock(&W->lock);
    return seq;
}

static void bell_leave(eng_worker_t *W, eng_bell_t *b)
{
    pthread_mutex_lock(&W->lock);
    dfccl_store_seq_cst(&W->bell_wait, NULL);
    pthread_mutex_unlock(&W->lock);
    eng_bell_leave(b);
}

static void worker_wake(eng_worker_t *W)
{
    pthread_mutex_lock(&W->lock);
    wake_locked(W);
    pthread_mutex_unlock(&W->lock);
}

/* After a submission: wake worker 0 if it sleeps. */
static void wake_worker0(void)
{
    dfccl_fence_seq_cst(); /* publish before reading `sleeping`: pairs with idle_sleep and
                              worker_block */
    if (dfccl_load_seq_cst(&D.w[0].sleeping) || dfccl_load_seq_cst(&D.w[0].bell_wait))
        worker_wake(&D.w[0]);
}

/* Worker 0: one submission into the workers' lists. */
static void take_entry(const eng_sq_entry_t *e)
{
    struct dfccl_comm *c = e->comm;
    const uint32_t nw = D.nworkers;
    eng_worker_t *W0 = &D.w[0];
    if (e->kind == ENG_SQ_DESTROY) {
        destroy_mark_t *m = (destroy_mark_t *)(void *)((char *)e->req - offsetof(destroy_mark_t, req));
        m->left = nw;
        for (uint32_t w = 1; w < nw; w++) {
            m->node[w] = (eng_wnode_t){.task = NULL, .comm = c};
            inbox_push(&D.w[w], &m->node[w]);
        }
        destroy_seen(W0, c, m);
        return;
    }
    if (comm_aborted(c)) {
        stat_add(&c->stats.completed, 1);
        post_completion(e->req, dfcclCommAborted);
        return;
    }
    eng_task_t *t = malloc(sizeof(*t) + sizeof(eng_ctx_t) * c->channels + sizeof(eng_wnode_t) * nw);
    if (!t) {
        dfccl_error("no memory for a task; failing collective seq %llu", (unsigned long long)e->seq);
        stat_add(&c->stats.completed, 1);
        post_completion(e->req, dfcclNoMemory);
        return;
    }
    memset(t, 0, sizeof(*t));
    t->args = e->args;
    t->comm = c;
    t->req = e->req;
    t->seq = e->seq;
    t->slot = (uint32_t)(e->seq % c->slots);
    t->node = (eng_wnode_t *)(void *)(t->ctx + c->channels);
    for (uint32_t w = 0; w < nw; w++)
        t->node[w] = (eng_wnode_t){.task = t, .comm = c, .threshold_ns = sched_reset(&D.sp)};
    for (uint32_t ch = 0; ch < c->channels; ch++) {
        eng_ctx_init(&t->args, c->nranks, (int)ch, (int)c->channels, &t->ctx[ch]);
        t->node[ch % nw].channels_left += !t->ctx[ch].done;
    }
    uint32_t parts = 0;
    for (uint32_t w = 0; w < nw; w++)
        parts += t->node[w].channels_left > 0;
    /* a task with nothing to move still waits for its slot (on worker 0), so slots
     * are freed in sequence order */
    const int idle = parts == 0;
    t->workers_left = idle ? 1 : parts;
    /* which workers get a part is decided before any is handed out: once the last part
     * is pushed, that worker may finish it and free t (worker 0's own part cannot end
     * before this returns), while t stays alive up to that last push */
    uint32_t to[ENG_MAX_WORKERS], nout = 0;
    if (t->node[0].channels_left || idle)
        list_append(W0, &t->node[0]);
    for (uint32_t w = 1; w < nw; w++)
        if (t->node[w].channels_left)
            to[nout++] = w;
    for (uint32_t i = 0; i < nout; i++)
        inbox_push(&D.w[to[i]], &t->node[to[i]]);
}

/* Move every complete submission into the task lists. */
static int take_submissions(void)
{
    int n = 0;
    eng_sq_entry_t *e;
    while ((e = eng_ring_peek(&D.ring))) {
        eng_sq_entry_t copy = *e;
        eng_ring_advance(&D.ring);
        take_entry(&copy);
        n++;
    }
    return n;
}

/* ---- diagnostics ------------------------------------------------------------------------ */

static void report_stall(eng_task_t *t, uint64_t waited_ns)
{
    struct dfccl_comm *c = t->comm;
    char missing[512];
    size_t len = 0;
    int nmissing = 0;
    missing[0] = 0;
    for (int p = 0; p < c->nranks; p++) {
        /* a rank has arrived at seq once it has submitted seq+1 collectives (peers on
         * the net are not mapped: unknown, not listed) */
        if (c->segs[p] && dfccl_load_acquire64(&eng_seg_hdr(c, p)->arrived) <= t->seq) {
            nmissing++;
            if (len < sizeof(missing) - 16)
                len += (size_t)snprintf(missing + len, sizeof(missing) - len, "%s%d", nmissing > 1 ? "," : "",
                                        p);
        }
    }
    /* "arrived" says nothing of a peer past seq that is itself stalled on another
     * communicator, or of a net peer: say what is known, not a guess */
    dfccl_warn("%s seq %llu on communicator %016llx (rank %d of %d) stalled for %llu ms; %s%s",
               eng_coll_names[t->args.coll], (unsigned long long)t->seq, (unsigned long long)c->uid, c->rank,
               c->nranks, (unsigned long long)(waited_ns / 1000000),
               nmissing ? "ranks that have not arrived: "
                        : "every shared-memory peer has submitted it (one may be stalled on another "
                          "communicator, or a net peer is late)",
               missing);
}

/* DFCCL_TRACE: worker W ran t from t0 (eng_now_ns) until now, with this outcome. */
static void trace_run(const eng_worker_t *W, const eng_task_t *t, uint64_t t0, int outcome)
{
    if (eng_trace_on)
        eng_trace_run(t, W->id, t0, eng_now_ns(), outcome);
}

/* Stall report, dead peer and timeout (the run began at run_t0, for the trace). Returns 1
 * when this worker's part was failed. */
static int check_stall(eng_worker_t *W, eng_wnode_t *n, uint64_t now, uint64_t run_t0)
{
    eng_task_t *t = n->task;
    uint64_t waited = now - n->progress_ns;
    struct dfccl_comm *c = t->comm;
    const char *name = eng_coll_names[t->args.coll];
    const unsigned long long seq = (unsigned long long)t->seq;
    dfcclResult_t res = dfcclSuccess;
    int p;
    if (waited > ENG_PEER_CHECK_NS && eng_peer_check_due(c, now) && (p = eng_shm_dead_peer(c, now)) >= 0) {
        /* a peer died without leaving: nothing more can run on the communicator */
        char who[128];
        eng_shm_peer_desc(c, p, now, who, sizeof who);
        res = dfcclCommAborted;
        eng_comm_why(c, !dfccl_exchange_relaxed(&t->reported, 1),
                     "peer rank %d (%s) died; %s seq %llu and every later collective on it fail", p, who,
                     name, seq);
    } else if (waited > ENG_PEER_CHECK_NS && (p = eng_shm_left_peer(c, t->seq, 0)) >= 0) {
        /* it destroyed the communicator (or exited) without this collective: nothing
         * will come from it, now or for any later collective */
        res = dfcclCommAborted;
        eng_comm_why(c, !dfccl_exchange_relaxed(&t->reported, 1),
                     "peer rank %d left the communicator (dfcclCommDestroy or exit) before completing %s "
                     "seq %llu; it and every later collective on it fail",
                     p, name, seq);
    } else {
        if (eng_config.stall_report_ms && waited > eng_config.stall_report_ms * 1000000ull &&
            !dfccl_exchange_relaxed(&t->reported, 1))
            report_stall(t, waited);
        /* the connection counters are now out of step with the peers: nothing more can
         * run on this communicator (the other workers drop their parts on seeing it) */
        if (eng_config.timeout_ms && waited > eng_config.timeout_ms * 1000000ull) {
            res = dfcclTimeout;
            eng_comm_why(c, 1,
                         "%s seq %llu timed out after %llu ms (DFCCL_TIMEOUT); the communicator is aborted",
                         name, seq, (unsigned long long)eng_config.timeout_ms);
        }
    }
    if (res == dfcclSuccess)
        return 0;
    /* the task's result is set before the abort, so that it reads res, not the
     * dfcclCommAborted of another worker that saw the abort in between */
    task_fail(t, res);
    dfccl_store_release(&c->aborted, res);
    trace_run(W, t, run_t0, ENG_TR_FAILED);
    part_finish(W, n, res);
    return 1;
}

/* ---- the scheduler ------------------------------------------------------------------- */

/* A task leaves its worker after waiting stalled_ns (progressed: it moved before):
 * counted, and what run_task returns. */
static int preempted(struct dfccl_comm *c, int progressed, uint64_t stalled_ns)
{
    stat_add(&c->stats.preemptions, 1);
    stat_add(&c->stats.stalls, !progressed);
    stat_add(&c->stats.stall_ns, stalled_ns);
    return progressed;
}

/* Run worker W's channels of one task until they finish or wait longer than the
 * budget. Returns 1 if they made progress (or finished). */
static int run_task(eng_worker_t *W, eng_wnode_t *n, int is_head)
{
    eng_task_t *t = n->task;
    struct dfccl_comm *c = t->comm;
    const uint32_t nw = D.nworkers;
    uint64_t now = eng_now_ns();
    const uint64_t run_t0 = now;
    if (!n->progress_ns)
        n->progress_ns = now; /* the stall clock starts when the task first runs */
    uint64_t budget = sched_budget(&D.sp, n->threshold_ns, is_head);
    uint64_t wait_start = now;
    unsigned spins = 0;
    int progressed = 0;
    eng_bell_t *bell = NULL; /* preemption off, core contended: asleep on it after a look */
    uint32_t bell_seq = 0;

    for (;;) {
        int moved = 0;
        for (uint32_t ch = W->id; ch < c->channels; ch += nw) {
            eng_ctx_t *x = &t->ctx[ch];
            if (x->done)
                continue;
            eng_chan_view_t v = {.rank = c->rank,
                                 .nranks = c->nranks,
                                 .depth = c->depth,
                                 .chunk = c->chunk,
                                 .conns = eng_comm_conns(c, t->slot, ch)};
            eng_prog_t r = eng_algo_progress(&t->args, &v, x);
            if (r == ENG_DONE) {
                x->done = 1;
                n->channels_left--;
            }
            moved |= r != ENG_WAIT;
        }
        if (bell) {
            if (!moved && n->channels_left)
                eng_bell_block(bell, bell_seq, ENG_BLOCK_NS);
            bell_leave(W, bell);
            bell = NULL;
        }
        if (n->channels_left == 0) {
            trace_run(W, t, run_t0, ENG_TR_FINISHED);
            part_finish(W, n, dfcclSuccess);
            return 1;
        }
        now = eng_now_ns();
        if (moved) {
            if (spins) {
                /* a wait was satisfied: the peers are here, stick with this task */
                n->threshold_ns = sched_adapt(&D.sp, n->threshold_ns, now - wait_start);
                budget = sched_budget(&D.sp, n->threshold_ns, is_head);
            }
            wait_start = n->progress_ns = now;
            spins = 0;
            progressed = 1;
            continue;
        }
        if (now - wait_start >= budget) { /* the context is in t->ctx already: run something else */
            trace_run(W, t, run_t0, progressed ? ENG_TR_PREEMPTED : ENG_TR_STALLED);
            return preempted(c, progressed, now - wait_start);
        }
        if (comm_aborted(c)) {
            /* another worker timed out, or a net peer failed: even with preemption off,
             * no wait on this communicator can end any more */
            trace_run(W, t, run_t0, ENG_TR_FAILED);
            part_finish(W, n, dfcclCommAborted);
            return 1;
        }
        if (check_stall(W, n, now, run_t0))
            return 1;
        if (++spins < ENG_SPINS_BEFORE_YIELD) {
            dfccl_cpu_relax();
        } else if (eng_yield()) {
            /* ranks may outnumber cores: let the peer we wait for run */
            if (!D.sp.preempt) {
                /* preemption off: stay with this task, asleep on its doorbell once the
                 * next look finds nothing */
                bell = &eng_seg_hdr(c, c->rank)->bell;
                bell_seq = bell_enter(W, bell);
                continue;
            }
            /* the core is contended: stop spinning here, so the worker can block on a
             * doorbell until the peer rings it (a preemption like any other) */
            W->contended = 1;
            trace_run(W, t, run_t0, progressed ? ENG_TR_PREEMPTED : ENG_TR_STALLED);
            return preempted(c, progressed, eng_now_ns() - wait_start);
        }
    }
}

/* Something new for W: a submission (worker 0) or its inbox (the others). */
static int has_input(eng_worker_t *W)
{
    return W->id == 0 ? eng_ring_peek(&D.ring) != NULL : DFCCL_READ_ONCE(W->in_head) != NULL;
}

static void take_input(eng_worker_t *W)
{
    if (W->id == 0)
        take_submissions();
    else if (DFCCL_READ_ONCE(W->in_head))
        inbox_drain(W);
}

static void idle_sleep(eng_worker_t *W)
{
    /* poll a little first: a new submission is usually right behind the last */
    uint64_t until = eng_now_ns() + eng_config.idle_sleep_us * 1000ull;
    while (eng_now_ns() < until) {
        if (has_input(W) || DFCCL_READ_ONCE(D.stop))
            return;
        if (eng_yield())
            break; /* the core is wanted: a submission wakes a sleeper sooner */
    }
    /* asleep with an empty list, the thread lets a waiting caller run the worker */
    pthread_mutex_unlock(&W->run);
    pthread_mutex_lock(&W->lock);
    dfccl_store_seq_cst(&W->sleeping, 1);
    /* re-check after publishing `sleeping`: pairs with the fence in eng_daemon_submit
     * (worker 0); the other workers' inboxes are pushed under this lock */
    while (!has_input(W) && !W->handback && !DFCCL_READ_ONCE(D.stop)) {
        struct timespec ts;
        abs_deadline(&ts, eng_cores_contended() ? ENG_IDLE_CONTENDED_NS : 100000000);
        pthread_cond_timedwait(&W->cv, &W->lock, &ts);
    }
    W->handback = 0;
    dfccl_store_seq_cst(&W->sleeping, 0);
    pthread_mutex_unlock(&W->lock);
    pthread_mutex_lock(&W->run);
}

static int worker_pass(eng_worker_t *W);

/* Every task of W waits on peers: block on the doorbell of the first one's
 * communicator (this rank's segment there), which its peers and proxy ring when they
 * post or credit, and which a submission kicks. Returns 1 if the last look moved a task. */
static int worker_block(eng_worker_t *W)
{
    struct dfccl_comm *c = W->head->comm;
    eng_bell_t *b = &eng_seg_hdr(c, c->rank)->bell;
    const uint32_t seq = bell_enter(W, b);
    /* the last look: a task that moves here raced the sleep. c outlives it, since only
     * this worker's taking of input can complete c's destroy */
    const int moved = has_input(W) || DFCCL_READ_ONCE(D.stop) || worker_pass(W);
    if (!moved)
        eng_bell_block(b, seq, ENG_BLOCK_NS);
    bell_leave(W, b);
    return moved;
}

/* One pass over W's list. Returns 1 if any task moved. */
static int worker_pass(eng_worker_t *W)
{
    int progressed = 0, head_seen = 0;
    for (eng_wnode_t *n = W->head, *nx; n; n = nx) {
        nx = n->next;
        eng_task_t *t = n->task;
        struct dfccl_comm *c = t->comm;
        if (comm_aborted(c)) {
            part_finish(W, n, dfcclCommAborted);
            progressed = 1;
            continue;
        }
        if (!sched_slot_free(dfccl_load_acquire64(&c->slot_next[t->slot]), t->seq))
            continue;
        int is_head = !head_seen;
        head_seen = 1;
        /* run_task removes n at most, never nx; input (a destroy marker may fail
         * tasks) is taken between passes only */
        progressed |= run_task(W, n, is_head);
    }
    return progressed;
}

static void *worker_main(void *arg)
{
    eng_worker_t *W = arg;
    uint64_t stalled_since = eng_now_ns();
    pthread_mutex_lock(&W->run);
    for (;;) {
        take_input(W);
        if (!W->head) {
            if (DFCCL_READ_ONCE(D.stop) && !has_input(W))
                break;
            idle_sleep(W);
            continue;
        }
        /* every task stalled: yield the core (peers may share it) for a while, and
         * block on a doorbell once a yield finds the core taken or after the spin
         * time, so a long stall does not burn a core while a short one costs no
         * wake-up latency */
        uint64_t now = eng_now_ns();
        if (worker_pass(W)) {
            stalled_since = now;
        } else if (W->head && (W->contended || eng_cores_contended() || now - stalled_since >= ENG_SPIN_NS)) {
            W->contended = 0;
            if (worker_block(W))
                stalled_since = eng_now_ns();
        } else if (eng_yield()) {
            W->contended = 1;
        }
    }
    pthread_mutex_unlock(&W->run);
    return NULL;
}

/* A caller waiting for req runs worker W itself while W's thread sleeps idle, so that
 * on contended cores a collective costs the wake-ups of its peers' steps only, not
 * also one to hand the submission to the daemon's thread and one to hand the
 * completion back (bench/RESULTS.md, busy cores). It is the same worker: the same
 * passes, preemption, doorbells and stall checks, run on another thread. Returns 1
 * when req is done; 0 when W is running on its own thread, or has nothing left that
 * this caller could run. */
static int help(eng_worker_t *W, struct dfccl_request *req)
{
    if (pthread_mutex_trylock(&W->run))
        return 0;
    W->helping = 1;
    while (!dfccl_load_acquire32(&req->done)) {
        take_input(W);
        if (!W->head)
            break; /* req's parts are on other workers */
        if (!worker_pass(W) && !dfccl_load_acquire32(&req->done))
            (void)worker_block(W);
    }
    W->helping = 0;
    pthread_mutex_lock(&W->lock);
    if (W->head || has_input(W)) { /* other communicators' tasks: back to the thread */
        W->handback = 1;
        wake_locked(W);
    }
    pthread_mutex_unlock(&W->lock);
    pthread_mutex_unlock(&W->run);
    return dfccl_load_acquire32(&req->done);
}

void eng_daemon_wait(struct dfccl_request *req)
{
    /* yield rather than spin: on a machine with fewer cores than ranks the daemon
     * thread we wait for may need this core; with a core to spare the yield returns
     * at once. Sleep once the cores are contended, or after the spin time. */
    const uint64_t until = eng_now_ns() + ENG_SPIN_NS;
    for (unsigned i = 0;; i++) {
        if (dfccl_load_acquire32(&req->done))
            return;
        if (i < ENG_SPINS_BEFORE_YIELD)
            dfccl_cpu_relax();
        else if (eng_yield() || eng_now_ns() >= until)
            break;
    }
    /* a short slice while asleep: the completion's wake preempts a busy thread */
    const uint64_t slice = eng_thread_slice_short();
    if (help(&D.w[0], req)) {
        eng_thread_slice_restore(slice);
        return;
    }
    eng_daemon_kick(req); /* the worker's thread runs it */
    dfccl_fetch_add_seq_cst(&D.waiters, 1);
    pthread_mutex_lock(&D.done_lock);
    while (!dfccl_load_acquire32(&req->done)) {
        struct timespec ts;
        abs_deadline(&ts, 1000000); /* bounded: a missed broadcast costs 1 ms, never a hang */
        pthread_cond_timedwait(&D.done_cv, &D.done_lock, &ts);
    }
    pthread_mutex_unlock(&D.done_lock);
    dfccl_fetch_sub_seq_cst(&D.waiters, 1);
    eng_thread_slice_restore(slice);
}

/* ---- life cycle and submission --------------------------------------------------------- */

static void stop_workers(uint32_t n)
{
    dfccl_store_seq_cst(&D.stop, 1);
    for (uint32_t w = 0; w < n; w++)
        worker_wake(&D.w[w]);
    for (uint32_t w = 0; w < n; w++) {
        pthread_join(D.w[w].thread, NULL);
        pthread_mutex_destroy(&D.w[w].lock);
        pthread_mutex_destroy(&D.w[w].run);
        pthread_cond_destroy(&D.w[w].cv);
    }
}

dfcclResult_t eng_daemon_acquire(void)
{
    dfcclResult_t res = dfcclSuccess;
    eng_trace_setup();
    pthread_mutex_lock(&D.life_lock);
    if (D.refcount++ == 0) {
        D.sp = (sched_params_t){.preempt = eng_config.preempt,
                                .base_ns = eng_config.threshold_base_ns,
                                .max_ns = eng_config.threshold_max_ns,
                                .growth = eng_config.threshold_growth,
                                .head_factor = eng_config.head_factor};
        if (!D.ring.entries) {
            D.ring.entries = calloc(ENG_RING_ENTRIES, sizeof(eng_sq_entry_t));
            D.ring.mask = ENG_RING_ENTRIES - 1;
            D.ring.head = D.ring.tail = 0;
        }
        D.stop = 0;
        if (!D.ring.entries) {
            res = eng_set_error(dfcclNoMemory, "dfcclCommInit", "no memory for the submission ring");
            D.refcount--;
            goto out;
        }
        uint32_t n = 0;
        for (; n < eng_config.cpu_threads; n++) {
            eng_worker_t *W = &D.w[n];
            *W = (eng_worker_t){.id = n};
            pthread_mutex_init(&W->lock, NULL);
            pthread_mutex_init(&W->run, NULL);
            pthread_cond_init(&W->cv, NULL);
            int rc = pthread_create(&W->thread, NULL, worker_main, W);
            if (rc) {
                pthread_mutex_destroy(&W->lock);
                pthread_mutex_destroy(&W->run);
                pthread_cond_destroy(&W->cv);
                res = eng_set_error(dfcclSystemError, "dfcclCommInit",
                                    "pthread_create of daemon thread %u: %s", n, strerror(rc));
                break;
            }
        }
        D.nworkers = n;
        if (res != dfcclSuccess) {
            stop_workers(n);
            D.nworkers = 0;
            D.refcount--;
        }
    }
out:
    pthread_mutex_unlock(&D.life_lock);
    return res;
}

void eng_daemon_release(void)
{
    pthread_mutex_lock(&D.life_lock);
    if (--D.refcount == 0 && D.nworkers) {
        stop_workers(D.nworkers);
        D.nworkers = 0;
        eng_trace_flush();
    }
    pthread_mutex_unlock(&D.life_lock);
}

dfcclResult_t eng_daemon_submit(uint32_t kind, struct dfccl_comm *comm, const eng_coll_args_t *args,
                                struct dfccl_request *req)
{
    eng_sq_entry_t *e;
    pthread_mutex_lock(&D.sq_lock);
    while (!(e = eng_ring_get_entry(&D.ring))) {
        /* full: worker 0 drains it into the unbounded task lists shortly */
        pthread_mutex_unlock(&D.sq_lock);
        sched_yield();
        pthread_mutex_lock(&D.sq_lock);
    }
    e->kind = kind;
    e->comm = comm;
    e->req = req;
    if (args)
        e->args = *args;
    if (kind == ENG_SQ_COLL) {
        /* the sequence number is taken in ring order, so the daemon sees a
         * communicator's collectives in sequence order */
        e->seq = comm->next_seq++;
        comm->stats.submitted++;
        dfccl_store_release64(&eng_seg_hdr(comm, comm->rank)->arrived, comm->next_seq);
        /* stamped after the peers can see it: a peer that still named this rank late
         * looked before the stamp, as the timeline's check expects */
        if (eng_trace_on) {
            const eng_trace_key_t k = eng_trace_key(comm, e->seq, args->coll, 0);
            eng_trace_submit(&k, eng_now_ns());
        }
    }
    /* on contended cores the wake would make the daemon's thread preempt the caller,
     * which is about to run the collective itself (help): the first wait or test on
     * req wakes it if need be, and an idle worker looks on its own within
     * ENG_IDLE_CONTENDED_NS anyway */
    req->wake_due = eng_cores_contended();
    eng_ring_commit(&D.ring, e);
    pthread_mutex_unlock(&D.sq_lock);
    if (!req->wake_due)
        wake_worker0();
    return dfcclSuccess;
}

uint64_t eng_daemon_destroy(struct dfccl_comm *c)
{
    destroy_mark_t m;
    memset(&m, 0, sizeof(m));
    m.first_failed = UINT64_MAX;
    eng_daemon_submit(ENG_SQ_DESTROY, c, NULL, &m.req);
    eng_daemon_wait(&m.req);
    /* c's handle is gone: nothing more is submitted on it */
    return DFCCL_MIN(dfccl_load_relaxed(&m.first_failed), c->next_seq);
}

void eng_daemon_kick(struct dfccl_request *req)
{
    if (req->wake_due) {
        req->wake_due = 0;
        wake_worker0();
    }
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU daemon: one host thread per process runs every communicator's collectives
 * through the shared scheduler and algorithms. It takes submissions from the ring into
 * its task list, runs tasks in list order, preempts one that waits longer than its
 * threshold at a peer (its context is already saved in the task: the algorithms keep
 * it there), and sleeps when there is nothing to do. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eng_comm.h"
#include "eng_log.h"
#include "algo.h"

#define ENG_RING_ENTRIES       1024u
#define ENG_SPINS_BEFORE_YIELD 64u

typedef struct {
    pthread_mutex_t life_lock; /* refcount, thread start and join */
    int refcount;
    int running;
    pthread_t thread;
    int stop;
    /* sleeping daemon: wake_cv under wake_lock; `sleeping` is read by submitters */
    pthread_mutex_t wake_lock;
    pthread_cond_t wake_cv;
    uint32_t sleeping;
    /* submission ring: many producers under sq_lock, the daemon consumes */
    pthread_mutex_t sq_lock;
    eng_ring_t ring;
    /* hosts sleeping in eng_daemon_wait */
    pthread_mutex_t done_lock;
    pthread_cond_t done_cv;
    uint32_t waiters;
    /* daemon-only state */
    eng_task_t *head, *tail;
    sched_params_t sp;
} eng_daemon_t;

static eng_daemon_t D = {
    .life_lock = PTHREAD_MUTEX_INITIALIZER,
    .wake_lock = PTHREAD_MUTEX_INITIALIZER,
    .wake_cv = PTHREAD_COND_INITIALIZER,
    .sq_lock = PTHREAD_MUTEX_INITIALIZER,
    .done_lock = PTHREAD_MUTEX_INITIALIZER,
    .done_cv = PTHREAD_COND_INITIALIZER,
};

uint64_t eng_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull), .tv_nsec = (long)(ns % 1000000000ull)};
    nanosleep(&ts, NULL);
}

static void abs_deadline(struct timespec *ts, uint64_t ns)
{
    clock_gettime(CLOCK_REALTIME, ts);
    uint64_t t = (uint64_t)ts->tv_nsec + ns;
    ts->tv_sec += (time_t)(t / 1000000000ull);
    ts->tv_nsec = (long)(t % 1000000000ull);
}

static const char *const coll_names[ENG_COLL_NUM] = {"allreduce",      "reduce",   "bcast",  "allgather",
                                                     "reduce_scatter", "alltoall", "barrier"};

/* ---- completions --------------------------------------------------------------------- */

static void post_completion(struct dfccl_request *req, dfcclResult_t res)
{
    req->result = res;
    /* release: results (written by this thread) are visible before the word flips;
     * the host's acquire in dfcclTest/eng_daemon_wait is the counterpart */
    dfccl_store_release32(&req->done, 1);
    dfccl_fence_seq_cst(); /* order the store before reading `waiters` (Dekker with wait) */
    if (DFCCL_READ_ONCE(D.waiters)) {
        pthread_mutex_lock(&D.done_lock);
        pthread_cond_broadcast(&D.done_cv);
        pthread_mutex_unlock(&D.done_lock);
    }
}

void eng_daemon_wait(struct dfccl_request *req)
{
    /* yield rather than spin: on a machine with fewer cores than ranks the daemon
     * thread we wait for may need this core; with a core to spare the yield returns
     * at once */
    for (unsigned i = 0; i < 2000; i++) {
        if (dfccl_load_acquire32(&req->done))
            return;
        sched_yield();
    }
    __atomic_fetch_add(&D.waiters, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&D.done_lock);
    while (!dfccl_load_acquire32(&req->done)) {
        struct timespec ts;
        abs_deadline(&ts, 1000000); /* bounded: a missed broadcast costs 1 ms, never a hang */
        pthread_cond_timedwait(&D.done_cv, &D.done_lock, &ts);
    }
    pthread_mutex_unlock(&D.done_lock);
    __atomic_fetch_sub(&D.waiters, 1, __ATOMIC_SEQ_CST);
}

/* ---- task list ------------------------------------------------------------------------ */

static void list_append(eng_task_t *t)
{
    t->next = NULL;
    t->prev = D.tail;
    if (D.tail)
        D.tail->next = t;
    else
        D.head = t;
    D.tail = t;
}

static void list_remove(eng_task_t *t)
{
    if (t->prev)
        t->prev->next = t->next;
    else
        D.head = t->next;
    if (t->next)
        t->next->prev = t->prev;
    else
        D.tail = t->prev;
}

static void task_finish(eng_task_t *t, dfcclResult_t res)
{
    struct dfccl_comm *c = t->comm;
    c->slot_next[t->slot] = t->seq + c->slots;
    c->stats.completed++;
    list_remove(t);
    post_completion(t->req, res);
    free(t);
}

static void take_entry(const eng_sq_entry_t *e)
{
    struct dfccl_comm *c = e->comm;
    if (e->kind == ENG_SQ_DESTROY) {
        /* every task of c is in the list already (entries are taken in order) */
        for (eng_task_t *t = D.head, *n; t; t = n) {
            n = t->next;
            if (t->comm == c)
                task_finish(t, dfcclCommAborted);
        }
        post_completion(e->req, dfcclSuccess);
        return;
    }
    if (c->aborted) {
        c->stats.completed++;
        post_completion(e->req, dfcclCommAborted);
        return;
    }
    eng_task_t *t = malloc(sizeof(*t) + sizeof(eng_ctx_t) * c->channels);
    if (!t) {
        dfccl_error("no memory for a task; failing collective seq %llu", (unsigned long long)e->seq);
        c->stats.completed++;
        post_completion(e->req, dfcclNoMemory);
        return;
    }
    memset(t, 0, sizeof(*t));
    t->args = e->args;
    t->comm = c;
    t->req = e->req;
    t->seq = e->seq;
    t->slot = (uint32_t)(e->seq % c->slots);
    t->threshold_ns = sched_reset(&D.sp);
    t->channels_left = 0;
    for (uint32_t ch = 0; ch < c->channels; ch++) {
        eng_ctx_init(&t->args, c->nranks, (int)ch, (int)c->channels, &t->ctx[ch]);
        t->channels_left += !t->ctx[ch].done;
    }
    list_append(t);
}

/* Move every complete submission into the task list. */
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
    dfccl_warn("%s seq %llu on communicator %016llx (rank %d of %d) stalled for %llu ms; %s%s",
               coll_names[t->args.coll], (unsigned long long)t->seq, (unsigned long long)c->uid, c->rank,
               c->nranks, (unsigned long long)(waited_ns / 1000000),
               nmissing ? "ranks that have not arrived: "
                        : "every rank has arrived (a peer is busy elsewhere)",
               missing);
}

/* Stall report and timeout. Returns 1 when the task was failed (and freed). */
static int check_stall(eng_task_t *t, uint64_t now)
{
    uint64_t waited = now - t->progress_ns;
    if (!t->reported && eng_config.stall_report_ms && waited > eng_config.stall_report_ms * 1000000ull) {
        t->reported = 1;
        report_stall(t, waited);
    }
    if (eng_config.timeout_ms && waited > eng_config.timeout_ms * 1000000ull) {
        struct dfccl_comm *c = t->comm;
        dfccl_error("%s seq %llu on communicator %016llx timed out after %llu ms (DFCCL_TIMEOUT); the "
                    "communicator is aborted",
                    coll_names[t->args.coll], (unsigned long long)t->seq, (unsigned long long)c->uid,
                    (unsigned long long)eng_config.timeout_ms);
        /* the connection counters are now out of step with the peers: nothing more can
         * run on this communicator */
        c->aborted = dfcclTimeout;
        task_finish(t, dfcclTimeout);
        return 1;
    }
    return 0;
}

/* ---- the scheduler ------------------------------------------------------------------- */

/* Run one task until it finishes or waits longer than its budget. Returns 1 if it made
 * progress (or finished). */
static int run_task(eng_task_t *t, int is_head)
{
    struct dfccl_comm *c = t->comm;
    uint64_t now = eng_now_ns();
    if (!t->progress_ns)
        t->progress_ns = now; /* the stall clock starts when the task first runs */
    uint64_t budget = sched_budget(&D.sp, t->threshold_ns, is_head);
    uint64_t wait_start = now;
    unsigned spins = 0;
    int progressed = 0;

    for (;;) {
        int moved = 0;
        for (uint32_t ch = 0; ch < c->channels; ch++) {
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
                t->channels_left--;
            }
            moved |= r != ENG_WAIT;
        }
        if (t->channels_left == 0) {
            task_finish(t, dfcclSuccess);
            return 1;
        }
        now = eng_now_ns();
        if (moved) {
            if (spins) {
                /* a wait was satisfied: the peers are here, stick with this task */
                t->threshold_ns = sched_adapt(&D.sp, t->threshold_ns, now - wait_start);
                budget = sched_budget(&D.sp, t->threshold_ns, is_head);
            }
            wait_start = t->progress_ns = now;
            spins = 0;
            progressed = 1;
            continue;
        }
        if (now - wait_start >= budget) {
            /* preempt: the context is in t->ctx already; go run something else */
            c->stats.preemptions++;
            c->stats.stalls += !progressed;
            c->stats.stall_ns += now - wait_start;
            return progressed;
        }
        if (check_stall(t, now))
            return 1;
        if (++spins < ENG_SPINS_BEFORE_YIELD)
            dfccl_cpu_relax();
        else
            sched_yield(); /* ranks may outnumber cores: let the peer we wait for run */
    }
}

static void idle_sleep(void)
{
    /* poll a little first: a new submission is usually right behind the last */
    uint64_t until = eng_now_ns() + eng_config.idle_sleep_us * 1000ull;
    while (eng_now_ns() < until) {
        if (eng_ring_peek(&D.ring) || DFCCL_READ_ONCE(D.stop))
            return;
        sched_yield();
    }
    pthread_mutex_lock(&D.wake_lock);
    __atomic_store_n(&D.sleeping, 1, __ATOMIC_SEQ_CST);
    /* re-check after publishing `sleeping`: pairs with the fence in eng_daemon_submit */
    while (!eng_ring_peek(&D.ring) && !DFCCL_READ_ONCE(D.stop)) {
        struct timespec ts;
        abs_deadline(&ts, 100000000);
        pthread_cond_timedwait(&D.wake_cv, &D.wake_lock, &ts);
    }
    __atomic_store_n(&D.sleeping, 0, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&D.wake_lock);
}

static void *daemon_main(void *arg)
{
    (void)arg;
    uint64_t stalled_since = eng_now_ns();
    for (;;) {
        take_submissions();
        if (!D.head) {
            if (DFCCL_READ_ONCE(D.stop))
                break;
            idle_sleep();
            continue;
        }
        int progressed = 0, head_seen = 0;
        for (eng_task_t *t = D.head, *n; t; t = n) {
            n = t->next;
            if (t->comm->aborted) {
                task_finish(t, dfcclCommAborted);
                progressed = 1;
                continue;
            }
            if (!sched_slot_free(t->comm->slot_next[t->slot], t->seq))
                continue;
            int is_head = !head_seen;
            head_seen = 1;
            /* run_task frees t at most, never n; submissions (a destroy may free
             * tasks) are taken between passes only */
            progressed |= run_task(t, is_head);
        }
        /* every task stalled: yield the core (peers may share it) for a while, and
         * only after 2 ms without progress sleep between passes, so a long stall does
         * not burn a core while a short one costs no wake-up latency */
        uint64_t now = eng_now_ns();
        if (progressed)
            stalled_since = now;
        else if (now - stalled_since < 2000000ull)
            sched_yield();
        else
            sleep_ns(50000);
    }
    return NULL;
}

/* ---- life cycle and submission --------------------------------------------------------- */

dfcclResult_t eng_daemon_acquire(void)
{
    dfcclResult_t res = dfcclSuccess;
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
        } else {
            DFCCL_PTHREAD_CHECK_GOTO(pthread_create(&D.thread, NULL, daemon_main, NULL), "pthread_create",
                                     res, err);
            D.running = 1;
        }
    }
    pthread_mutex_unlock(&D.life_lock);
    return res;
err:
    D.refcount--;
    pthread_mutex_unlock(&D.life_lock);
    return res;
}

void eng_daemon_release(void)
{
    pthread_mutex_lock(&D.life_lock);
    if (--D.refcount == 0 && D.running) {
        __atomic_store_n(&D.stop, 1, __ATOMIC_SEQ_CST);
        pthread_mutex_lock(&D.wake_lock);
        pthread_cond_signal(&D.wake_cv);
        pthread_mutex_unlock(&D.wake_lock);
        pthread_join(D.thread, NULL);
        D.running = 0;
    }
    pthread_mutex_unlock(&D.life_lock);
}

dfcclResult_t eng_daemon_submit(uint32_t kind, struct dfccl_comm *comm, const eng_coll_args_t *args,
                                struct dfccl_request *req)
{
    eng_sq_entry_t *e;
    pthread_mutex_lock(&D.sq_lock);
    while (!(e = eng_ring_get_entry(&D.ring))) {
        /* full: the daemon drains it into its unbounded task list shortly */
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
    }
    eng_ring_commit(&D.ring, e);
    pthread_mutex_unlock(&D.sq_lock);
    dfccl_fence_seq_cst(); /* publish before reading `sleeping`: pairs with idle_sleep */
    if (__atomic_load_n(&D.sleeping, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&D.wake_lock);
        pthread_cond_signal(&D.wake_cv);
        pthread_mutex_unlock(&D.wake_lock);
    }
    return dfcclSuccess;
}

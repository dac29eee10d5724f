/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU daemon's scheduler: each worker's passes over its task list with the shared
 * scheduler's thresholds (eng_sched.h), its doorbell blocks and idle sleeps, and a
 * waiting caller that runs a sleeping worker itself (cpu_state.h). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_state.h"

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

/* ---- the scheduler ------------------------------------------------------------------- */

/* A task leaves its worker after waiting stalled_ns (progressed: it moved before):
 * counted, and what run_task returns. */
static int preempted(struct dfccl_comm *c, int progressed, uint64_t stalled_ns)
{
    cpu_stat_add(&c->stats.preemptions, 1);
    cpu_stat_add(&c->stats.stalls, !progressed);
    cpu_stat_add(&c->stats.stall_ns, stalled_ns);
    return progressed;
}

/* Run worker W's channels of one task until they finish or wait longer than the
 * budget. Returns 1 if they made progress (or finished). */
static int run_task(eng_worker_t *W, eng_wnode_t *n, int is_head)
{
    eng_task_t *t = n->task;
    struct dfccl_comm *c = t->comm;
    const uint32_t nw = cpu_d.nworkers;
    uint64_t now = eng_now_ns();
    const uint64_t run_t0 = now;
    if (!n->progress_ns)
        n->progress_ns = now; /* the stall clock starts when the task first runs */
    uint64_t budget = sched_budget(&cpu_d.sp, n->threshold_ns, is_head);
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
                                 .conns = eng_comm_conns(c, t->slot, ch),
                                 .sig = t->sig};
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
            cpu_trace_run(W, t, run_t0, ENG_TR_FINISHED);
            cpu_part_finish(W, n, dfcclSuccess);
            return 1;
        }
        now = eng_now_ns();
        if (moved) {
            if (spins) {
                /* a wait was satisfied: the peers are here, stick with this task */
                n->threshold_ns = sched_adapt(&cpu_d.sp, n->threshold_ns, now - wait_start);
                budget = sched_budget(&cpu_d.sp, n->threshold_ns, is_head);
            }
            wait_start = n->progress_ns = now;
            spins = 0;
            progressed = 1;
            continue;
        }
        if (now - wait_start >= budget) { /* the context is in t->ctx already: run something else */
            cpu_trace_run(W, t, run_t0, progressed ? ENG_TR_PREEMPTED : ENG_TR_STALLED);
            return preempted(c, progressed, now - wait_start);
        }
        if (cpu_comm_aborted(c)) {
            /* another worker timed out, or a net peer failed: even with preemption off,
             * no wait on this communicator can end any more */
            cpu_trace_run(W, t, run_t0, ENG_TR_FAILED);
            cpu_part_finish(W, n, dfcclCommAborted);
            return 1;
        }
        if (cpu_check_stall(W, n, now, run_t0))
            return 1;
        if (++spins < ENG_SPINS_BEFORE_YIELD) {
            dfccl_cpu_relax();
        } else if (eng_yield()) {
            /* ranks may outnumber cores: let the peer we wait for run */
            if (!cpu_d.sp.preempt) {
                /* preemption off: stay with this task, asleep on its doorbell once the
                 * next look finds nothing */
                bell = &eng_seg_hdr(c, c->rank)->bell;
                bell_seq = bell_enter(W, bell);
                continue;
            }
            /* the core is contended: stop spinning here, so the worker can block on a
             * doorbell until the peer rings it (a preemption like any other) */
            W->contended = 1;
            cpu_trace_run(W, t, run_t0, progressed ? ENG_TR_PREEMPTED : ENG_TR_STALLED);
            return preempted(c, progressed, eng_now_ns() - wait_start);
        }
    }
}

/* Something new for W: a submission (worker 0) or its inbox (the others). */
static int has_input(eng_worker_t *W)
{
    return W->id == 0 ? eng_ring_peek(&cpu_d.ring) != NULL : DFCCL_READ_ONCE(W->in_head) != NULL;
}

static void take_input(eng_worker_t *W)
{
    if (W->id == 0)
        cpu_take_submissions();
    else if (DFCCL_READ_ONCE(W->in_head))
        cpu_inbox_drain(W);
}

static void idle_sleep(eng_worker_t *W)
{
    /* poll a little first: a new submission is usually right behind the last */
    uint64_t until = eng_now_ns() + eng_config.idle_sleep_us * 1000ull;
    while (eng_now_ns() < until) {
        if (has_input(W) || DFCCL_READ_ONCE(cpu_d.stop))
            return;
        if (eng_yield())
            break; /* the core is wanted: a submission wakes a sleeper sooner */
    }
    /* asleep with an empty list, the thread lets a waiting caller run the worker */
    pthread_mutex_unlock(&W->run);
    pthread_mutex_lock(&W->lock);
    dfccl_store_seq_cst(&W->sleeping, 1);
    /* re-check after publishing `sleeping`: pairs with the fence in cpu_daemon_submit
     * (worker 0); the other workers' inboxes are pushed under this lock */
    while (!has_input(W) && !W->handback && !DFCCL_READ_ONCE(cpu_d.stop)) {
        struct timespec ts;
        cpu_abs_deadline(&ts, eng_cores_contended() ? ENG_IDLE_CONTENDED_NS : 100000000);
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
    const int moved = has_input(W) || DFCCL_READ_ONCE(cpu_d.stop) || worker_pass(W);
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
        if (cpu_comm_aborted(c)) {
            cpu_part_finish(W, n, dfcclCommAborted);
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

void *cpu_worker_main(void *arg)
{
    eng_worker_t *W = arg;
    uint64_t stalled_since = eng_now_ns();
    pthread_mutex_lock(&W->run);
    for (;;) {
        take_input(W);
        if (!W->head) {
            if (DFCCL_READ_ONCE(cpu_d.stop) && !has_input(W))
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
        cpu_wake_locked(W);
    }
    pthread_mutex_unlock(&W->lock);
    pthread_mutex_unlock(&W->run);
    return dfccl_load_acquire32(&req->done);
}

void cpu_daemon_wait(struct dfccl_request *req)
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
    if (help(&cpu_d.w[0], req)) {
        eng_thread_slice_restore(slice);
        return;
    }
    cpu_daemon_kick(req); /* the worker's thread runs it */
    dfccl_fetch_add_seq_cst(&cpu_d.waiters, 1);
    pthread_mutex_lock(&cpu_d.done_lock);
    while (!dfccl_load_acquire32(&req->done)) {
        struct timespec ts;
        cpu_abs_deadline(&ts, 1000000); /* bounded: a missed broadcast costs 1 ms, never a hang */
        pthread_cond_timedwait(&cpu_d.done_cv, &cpu_d.done_lock, &ts);
    }
    pthread_mutex_unlock(&cpu_d.done_lock);
    dfccl_fetch_sub_seq_cst(&cpu_d.waiters, 1);
    eng_thread_slice_restore(slice);
}

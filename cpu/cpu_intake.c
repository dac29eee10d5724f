/* SPDX-License-Identifier: BSD-3-Clause */
/* The CPU daemon's intake: callers submit into the ring, worker 0 takes each entry
 * into the workers' task lists and inboxes, and the last worker done with a task posts
 * its completion (cpu_state.h). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_state.h"

/* the daemon: one per process */
eng_daemon_t cpu_d = {
    .life_lock = PTHREAD_MUTEX_INITIALIZER,
    .sq_lock = PTHREAD_MUTEX_INITIALIZER,
    .done_lock = PTHREAD_MUTEX_INITIALIZER,
    .done_cv = PTHREAD_COND_INITIALIZER,
};

/* ---- completions --------------------------------------------------------------------- */

void cpu_post_completion(struct dfccl_request *req, dfcclResult_t res)
{
    req->result = res;
    /* release: results (written by this thread, or by workers whose last access to the
     * task was an acq_rel decrement this thread observed) are visible before the word
     * flips; the host's acquire in dfcclTest/cpu_daemon_wait is the counterpart */
    dfccl_store_release32(&req->done, 1);
    dfccl_fence_seq_cst(); /* order the store before reading `waiters` (Dekker with wait) */
    if (DFCCL_READ_ONCE(cpu_d.waiters)) {
        pthread_mutex_lock(&cpu_d.done_lock);
        pthread_cond_broadcast(&cpu_d.done_cv);
        pthread_mutex_unlock(&cpu_d.done_lock);
    }
}

/* ---- task lists ------------------------------------------------------------------------ */

static void cpu_list_append(eng_worker_t *W, eng_wnode_t *n)
{
    n->next = NULL;
    n->prev = W->tail;
    if (W->tail)
        W->tail->next = n;
    else
        W->head = n;
    W->tail = n;
}

static void cpu_list_remove(eng_worker_t *W, eng_wnode_t *n)
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
    cpu_stat_add(&c->stats.completed, 1);
    if (eng_trace_on) {
        const eng_trace_key_t k = eng_trace_key(c, t->seq, &t->args, 0);
        eng_trace_complete(&k, dfccl_load_acquire(&t->result));
    }
    cpu_post_completion(t->req, (dfcclResult_t)dfccl_load_acquire(&t->result));
    free(t);
}

/* Worker W is done with its channels of n's task (res: how they ended). */
void cpu_part_finish(eng_worker_t *W, eng_wnode_t *n, dfcclResult_t res)
{
    eng_task_t *t = n->task;
    cpu_list_remove(W, n);
    if (res != dfcclSuccess)
        cpu_task_fail(t, res);
    if (dfccl_sub_fetch_acq_rel(&t->workers_left, 1) == 0)
        task_done(t);
}

/* Worker W has reached c's destroy marker m: every task of c it still holds is failed
 * (it holds all it will ever get: inboxes keep submission order); the last worker
 * to get here completes the destroy, after which c may be freed. */
static void cpu_destroy_seen(eng_worker_t *W, struct dfccl_comm *c, destroy_mark_t *m)
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
        cpu_part_finish(W, n, dfcclCommAborted);
    }
    if (dfccl_sub_fetch_acq_rel(&m->left, 1) == 0)
        cpu_post_completion(&m->req, dfcclSuccess); /* m is gone once this lands */
}

/* Wake W from idle_sleep or worker_block (a no-op when it is awake: it re-checks
 * before sleeping). Under W's lock, a doorbell it blocks on is still mapped: W leaves
 * it before it takes any input, a destroy marker included. */
void cpu_wake_locked(eng_worker_t *W)
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
    cpu_wake_locked(W);
    pthread_mutex_unlock(&W->lock);
}

/* Worker W > 0: move its inbox into its list, in order. */
void cpu_inbox_drain(eng_worker_t *W)
{
    pthread_mutex_lock(&W->lock);
    eng_wnode_t *n = W->in_head;
    W->in_head = W->in_tail = NULL;
    pthread_mutex_unlock(&W->lock);
    for (eng_wnode_t *nx; n; n = nx) {
        nx = n->next;
        if (n->task)
            cpu_list_append(W, n);
        else
            cpu_destroy_seen(W, n->comm, (destroy_mark_t *)(void *)(n - W->id));
    }
}

void cpu_worker_wake(eng_worker_t *W)
{
    pthread_mutex_lock(&W->lock);
    cpu_wake_locked(W);
    pthread_mutex_unlock(&W->lock);
}

/* After a submission: wake worker 0 if it sleeps. */
static void cpu_wake_worker0(void)
{
    dfccl_fence_seq_cst(); /* publish before reading `sleeping`: pairs with idle_sleep and
                              worker_block */
    if (dfccl_load_seq_cst(&cpu_d.w[0].sleeping) || dfccl_load_seq_cst(&cpu_d.w[0].bell_wait))
        cpu_worker_wake(&cpu_d.w[0]);
}

/* Worker 0: one submission into the workers' lists. */
static void take_entry(const eng_sq_entry_t *e)
{
    struct dfccl_comm *c = e->comm;
    const uint32_t nw = cpu_d.nworkers;
    eng_worker_t *W0 = &cpu_d.w[0];
    if (e->kind == ENG_SQ_DESTROY) {
        destroy_mark_t *m = (destroy_mark_t *)(void *)((char *)e->req - offsetof(destroy_mark_t, req));
        m->left = nw;
        for (uint32_t w = 1; w < nw; w++) {
            m->node[w] = (eng_wnode_t){.task = NULL, .comm = c};
            inbox_push(&cpu_d.w[w], &m->node[w]);
        }
        cpu_destroy_seen(W0, c, m);
        return;
    }
    if (cpu_comm_aborted(c)) {
        cpu_stat_add(&c->stats.completed, 1);
        cpu_post_completion(e->req, dfcclCommAborted);
        return;
    }
    eng_task_t *t = malloc(sizeof(*t) + sizeof(eng_ctx_t) * c->channels + sizeof(eng_wnode_t) * nw);
    if (!t) {
        dfccl_error("no memory for a task; failing collective seq %llu", (unsigned long long)e->seq);
        cpu_stat_add(&c->stats.completed, 1);
        cpu_post_completion(e->req, dfcclNoMemory);
        return;
    }
    memset(t, 0, sizeof(*t));
    t->args = e->args;
    t->sig = eng_coll_sig(&t->args);
    t->comm = c;
    t->req = e->req;
    t->seq = e->seq;
    t->slot = (uint32_t)(e->seq % c->slots);
    t->node = (eng_wnode_t *)(void *)(t->ctx + c->channels);
    for (uint32_t w = 0; w < nw; w++)
        t->node[w] = (eng_wnode_t){.task = t, .comm = c, .threshold_ns = sched_reset(&cpu_d.sp)};
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
        cpu_list_append(W0, &t->node[0]);
    for (uint32_t w = 1; w < nw; w++)
        if (t->node[w].channels_left)
            to[nout++] = w;
    for (uint32_t i = 0; i < nout; i++)
        inbox_push(&cpu_d.w[to[i]], &t->node[to[i]]);
}

/* Move every complete submission into the task lists. */
int cpu_take_submissions(void)
{
    int n = 0;
    eng_sq_entry_t *e;
    while ((e = eng_ring_peek(&cpu_d.ring))) {
        eng_sq_entry_t copy = *e;
        eng_ring_advance(&cpu_d.ring);
        take_entry(&copy);
        n++;
    }
    return n;
}

dfcclResult_t cpu_daemon_submit(uint32_t kind, struct dfccl_comm *comm, const eng_coll_args_t *args,
                                struct dfccl_request *req)
{
    eng_sq_entry_t *e;
    pthread_mutex_lock(&cpu_d.sq_lock);
    while (!(e = eng_ring_get_entry(&cpu_d.ring))) {
        /* full: worker 0 drains it into the unbounded task lists shortly */
        pthread_mutex_unlock(&cpu_d.sq_lock);
        sched_yield();
        pthread_mutex_lock(&cpu_d.sq_lock);
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
        /* described before `arrived` says it is here: a peer that sees it arrived and
         * stalls on it can compare (sig.c) */
        eng_sig_publish(comm, 0, e->seq, args);
        dfccl_store_release64(&eng_seg_hdr(comm, comm->rank)->arrived, comm->next_seq);
        /* stamped after the peers can see it: a peer that still named this rank late
         * looked before the stamp, as the timeline's check expects */
        if (eng_trace_on) {
            const eng_trace_key_t k = eng_trace_key(comm, e->seq, args, 0);
            eng_trace_submit(&k, eng_now_ns());
        }
    }
    /* on contended cores the wake would make the daemon's thread preempt the caller,
     * which is about to run the collective itself (help): the first wait or test on
     * req wakes it if need be, and an idle worker looks on its own within
     * ENG_IDLE_CONTENDED_NS anyway */
    req->wake_due = eng_cores_contended();
    eng_ring_commit(&cpu_d.ring, e);
    pthread_mutex_unlock(&cpu_d.sq_lock);
    if (!req->wake_due)
        cpu_wake_worker0();
    return dfcclSuccess;
}

void cpu_daemon_kick(struct dfccl_request *req)
{
    if (req->wake_due) {
        req->wake_due = 0;
        cpu_wake_worker0();
    }
}

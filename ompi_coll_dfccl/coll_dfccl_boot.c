/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine communicator's set-up, without blocking the caller.
 *
 * dfcclCommInit runs a handful of all-gathers (who is where, shared-memory segments,
 * UCX addresses, CUDA IPC handles), each depending on the previous one's result. Done
 * inline at a communicator's first engine call, it blocks that call until every rank
 * reaches the same communicator: rank 0 in comm A's set-up and rank 1 in comm B's
 * wait for each other forever. So the set-up runs on a thread of its own (as NCCL's
 * non-blocking init does), and each all-gather it asks for is handed back to whichever
 * thread drives MPI's progress, which carries it out with the component's private
 * point-to-point all-gather (coll_dfccl_xchg.c). That thread never calls MPI itself,
 * so every MPI thread level works. Meanwhile the communicator's engine calls wait in
 * its queue (coll_dfccl_call.c), as a collective stalled on a peer waits.
 */
#include "ompi_config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ompi/attribute/attribute.h"
#include "ompi/constants.h"

#include "coll_dfccl.h"
#include "coll_dfccl_cuda.h"

typedef enum {
    BOOT_X_IDLE = 0, /**< the set-up thread is working */
    BOOT_X_POSTED,   /**< it asks for an all-gather */
    BOOT_X_RUNNING,  /**< the all-gather is in flight */
    BOOT_X_DONE,     /**< results in place */
    BOOT_X_FAILED,
} boot_xstate_t;

struct mca_coll_dfccl_boot_t {
    mca_coll_dfccl_module_t *m;
    pthread_t thread;
    pthread_mutex_t lock; /**< guards everything below */
    pthread_cond_t cond;
    boot_xstate_t xstate;
    const void *send; /**< the all-gather asked for (the set-up thread's buffers) */
    void *recv;
    size_t bytes;
    mca_coll_dfccl_xchg_t x;
    int rounds;
    /* the first exchange, before the set-up thread may start: every rank says whether it
     * could start its own, so a rank that can't (no thread, no attribute) fails everyone
     * instead of leaving them waiting for it in the next exchange */
    enum { BOOT_GATE_CLOSED, BOOT_GATE_OPEN, BOOT_GATE_ABORT } gate;
    int32_t status;    /**< mine: 0 ready, -1 not */
    int32_t *statuses; /**< everyone's */
    bool thread_started;
    bool abort;    /**< finalize: every further all-gather fails */
    bool finished; /**< dfcclCommInit returned (or never ran) */
    bool lost;     /**< an exchange found a peer dead (or timed out): err says which */
    dfcclResult_t res;
    dfcclComm_t ecomm;
    char err[512];
    void *cuda_ctx; /**< the caller's CUDA context: the engine uses its device */
    struct timespec t0;
};

/* dfcclCommInit's all-gather, on the set-up thread: ask, then wait for the answer. */
static int boot_allgather(const void *sendbuf, void *recvbuf, size_t bytes, void *ctx)
{
    struct mca_coll_dfccl_boot_t *b = ctx;
    pthread_mutex_lock(&b->lock);
    if (b->abort) {
        pthread_mutex_unlock(&b->lock);
        return -1;
    }
    b->send = sendbuf;
    b->recv = recvbuf;
    b->bytes = bytes;
    b->rounds++;
    b->xstate = BOOT_X_POSTED;
    while (b->xstate == BOOT_X_POSTED || b->xstate == BOOT_X_RUNNING)
        pthread_cond_wait(&b->cond, &b->lock);
    const int ok = b->xstate == BOOT_X_DONE;
    b->xstate = BOOT_X_IDLE;
    pthread_mutex_unlock(&b->lock);
    return ok ? 0 : -1;
}

static void *boot_main(void *arg)
{
    struct mca_coll_dfccl_boot_t *b = arg;
    dfcclComm_t ecomm = NULL;
    dfcclResult_t res = dfcclInternalError;
    pthread_mutex_lock(&b->lock);
    while (b->gate == BOOT_GATE_CLOSED)
        pthread_cond_wait(&b->cond, &b->lock);
    const bool go = b->gate == BOOT_GATE_OPEN && !b->abort;
    pthread_mutex_unlock(&b->lock);
    if (go) {
        mca_coll_dfccl_cuda_use_context(b->cuda_ctx);
        res = dfcclCommInitConfig(&ecomm, b->m->size, b->m->rank, boot_allgather, b,
                                  &mca_coll_dfccl_component.config);
    }
    pthread_mutex_lock(&b->lock);
    if (!go && !b->lost)
        snprintf(b->err, sizeof(b->err),
                 "a rank could not start its set-up (a thread or the teardown attribute)");
    b->res = res;
    b->ecomm = res == dfcclSuccess ? ecomm : NULL;
    if (res != dfcclSuccess && go && !b->lost) /* the engine's message is this thread's */
        snprintf(b->err, sizeof(b->err), "%s", dfcclGetLastError());
    b->finished = true;
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

static void boot_free(struct mca_coll_dfccl_boot_t *b)
{
    free(b->statuses);
    pthread_mutex_destroy(&b->lock);
    pthread_cond_destroy(&b->cond);
    free(b);
}

void mca_coll_dfccl_engine_begin(mca_coll_dfccl_module_t *m)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;

    if (m->engine != MCA_COLL_DFCCL_ENGINE_NONE)
        return;
    /* local failures here are out-of-memory class; everything that can differ
     * between ranks is decided inside dfcclCommInit, the same way on every rank */
    struct mca_coll_dfccl_boot_t *b = mca_coll_dfccl_setup() == OMPI_SUCCESS ? calloc(1, sizeof(*b)) : NULL;
    if (b && !(b->statuses = calloc((size_t)m->size, sizeof(int32_t)))) {
        free(b);
        b = NULL;
    }
    if (!b) { /* a few hundred bytes: nothing else would work either */
        DFCCL_ERROR("no memory for the engine set-up of %s (cid %u)", m->comm->c_name, m->comm->c_contextid);
        __atomic_store_n(&m->engine, MCA_COLL_DFCCL_ENGINE_FAILED, __ATOMIC_RELEASE);
        return;
    }
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->cond, NULL);
    b->m = m;
    b->cuda_ctx = mca_coll_dfccl_cuda_context();
    clock_gettime(CLOCK_MONOTONIC, &b->t0);
    /* the teardown attribute first: an MPI_Comm_free during the set-up finds it */
    if (ompi_attr_set_c(COMM_ATTR, m->comm, &m->comm->c_keyhash, cm->keyval, m, false) == OMPI_SUCCESS)
        m->attr_set = true;
    else
        DFCCL_ERROR("could not set the teardown attribute on %s (cid %u)", m->comm->c_name,
                    m->comm->c_contextid);
    int e = pthread_create(&b->thread, NULL, boot_main, b);
    if (e)
        DFCCL_ERROR("no thread for the engine set-up of %s (cid %u): %s", m->comm->c_name,
                    m->comm->c_contextid, strerror(e));
    b->thread_started = e == 0;
    /* whatever failed, this rank takes part in the first exchange: its status fails all */
    b->status = m->attr_set && b->thread_started ? 0 : -1;
    b->send = &b->status;
    b->recv = b->statuses;
    b->bytes = sizeof(int32_t);
    b->xstate = BOOT_X_POSTED;
    OPAL_THREAD_LOCK(&cm->lock);
    m->boot = b;
    __atomic_store_n(&m->engine, MCA_COLL_DFCCL_ENGINE_SETUP, __ATOMIC_RELEASE);
    mca_coll_dfccl_module_wait_locked(m);
    OPAL_THREAD_UNLOCK(&cm->lock);
    DFCCL_VERBOSE(2, "engine communicator for %s (cid %u, rank %d of %d): set-up started", m->comm->c_name,
                  m->comm->c_contextid, m->rank, m->size);
}

/* The set-up thread returned: the communicator is live or has failed, on every rank. */
static void boot_finish(mca_coll_dfccl_module_t *m, struct mca_coll_dfccl_boot_t *b)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;
    static bool failure_reported;

    if (b->thread_started)
        pthread_join(b->thread, NULL);
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const double ms = (double)(t1.tv_sec - b->t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - b->t0.tv_nsec) / 1e6;
    OPAL_THREAD_LOCK(&cm->lock);
    m->boot = NULL;
    if (b->res == dfcclSuccess) {
        m->ecomm = b->ecomm;
        m->live_next = cm->live;
        cm->live = m;
        __atomic_store_n(&m->engine, MCA_COLL_DFCCL_ENGINE_LIVE, __ATOMIC_RELEASE);
    } else if (b->lost && !b->abort) {
        /* no fallback: the previous module would wait for the dead rank forever */
        snprintf(m->lost, sizeof(m->lost), "%.255s", b->err);
        __atomic_store_n(&m->engine, MCA_COLL_DFCCL_ENGINE_LOST, __ATOMIC_RELEASE);
    } else {
        __atomic_store_n(&m->engine, MCA_COLL_DFCCL_ENGINE_FAILED, __ATOMIC_RELEASE);
    }
    OPAL_THREAD_UNLOCK(&cm->lock);
    if (b->res == dfcclSuccess) {
        DFCCL_VERBOSE(2,
                      "engine communicator created for %s (cid %u, rank %d of %d) in %.2f ms, %d exchanges",
                      m->comm->c_name, m->comm->c_contextid, m->rank, m->size, ms, b->rounds);
    } else if (b->abort) { /* finalize stopped it: nothing went wrong */
        DFCCL_VERBOSE(1, "engine set-up of %s (cid %u) stopped at finalize", m->comm->c_name,
                      m->comm->c_contextid);
    } else if (b->lost) { /* every time: each such communicator's calls fail from now on */
        DFCCL_ERROR("engine set-up of %s (cid %u, rank %d of %d) failed after %.0f ms: %s; its collectives "
                    "fail with MPI_ERR_OTHER",
                    m->comm->c_name, m->comm->c_contextid, m->rank, m->size, ms, b->err);
    } else if (!failure_reported) { /* once per process; every time at verbose 1 */
        failure_reported = true;
        DFCCL_ERROR("no engine communicator for %s (cid %u): %s; its collectives go to the previous module",
                    m->comm->c_name, m->comm->c_contextid, b->err);
    } else {
        DFCCL_VERBOSE(1, "no engine communicator for %s (cid %u): %s", m->comm->c_name, m->comm->c_contextid,
                      b->err);
    }
    boot_free(b);
}

bool mca_coll_dfccl_engine_advance(mca_coll_dfccl_module_t *m)
{
    struct mca_coll_dfccl_boot_t *b = m->boot;
    if (!b)
        return true;
    pthread_mutex_lock(&b->lock);
    if (b->xstate == BOOT_X_POSTED) {
        const int rc = mca_coll_dfccl_xchg_start(&b->x, m->comm, MCA_COLL_DFCCL_TAG_BOOT, b->send, b->bytes);
        if (rc == OMPI_SUCCESS) {
            b->x.watch = &m->watch; /* a peer that dies now must not leave us waiting */
            b->x.what = "the engine set-up";
            b->xstate = BOOT_X_RUNNING;
        } else if (rc != OMPI_ERR_OUT_OF_RESOURCE) {
            /* out of memory is tried again at the next progress: a rank that left the
             * exchange would leave the others waiting in it */
            b->xstate = BOOT_X_FAILED;
            pthread_cond_broadcast(&b->cond);
        }
    }
    if (b->xstate == BOOT_X_RUNNING && mca_coll_dfccl_xchg_test(&b->x)) {
        if (b->x.rc == OMPI_SUCCESS) {
            mca_coll_dfccl_xchg_result(&b->x, b->recv);
        } else if (b->x.lost_rank >= 0 || b->x.timed_out) {
            char why[160];
            mca_coll_dfccl_xchg_why(&b->x, why, sizeof why);
            snprintf(b->err, sizeof(b->err), "%s (exchange %d of the set-up)", why, b->rounds + 1);
            b->lost = true; /* said by boot_finish */
        } else {
            DFCCL_ERROR("engine set-up exchange on %s (cid %u) failed: MPI error %d", m->comm->c_name,
                        m->comm->c_contextid, b->x.rc);
        }
        b->xstate = b->x.rc == OMPI_SUCCESS ? BOOT_X_DONE : BOOT_X_FAILED;
        mca_coll_dfccl_xchg_fini(&b->x);
        if (b->gate == BOOT_GATE_CLOSED) {
            /* the status exchange: the set-up threads start only if every rank's can */
            bool all = b->xstate == BOOT_X_DONE;
            for (int i = 0; i < m->size && all; i++)
                all = b->statuses[i] == 0;
            b->gate = all ? BOOT_GATE_OPEN : BOOT_GATE_ABORT;
            b->xstate = BOOT_X_IDLE;
            if (!b->thread_started) {
                b->res = dfcclInternalError;
                snprintf(b->err, sizeof(b->err), "no thread for the set-up on this rank");
                b->finished = true;
            }
        }
        pthread_cond_broadcast(&b->cond);
    }
    const bool finished = b->finished;
    pthread_mutex_unlock(&b->lock);
    if (finished)
        boot_finish(m, b);
    return finished;
}

void mca_coll_dfccl_engine_abort(mca_coll_dfccl_module_t *m)
{
    struct mca_coll_dfccl_boot_t *b = m->boot;
    if (!b)
        return;
    pthread_mutex_lock(&b->lock);
    b->abort = true;
    if (b->xstate == BOOT_X_POSTED || b->xstate == BOOT_X_RUNNING) {
        /* an exchange in flight keeps its buffer: left to the PML */
        b->xstate = BOOT_X_FAILED;
    }
    if (b->gate == BOOT_GATE_CLOSED)
        b->gate = BOOT_GATE_ABORT;
    if (!b->thread_started)
        b->finished = true;
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
    boot_finish(m, b); /* joins: every later all-gather of the set-up fails at once */
}

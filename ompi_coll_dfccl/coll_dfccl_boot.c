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
    bool abort;    /**< finalize: every further all-gather fails */
    bool finished; /**< dfcclCommInit returned */
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
    mca_coll_dfccl_cuda_use_context(b->cuda_ctx);
    dfcclResult_t res = dfcclCommInit(&ecomm, b->m->size, b->m->rank, boot_allgather, b);
    pthread_mutex_lock(&b->lock);
    b->res = res;
    b->ecomm = res == dfcclSuccess ? ecomm : NULL;
    if (res != dfcclSuccess) /* the engine's message is this thread's */
        snprintf(b->err, sizeof(b->err), "%s", dfcclGetLastError());
    b->finished = true;
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

static void boot_free(struct mca_coll_dfccl_boot_t *b)
{
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
    if (!b) {
        m->engine = MCA_COLL_DFCCL_ENGINE_FAILED;
        return;
    }
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->cond, NULL);
    b->m = m;
    b->cuda_ctx = mca_coll_dfccl_cuda_context();
    clock_gettime(CLOCK_MONOTONIC, &b->t0);
    /* the teardown attribute first: an MPI_Comm_free during the set-up finds it */
    if (ompi_attr_set_c(COMM_ATTR, m->comm, &m->comm->c_keyhash, cm->keyval, m, false) != OMPI_SUCCESS) {
        DFCCL_ERROR("could not set the teardown attribute on %s (cid %u)", m->comm->c_name,
                    m->comm->c_contextid);
        boot_free(b);
        m->engine = MCA_COLL_DFCCL_ENGINE_FAILED;
        return;
    }
    m->attr_set = true;
    int e = pthread_create(&b->thread, NULL, boot_main, b);
    if (e) {
        DFCCL_ERROR("no thread for the engine set-up of %s (cid %u): %s", m->comm->c_name,
                    m->comm->c_contextid, strerror(e));
        boot_free(b);
        m->engine = MCA_COLL_DFCCL_ENGINE_FAILED;
        return;
    }
    OPAL_THREAD_LOCK(&cm->lock);
    m->boot = b;
    m->engine = MCA_COLL_DFCCL_ENGINE_SETUP;
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

    pthread_join(b->thread, NULL);
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const double ms = (double)(t1.tv_sec - b->t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - b->t0.tv_nsec) / 1e6;
    OPAL_THREAD_LOCK(&cm->lock);
    m->boot = NULL;
    if (b->res == dfcclSuccess) {
        m->ecomm = b->ecomm;
        m->engine = MCA_COLL_DFCCL_ENGINE_LIVE;
        m->live_next = cm->live;
        cm->live = m;
    } else {
        m->engine = MCA_COLL_DFCCL_ENGINE_FAILED;
    }
    OPAL_THREAD_UNLOCK(&cm->lock);
    if (b->res == dfcclSuccess) {
        DFCCL_VERBOSE(2,
                      "engine communicator created for %s (cid %u, rank %d of %d) in %.2f ms, %d exchanges",
                      m->comm->c_name, m->comm->c_contextid, m->rank, m->size, ms, b->rounds);
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
        if (mca_coll_dfccl_xchg_start(&b->x, m->comm, MCA_COLL_DFCCL_TAG_BOOT, b->send, b->bytes) ==
            OMPI_SUCCESS) {
            b->xstate = BOOT_X_RUNNING;
        } else {
            b->xstate = BOOT_X_FAILED;
            pthread_cond_signal(&b->cond);
        }
    }
    if (b->xstate == BOOT_X_RUNNING && mca_coll_dfccl_xchg_test(&b->x)) {
        if (b->x.rc == OMPI_SUCCESS)
            mca_coll_dfccl_xchg_result(&b->x, b->recv);
        else
            DFCCL_ERROR("engine set-up exchange on %s (cid %u) failed: MPI error %d", m->comm->c_name,
                        m->comm->c_contextid, b->x.rc);
        b->xstate = b->x.rc == OMPI_SUCCESS ? BOOT_X_DONE : BOOT_X_FAILED;
        mca_coll_dfccl_xchg_fini(&b->x);
        pthread_cond_signal(&b->cond);
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
        pthread_cond_signal(&b->cond);
    }
    pthread_mutex_unlock(&b->lock);
    boot_finish(m, b); /* joins: every later all-gather of the set-up fails at once */
}

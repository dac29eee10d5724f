/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Requests and progress: the request class and pool, the list of non-blocking calls
 * the progress callback completes, the modules whose set-up or queue it advances, and
 * the wait of a blocking call.
 */
#include "ompi_config.h"

#include <sched.h>

#include "ompi/constants.h"
#include "opal/runtime/opal_progress.h"

#include "coll_dfccl.h"
#include "coll_dfccl_common.h"
#include "coll_dfccl_stage.h"

static int dfccl_req_free(struct ompi_request_t **request)
{
    mca_coll_dfccl_req_t *req = (mca_coll_dfccl_req_t *)*request;
    if (!REQUEST_COMPLETE(&req->super.super))
        return MPI_ERR_REQUEST; /* MPI forbids freeing an active collective request */
    OMPI_REQUEST_FINI(&req->super.super);
    opal_free_list_return(&mca_coll_dfccl_component.requests, &req->super.super.super);
    *request = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

static int dfccl_req_cancel(struct ompi_request_t *request, int complete)
{
    (void)request;
    (void)complete;
    return MPI_ERR_REQUEST; /* collectives can't be cancelled */
}

/* parent: ompi_coll_base_nbc_request_t_class (its constructor clears data.objs) */
OBJ_CLASS_INSTANCE(mca_coll_dfccl_req_t, ompi_coll_base_nbc_request_t, NULL, NULL);

mca_coll_dfccl_req_t *mca_coll_dfccl_req_get(mca_coll_dfccl_module_t *m)
{
    if (!mca_coll_dfccl_component.engine_ready && mca_coll_dfccl_setup() != OMPI_SUCCESS)
        return NULL;
    opal_free_list_item_t *item = opal_free_list_get(&mca_coll_dfccl_component.requests);
    if (!item)
        return NULL;
    mca_coll_dfccl_req_t *req = (mca_coll_dfccl_req_t *)item;
    ompi_request_t *r = &req->super.super;
    OMPI_REQUEST_INIT(r, false);
    r->req_state = OMPI_REQUEST_ACTIVE;
    r->req_type = OMPI_REQUEST_COLL;
    r->req_status = ompi_status_empty;
    r->req_status.MPI_ERROR = MPI_SUCCESS;
    r->req_free = dfccl_req_free;
    r->req_cancel = dfccl_req_cancel;
    r->req_mpi_object.comm = m->comm;
    req->super.data.objs[0] = req->super.data.objs[1] = NULL;
    req->next = req->queue_next = NULL;
    req->module = m;
    mca_coll_dfccl_op_init(&req->op);
    req->stage = MCA_COLL_DFCCL_REQ_STARTED;
    req->blocking = false;
    req->checked = true;
    req->desc = NULL;
    req->check = NULL;
    req->sched = NULL;
    req->pcoll = 0;
    return req;
}

void mca_coll_dfccl_req_put(mca_coll_dfccl_req_t *req)
{
    OMPI_REQUEST_FINI(&req->super.super);
    opal_free_list_return(&mca_coll_dfccl_component.requests, &req->super.super.super);
}

void mca_coll_dfccl_req_start(mca_coll_dfccl_req_t *req)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;
    /* the communicator (and so the module) lives until the request completes, even
     * past an MPI_Comm_free, as point-to-point requests keep theirs */
    OBJ_RETAIN(req->module->comm);
    OPAL_THREAD_LOCK(&cm->lock);
    req->module->outstanding++;
    req->next = cm->active;
    cm->active = req;
    OPAL_THREAD_UNLOCK(&cm->lock);
}

/* A completed request: finish the call, then let MPI see it. */
static void req_complete(mca_coll_dfccl_req_t *req, int rc)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;
    mca_coll_dfccl_module_t *m = req->module;
    struct ompi_communicator_t *comm = m->comm;
    bool destroy = false;

    if (req->sched) { /* a non-blocking fallback: its fold, then its memory */
        rc = mca_coll_dfccl_sched_finish(req->sched, rc);
        req->sched = NULL;
    }
    rc = mca_coll_dfccl_op_finish(&req->op, rc);
    OPAL_THREAD_LOCK(&cm->lock);
    destroy = --m->outstanding == 0 && m->destroy_pending;
    OPAL_THREAD_UNLOCK(&cm->lock);
    if (destroy) /* the communicator was freed while this call was running */
        mca_coll_dfccl_engine_destroy(m);
    req->super.super.req_status.MPI_ERROR = rc;
    ompi_request_complete(&req->super.super, true);
    OBJ_RELEASE(comm); /* may destruct the communicator and the module: last */
}

void mca_coll_dfccl_module_wait_locked(mca_coll_dfccl_module_t *m)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;
    if (m->waiting)
        return;
    /* the list holds the communicator (and so the module) until the module leaves it:
     * a thread advancing it never finds it freed under it */
    OBJ_RETAIN(m->comm);
    m->waiting = true;
    m->wait_next = cm->waiting;
    cm->waiting = m;
}

/* Engine set-ups and queues: one thread at a time advances them (a re-entered
 * progress call, or another thread's, skips). Each module leaves the list once its
 * set-up is over and its queue empty. */
static void advance_waiting(void)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;
    int32_t idle = 0;

    if (!__atomic_load_n(&cm->waiting, __ATOMIC_ACQUIRE) ||
        !__atomic_compare_exchange_n(&cm->advancing, &idle, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return;
    OPAL_THREAD_LOCK(&cm->lock);
    mca_coll_dfccl_module_t *list = cm->waiting;
    cm->waiting = NULL;
    OPAL_THREAD_UNLOCK(&cm->lock);
    while (list) {
        mca_coll_dfccl_module_t *m = list;
        list = m->wait_next;
        m->wait_next = NULL;
        const bool setup_over = mca_coll_dfccl_engine_advance(m);
        mca_coll_dfccl_queue_advance(m);
        bool leaves = false;
        OPAL_THREAD_LOCK(&cm->lock);
        if (!setup_over || m->queue_head) {
            m->wait_next = cm->waiting;
            cm->waiting = m;
        } else {
            m->waiting = false;
            leaves = true;
        }
        OPAL_THREAD_UNLOCK(&cm->lock);
        if (leaves) /* may destruct a freed communicator and its module: last */
            OBJ_RELEASE(m->comm);
    }
    __atomic_store_n(&cm->advancing, 0, __ATOMIC_RELEASE);
}

int mca_coll_dfccl_progress(void)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;
    mca_coll_dfccl_req_t *done = NULL;
    int completed = 0, on_cpu = 0;

    advance_waiting();
    if (!cm->active)
        return 0;
    OPAL_THREAD_LOCK(&cm->lock);
    for (mca_coll_dfccl_req_t **pp = &cm->active; *pp;) {
        mca_coll_dfccl_req_t *req = *pp;
        int finished = 0;
        const mca_coll_dfccl_req_stage_t stage = __atomic_load_n(&req->stage, __ATOMIC_ACQUIRE);
        if (stage != MCA_COLL_DFCCL_REQ_STARTED) { /* waits in its module's queue */
            pp = &req->next;
            continue;
        }
        int rc = req->op.rc; /* after the stage's acquire: the queue set it before STARTED */
        on_cpu |= req->op.ereq && !mca_coll_dfccl_op_on_gpu(&req->op);
        if (rc != OMPI_SUCCESS) {
            finished = 1;
            if (req->op.inner && !REQUEST_COMPLETE(req->op.inner)) {
                /* coll_dfccl_check refused it while the previous module ran it: that
                 * call may never finish (the ranks disagree), so it is left behind with
                 * its buffers (an erroneous program's leak, never freed under it) */
                req->op.inner = NULL;
                req->op.nstage = 0;
            } else if (req->op.inner) {
                ompi_request_free(&req->op.inner);
            }
        } else if (req->op.ereq) {
            dfcclResult_t res = dfcclTest(&req->op.ereq, &finished);
            if (res != dfcclSuccess) {
                /* the engine logged why (timeout, abort); its last-error text belongs
                 * to whatever call this thread made last */
                finished = 1;
                DFCCL_ERROR("non-blocking collective on %s (cid %u) failed on the engine: %s",
                            req->module->comm->c_name, req->module->comm->c_contextid,
                            dfcclGetErrorString(res));
                rc = mca_coll_dfccl_result_to_mpi(res);
            }
        } else if (req->sched) {
            finished = mca_coll_dfccl_sched_test(req->sched); /* flags only: finished outside the lock */
        } else if (req->op.inner) {
            /* read the flag, not ompi_request_test: that would re-enter opal_progress */
            finished = REQUEST_COMPLETE(req->op.inner);
            if (finished) {
                rc = req->op.inner->req_status.MPI_ERROR;
                ompi_request_free(&req->op.inner);
            }
        } else {
            finished = 1;
        }
        if (finished) {
            *pp = req->next;
            req->next = done;
            req->op.rc = rc;
            done = req;
        } else {
            pp = &req->next;
        }
    }
    OPAL_THREAD_UNLOCK(&cm->lock);

    if (!done) {
        /* engine work pending on the CPU daemon and none finished: its thread runs on
         * this machine's cores too, and an MPI_Wait spinning here would hold one (the
         * GPU daemon needs no core: a yield there only delays seeing the completion) */
        if (on_cpu)
            sched_yield();
        return 0;
    }
    /* outside the lock: completion may run callbacks and free communicators */
    while (done) {
        mca_coll_dfccl_req_t *req = done;
        done = req->next;
        req->next = NULL;
        req_complete(req, req->op.rc);
        completed++;
    }
    return completed;
}

int mca_coll_dfccl_op_wait(mca_coll_dfccl_op_t *op)
{
    int rc = op->rc;
    if (op->ereq) {
        int done = 0;
        dfcclResult_t res;
        /* the engine runs on its own; opal_progress keeps MPI (and our other
         * non-blocking calls) moving meanwhile */
        while ((res = dfcclTest(&op->ereq, &done)) == dfcclSuccess && !done) {
            opal_progress();
            if (!mca_coll_dfccl_op_on_gpu(op))
                sched_yield(); /* the CPU daemon's thread may need this core */
        }
        if (res != dfcclSuccess) {
            DFCCL_ERROR("collective failed on the engine: %s", dfcclGetErrorString(res));
            rc = mca_coll_dfccl_result_to_mpi(res);
        }
    }
    return mca_coll_dfccl_op_finish(op, rc);
}

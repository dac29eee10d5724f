/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The component's runtime: what the process sets up before its first engine
 * communicator or request (the engine's configuration, the teardown attribute, the
 * request class and pool, the progress callback), and the progress callback itself: it
 * completes the non-blocking calls on the component's active list and advances the
 * modules on its waiting list. It calls the files above it only through the hooks they
 * registered (mca_coll_dfccl_hooks_t): the set-up's advance (coll_dfccl_boot.c), the
 * module queue's (coll_dfccl_call.c), the non-blocking fallbacks' test and finish
 * (coll_dfccl_nbsched.c).
 */
#include "ompi_config.h"

#include <sched.h>

#include "ompi/attribute/attribute.h"
#include "ompi/constants.h"
#include "opal/runtime/opal_progress.h"

#include "coll_dfccl.h"
#include "coll_dfccl_common.h"
#include "coll_dfccl_stage.h"

/* parent: ompi_coll_base_nbc_request_t_class (its constructor clears data.objs) */
OBJ_CLASS_INSTANCE(mca_coll_dfccl_req_t, ompi_coll_base_nbc_request_t, NULL, NULL);

/* A completed request: finish the call, then let MPI see it. */
static void req_complete(mca_coll_dfccl_req_t *req, int rc)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;
    mca_coll_dfccl_module_t *m = req->module;
    struct ompi_communicator_t *comm = m->comm;
    bool destroy = false;

    if (req->sched) { /* a non-blocking fallback: its fold, then its memory */
        rc = cm->hooks.sched_finish(req->sched, rc);
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
        const bool setup_over = cm->hooks.setup_advance(m);
        cm->hooks.queue_advance(m);
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

static int progress(void)
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
            finished = cm->hooks.sched_test(req->sched); /* flags only: finished outside the lock */
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

/* Before the first engine communicator or request of the process: the engine's
 * configuration from the explicitly set knobs, then what engine calls need. */
int mca_coll_dfccl_setup(void)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;
    int rc = OMPI_SUCCESS;

    OPAL_THREAD_LOCK(&cm->lock);
    if (cm->engine_ready)
        goto out;

    mca_coll_dfccl_engine_config(&cm->config);

    ompi_attribute_fn_ptr_union_t copy_fn, del_fn;
    copy_fn.attr_communicator_copy_fn = mca_coll_dfccl_attr_copy;
    del_fn.attr_communicator_delete_fn = mca_coll_dfccl_attr_delete;
    if (cm->keyval == MPI_KEYVAL_INVALID &&
        ompi_attr_create_keyval(COMM_ATTR, copy_fn, del_fn, &cm->keyval, NULL, 0, NULL) != OMPI_SUCCESS) {
        DFCCL_ERROR("could not create the communicator keyval");
        cm->keyval = MPI_KEYVAL_INVALID;
        rc = OMPI_ERROR;
        goto out;
    }

    OBJ_CONSTRUCT(&cm->requests, opal_free_list_t);
    rc = opal_free_list_init(&cm->requests, sizeof(mca_coll_dfccl_req_t), opal_cache_line_size,
                             OBJ_CLASS(mca_coll_dfccl_req_t), 0, 0, 8, -1, 8, NULL, 0, NULL, NULL, NULL);
    if (rc != OPAL_SUCCESS) {
        OBJ_DESTRUCT(&cm->requests);
        DFCCL_ERROR("could not create the request free list");
        goto out;
    }
    opal_progress_register(progress);
    cm->engine_ready = true;
    DFCCL_VERBOSE(1, "engine set up (dfccl %d.%d.%d)", DFCCL_MAJOR, DFCCL_MINOR, DFCCL_PATCH);
out:
    OPAL_THREAD_UNLOCK(&cm->lock);
    return rc;
}

static void engine_shutdown(void)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;

    if (!cm->engine_ready)
        return;
    opal_progress_unregister(progress);
    /* set-ups still in flight (communicators never freed): stopped; their list reference
     * stays (the communicators can't be destructed once the PML is gone) */
    while (cm->waiting) {
        mca_coll_dfccl_module_t *m = cm->waiting;
        cm->waiting = m->wait_next;
        m->wait_next = NULL;
        m->waiting = false;
        cm->hooks.setup_abort(m);
    }
    /* communicators never freed: their engine side must go before the library */
    while (cm->live)
        mca_coll_dfccl_engine_destroy(cm->live);
    if (cm->active)
        DFCCL_ERROR("non-blocking collectives still pending at MPI_Finalize");
    cm->active = NULL;
    OBJ_DESTRUCT(&cm->requests);
    cm->engine_ready = false;
}

void mca_coll_dfccl_hooks_register(const mca_coll_dfccl_hooks_t *hooks)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;
    cm->hooks = *hooks;
    cm->shutdown = engine_shutdown;
}

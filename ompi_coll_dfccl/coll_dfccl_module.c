/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Module life cycle and the machinery every collective shares: comm_query, enable
 * (saving the previous modules), the lazily created engine communicator and its
 * teardown from a communicator attribute, the request class, the progress callback,
 * staging, and coll_dfccl_check.
 */
#include "ompi_config.h"

#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/attribute/attribute.h"
#include "ompi/constants.h"
#include "ompi/mca/coll/base/base.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/runtime/opal_progress.h"

#include "coll_dfccl.h"
#include "coll_dfccl_common.h"

const char *const mca_coll_dfccl_coll_names[] = {
    "?",         "Allreduce", "Reduce",  "Bcast",   "Allgather", "Reduce_scatter_block", "Reduce_scatter",
    "Alltoall",  "Gather",    "Gatherv", "Scatter", "Scatterv",  "Allgatherv",           "Alltoallv",
    "Alltoallw", "Scan",      "Exscan"};
const char *const mca_coll_dfccl_path_names[] = {"previous module", "engine",
                                                 "previous module (staged through host)"};

static int mca_coll_dfccl_module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm);
static int mca_coll_dfccl_module_disable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm);
static void engine_destroy(mca_coll_dfccl_module_t *m);

/* ------------------------------------------------------------------ module object */

#define DFCCL_RELEASE_PREV(_m, _api)                                                                         \
    do {                                                                                                     \
        /* the module itself stands for dfccl's own fallbacks: never retained */                             \
        if ((_m)->previous_##_api##_module && (_m)->previous_##_api##_module != &(_m)->super)                \
            OBJ_RELEASE((_m)->previous_##_api##_module);                                                     \
        (_m)->previous_##_api##_module = NULL;                                                               \
        (_m)->previous_##_api = NULL;                                                                        \
    } while (0)

static void release_previous(mca_coll_dfccl_module_t *m)
{
#define DFCCL_RELEASE_ONE(_api) DFCCL_RELEASE_PREV(m, _api);
    MCA_COLL_DFCCL_COLLS(DFCCL_RELEASE_ONE)
#undef DFCCL_RELEASE_ONE
}

static void mca_coll_dfccl_module_construct(mca_coll_dfccl_module_t *m)
{
    memset((char *)m + sizeof(m->super), 0, sizeof(*m) - sizeof(m->super));
}

static void mca_coll_dfccl_module_destruct(mca_coll_dfccl_module_t *m)
{
    /* a set-up in flight holds the communicator through the waiting list, so none is
     * here but at finalize, for a communicator never freed */
    if (m->engine == MCA_COLL_DFCCL_ENGINE_SETUP)
        mca_coll_dfccl_engine_abort(m);
    /* a communicator released without MPI_Comm_free (one leaked until finalize) */
    if (m->engine == MCA_COLL_DFCCL_ENGINE_LIVE)
        engine_destroy(m);
    release_previous(m);
    /* as coll/ucc: the keyval goes with MPI_COMM_WORLD, whose attributes are deleted
     * before it is destructed */
    if (m->comm == &ompi_mpi_comm_world.comm && mca_coll_dfccl_component.keyval != MPI_KEYVAL_INVALID) {
        ompi_attr_free_keyval(COMM_ATTR, &mca_coll_dfccl_component.keyval, false);
        mca_coll_dfccl_component.keyval = MPI_KEYVAL_INVALID;
    }
}

OBJ_CLASS_INSTANCE(mca_coll_dfccl_module_t, mca_coll_base_module_t, mca_coll_dfccl_module_construct,
                   mca_coll_dfccl_module_destruct);

/* ------------------------------------------------------------------ query / enable */

int mca_coll_dfccl_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    (void)enable_progress_threads;
    (void)enable_mpi_threads;
    return OMPI_SUCCESS;
}

/* dfccl has no algorithms for intercommunicators: when it is the only coll component,
 * Open MPI's own message ("none of them said that they could be used") would not say
 * what to do. Said once per process. */
static void inter_alone(struct ompi_communicator_t *comm)
{
    static bool said;
    if (said || opal_list_get_size(&ompi_coll_base_framework.framework_components) > 1)
        return;
    said = true;
    DFCCL_ERROR("dfccl is the only coll component, and it does not serve intercommunicators (%s%scid %u): "
                "name the components that do too (--mca coll dfccl,inter,basic,libnbc,self)",
                comm->c_name, comm->c_name[0] ? ", " : "", comm->c_contextid);
}

mca_coll_base_module_t *mca_coll_dfccl_comm_query(struct ompi_communicator_t *comm, int *priority)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;

    *priority = 0;
    /* size-1 communicators too: coll/self would memcpy a device buffer on the host (Open
     * MPI here is not CUDA-aware); the engine runs them as a one-rank copy */
    if (!cm->enable)
        return NULL;
    const bool inter = OMPI_COMM_IS_INTER(comm);
    if (inter && opal_list_get_size(&ompi_coll_base_framework.framework_components) == 1) {
        inter_alone(comm);
        return NULL;
    }

    mca_coll_dfccl_module_t *m = OBJ_NEW(mca_coll_dfccl_module_t);
    if (!m)
        return NULL;
    m->comm = comm;
    m->rank = ompi_comm_rank(comm);
    /* an intercommunicator's v-arrays and blocks count the remote group */
    m->size = inter ? ompi_comm_remote_size(comm) : ompi_comm_size(comm);
    m->lsize = ompi_comm_size(comm);
    m->inter = inter;
    m->super.coll_module_enable = mca_coll_dfccl_module_enable;
    m->super.coll_module_disable = mca_coll_dfccl_module_disable;
#define DFCCL_TAKE(_api) m->super.coll_##_api = mca_coll_dfccl_##_api;
    MCA_COLL_DFCCL_COLLS(DFCCL_TAKE)
#undef DFCCL_TAKE
    if (inter) { /* not defined on intercommunicators */
        m->super.coll_scan = NULL;
        m->super.coll_iscan = NULL;
        m->super.coll_exscan = NULL;
        m->super.coll_iexscan = NULL;
    }
    *priority = cm->priority;
    return &m->super;
}

/* Modules are enabled in increasing priority: every slot already holds the module
 * that will serve what dfccl passes on, or none, when dfccl is the only coll component
 * (then dfccl's own fallbacks take its place: coll_dfccl_fallback.c). */
#define DFCCL_SAVE_PREV(_m, _comm, _api)                                                                     \
    do {                                                                                                     \
        if ((_m)->inter && (!(_comm)->c_coll->coll_##_api || !(_comm)->c_coll->coll_##_api##_module)) {      \
            /* an intercommunicator: dfccl only stages for others; none here, nor dfccl */                   \
            (_m)->super.coll_##_api = NULL;                                                                  \
            break;                                                                                           \
        }                                                                                                    \
        if (!(_comm)->c_coll->coll_##_api || !(_comm)->c_coll->coll_##_api##_module) {                       \
            /* none (dfccl alone): its own fallback plays the previous module */                             \
            (_m)->previous_##_api = mca_coll_dfccl_fb_##_api;                                                \
            (_m)->previous_##_api##_module = &(_m)->super;                                                   \
            fallbacks++;                                                                                     \
            break;                                                                                           \
        }                                                                                                    \
        (_m)->previous_##_api = (_comm)->c_coll->coll_##_api;                                                \
        (_m)->previous_##_api##_module = (_comm)->c_coll->coll_##_api##_module;                              \
        OBJ_RETAIN((_m)->previous_##_api##_module);                                                          \
    } while (0)

static int mca_coll_dfccl_module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    int fallbacks = 0;

#define DFCCL_SAVE_ONE(_api) DFCCL_SAVE_PREV(m, comm, _api);
    MCA_COLL_DFCCL_COLLS(DFCCL_SAVE_ONE)
#undef DFCCL_SAVE_ONE
    /* barrier, reduce_local and the persistent forms dfccl takes only where nobody else does */
    if (!m->inter)
        fallbacks += mca_coll_dfccl_fallback_slots(m, comm);
    if (fallbacks) {
        if (mca_coll_dfccl_fallback_base_data(m) != OMPI_SUCCESS)
            return OMPI_ERR_OUT_OF_RESOURCE; /* the destructor releases what was saved */
        DFCCL_VERBOSE(2,
                      "%s (cid %u): %d collectives have no other component: dfccl's own fallbacks serve them",
                      comm->c_name, comm->c_contextid, fallbacks);
    }
    DFCCL_VERBOSE(2, "enabled on %s (cid %u, rank %d of %d)", comm->c_name, comm->c_contextid, m->rank,
                  m->size);
    /* coll_dfccl_eager: the set-up starts now instead of at the first engine call (it
     * does not block: the communicator is usable at once) */
    if (mca_coll_dfccl_component.eager && !m->inter)
        mca_coll_dfccl_engine_begin(m);
    return OMPI_SUCCESS;
}

/* Called once per slot the module holds while the communicator is torn down: the
 * first call releases, the others find nothing left. */
static int mca_coll_dfccl_module_disable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    (void)comm;
    release_previous((mca_coll_dfccl_module_t *)module);
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------ requests */

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
        engine_destroy(m);
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

/* ------------------------------------------------------------------ engine communicators */

int mca_coll_dfccl_engine_error(const char *what, dfcclResult_t res)
{
    DFCCL_ERROR("%s failed on the engine: %s (%s)", what, dfcclGetErrorString(res), dfcclGetLastError());
    return mca_coll_dfccl_result_to_mpi(res);
}

int mca_coll_dfccl_result_to_mpi(dfcclResult_t res)
{
    switch (res) {
    case dfcclInvalidArgument: return MPI_ERR_ARG;
    case dfcclNoMemory: return MPI_ERR_NO_MEM;
    case dfcclInternalError: return MPI_ERR_INTERN;
    default: return MPI_ERR_OTHER;
    }
}

static int dfccl_comm_attr_delete(MPI_Comm comm, int keyval, void *attr_val, void *extra_state)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)attr_val;
    bool now;
    (void)comm;
    (void)keyval;
    (void)extra_state;

    /* a set-up still in flight ends first, live or failed: the peers finish it from
     * their progress as this rank does from here, in whatever order they free their
     * communicators (the waiting list holds the communicator meanwhile) */
    for (;;) {
        OPAL_THREAD_LOCK(&cm->lock);
        bool setting_up = m->boot != NULL;
        OPAL_THREAD_UNLOCK(&cm->lock);
        if (!setting_up)
            break;
        opal_progress();
    }
    OPAL_THREAD_LOCK(&cm->lock);
    m->attr_set = false;
    now = m->outstanding == 0;
    if (!now) /* MPI_Comm_free lets pending calls finish: the last one destroys */
        m->destroy_pending = true;
    OPAL_THREAD_UNLOCK(&cm->lock);
    if (now)
        engine_destroy(m);
    return OMPI_SUCCESS;
}

/* The engine communicator belongs to one communicator: a duplicate gets none. */
static int dfccl_comm_attr_copy(MPI_Comm oldcomm, int keyval, void *extra_state, void *attr_in,
                                void *attr_out, int *flag, MPI_Comm newcomm)
{
    (void)oldcomm;
    (void)keyval;
    (void)extra_state;
    (void)attr_in;
    (void)attr_out;
    (void)newcomm;
    *flag = 0;
    return OMPI_SUCCESS;
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
    copy_fn.attr_communicator_copy_fn = dfccl_comm_attr_copy;
    del_fn.attr_communicator_delete_fn = dfccl_comm_attr_delete;
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
    opal_progress_register(mca_coll_dfccl_progress);
    cm->engine_ready = true;
    DFCCL_VERBOSE(1, "engine set up (dfccl %d.%d.%d)", DFCCL_MAJOR, DFCCL_MINOR, DFCCL_PATCH);
out:
    OPAL_THREAD_UNLOCK(&cm->lock);
    return rc;
}

static void engine_destroy(mca_coll_dfccl_module_t *m)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;
    dfcclComm_t ecomm;

    OPAL_THREAD_LOCK(&cm->lock);
    if (m->engine != MCA_COLL_DFCCL_ENGINE_LIVE) {
        OPAL_THREAD_UNLOCK(&cm->lock);
        return;
    }
    for (mca_coll_dfccl_module_t **pp = &cm->live; *pp; pp = &(*pp)->live_next)
        if (*pp == m) {
            *pp = m->live_next;
            break;
        }
    ecomm = m->ecomm;
    m->ecomm = NULL;
    m->live_next = NULL;
    m->engine = MCA_COLL_DFCCL_ENGINE_DESTROYED;
    m->destroy_pending = false;
    OPAL_THREAD_UNLOCK(&cm->lock);

    dfcclStats_t st;
    if (dfcclCommGetStats(ecomm, &st) == dfcclSuccess)
        DFCCL_VERBOSE(2,
                      "engine communicator of cid %u destroyed: %llu collectives, %llu preemptions, "
                      "%llu stalls (%.3f ms stalled)",
                      m->comm->c_contextid, (unsigned long long)st.completed,
                      (unsigned long long)st.preemptions, (unsigned long long)st.stalls, st.stall_ns / 1e6);
    dfcclResult_t res = dfcclCommDestroy(ecomm);
    if (res != dfcclSuccess)
        DFCCL_ERROR("dfcclCommDestroy: %s (%s)", dfcclGetErrorString(res), dfcclGetLastError());
}

void mca_coll_dfccl_engine_shutdown(void)
{
    mca_coll_dfccl_component_t *cm = &mca_coll_dfccl_component;

    if (!cm->engine_ready)
        return;
    opal_progress_unregister(mca_coll_dfccl_progress);
    /* set-ups still in flight (communicators never freed): stopped; their list reference
     * stays (the communicators can't be destructed once the PML is gone) */
    while (cm->waiting) {
        mca_coll_dfccl_module_t *m = cm->waiting;
        cm->waiting = m->wait_next;
        m->wait_next = NULL;
        m->waiting = false;
        mca_coll_dfccl_engine_abort(m);
    }
    /* communicators never freed: their engine side must go before the library */
    while (cm->live)
        engine_destroy(cm->live);
    if (cm->active)
        DFCCL_ERROR("non-blocking collectives still pending at MPI_Finalize");
    cm->active = NULL;
    OBJ_DESTRUCT(&cm->requests);
    cm->engine_ready = false;
}

/* ------------------------------------------------------------------ staging and completion */

int mca_coll_dfccl_stage_in(mca_coll_dfccl_op_t *op, void *user, ptrdiff_t lo, size_t len, bool copy_in,
                            size_t out_off, size_t out_len, void **view_p)
{
    if (op->nstage == (int)(sizeof(op->stage) / sizeof(op->stage[0])))
        return MPI_ERR_INTERN;
    char *host = mca_coll_dfccl_host_alloc(len);
    if (!host)
        return MPI_ERR_NO_MEM;
    mca_coll_dfccl_stage_t *s = &op->stage[op->nstage++];
    s->user = (char *)user + lo;
    s->host = host;
    s->out_off = out_off;
    s->out_len = out_len;
    if (copy_in && mca_coll_dfccl_copy(host, s->user, len) != OMPI_SUCCESS)
        return MPI_ERR_OTHER;
    *view_p = host - lo;
    return OMPI_SUCCESS;
}

int mca_coll_dfccl_stage_blocks(mca_coll_dfccl_op_t *op, void *buf, int n, size_t count, const int *counts,
                                const int *displs, bool displ_bytes, struct ompi_datatype_t *dtype,
                                struct ompi_datatype_t *const *dtypes, bool copy_in, bool copy_out,
                                void **view_p)
{
    ptrdiff_t lo = PTRDIFF_MAX, hi = PTRDIFF_MIN;
    *view_p = buf;
    if (!buf || buf == MPI_IN_PLACE)
        return OMPI_SUCCESS;
    for (int i = 0; i < (counts ? n : 1); i++) {
        struct ompi_datatype_t *dt = dtypes ? dtypes[i] : dtype;
        const size_t c = counts ? (size_t)(counts[i] > 0 ? counts[i] : 0) : count;
        if (!c)
            continue;
        ptrdiff_t lb, extent, blo;
        size_t blen;
        ompi_datatype_get_extent(dt, &lb, &extent);
        const ptrdiff_t base =
            displs ? (displ_bytes ? (ptrdiff_t)displs[i] : (ptrdiff_t)displs[i] * extent) : 0;
        mca_coll_dfccl_span(dt, c, &blo, &blen);
        if (!blen)
            continue;
        lo = base + blo < lo ? base + blo : lo;
        hi = base + blo + (ptrdiff_t)blen > hi ? base + blo + (ptrdiff_t)blen : hi;
    }
    if (lo >= hi)
        return OMPI_SUCCESS; /* nothing of it is touched */
    return mca_coll_dfccl_view(op, buf, lo, (size_t)(hi - lo), copy_in, 0, copy_out ? (size_t)(hi - lo) : 0,
                               view_p);
}

int mca_coll_dfccl_op_finish(mca_coll_dfccl_op_t *op, int rc)
{
    if (rc == OMPI_SUCCESS && op->move_len)
        memmove(op->move_dst, op->move_src, op->move_len);
    /* packed blocks are unpacked into their host views before those are copied back */
    rc = mca_coll_dfccl_packs_finish(op, rc);
    for (int i = 0; i < op->nstage; i++) {
        mca_coll_dfccl_stage_t *s = &op->stage[i];
        if (rc == OMPI_SUCCESS && s->out_len &&
            mca_coll_dfccl_copy((char *)s->user + s->out_off, s->host + s->out_off, s->out_len) !=
                OMPI_SUCCESS)
            rc = MPI_ERR_OTHER;
        mca_coll_dfccl_host_free(s->host);
    }
    op->nstage = 0;
    free(op->tmp);
    op->tmp = NULL;
    return rc;
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

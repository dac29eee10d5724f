/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Engine communicators: what the process sets up before its first one (configuration,
 * the teardown attribute, the request pool, the progress callback), their destruction
 * when the MPI communicator is freed or at finalize, and the mapping of engine results
 * to MPI error codes. Their non-blocking set-up is coll_dfccl_boot.c.
 */
#include "ompi_config.h"

#include "ompi/attribute/attribute.h"
#include "ompi/constants.h"
#include "opal/runtime/opal_progress.h"

#include "coll_dfccl.h"

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
        mca_coll_dfccl_engine_destroy(m);
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

void mca_coll_dfccl_engine_destroy(mca_coll_dfccl_module_t *m)
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
        DFCCL_VERBOSE(
            2,
            "engine communicator of cid %u destroyed: %llu collectives, %llu preemptions (%llu of "
            "them with nothing moved since the collective last ran), %.3f ms waited at peers before "
            "them",
            m->comm->c_contextid, (unsigned long long)st.completed, (unsigned long long)st.preemptions,
            (unsigned long long)st.stalls, st.stall_ns / 1e6);
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
        mca_coll_dfccl_engine_destroy(cm->live);
    if (cm->active)
        DFCCL_ERROR("non-blocking collectives still pending at MPI_Finalize");
    cm->active = NULL;
    OBJ_DESTRUCT(&cm->requests);
    cm->engine_ready = false;
}

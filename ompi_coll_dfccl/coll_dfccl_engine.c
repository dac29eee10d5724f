/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Engine communicators: their destruction when the MPI communicator is freed (the
 * teardown attribute's callbacks) or at finalize, and the mapping of engine results to
 * MPI error codes. Their non-blocking set-up is coll_dfccl_boot.c; what the process
 * sets up before the first one, coll_dfccl_progress.c.
 */
#include "ompi_config.h"

#include "ompi/attribute/attribute.h"
#include "ompi/constants.h"
#include "opal/runtime/opal_progress.h"

#include "coll_dfccl.h"

int mca_coll_dfccl_engine_result(mca_coll_dfccl_op_t *o, const char *what, dfcclResult_t res)
{
    o->reached = true; /* a call the engine refused is described to the peers by the engine */
    if (res == dfcclSuccess)
        return OMPI_SUCCESS;
    DFCCL_ERROR("%s failed on the engine: %s (%s)", what, dfcclGetErrorString(res), dfcclGetLastError());
    return mca_coll_dfccl_result_to_mpi(res);
}

int mca_coll_dfccl_result_to_mpi(dfcclResult_t res)
{
    switch (res) {
    case dfcclInvalidArgument:
    case dfcclMismatch: return MPI_ERR_ARG; /* as coll_dfccl_check's finding */
    case dfcclNoMemory: return MPI_ERR_NO_MEM;
    case dfcclInternalError: return MPI_ERR_INTERN;
    default: return MPI_ERR_OTHER;
    }
}

/* The teardown attribute's delete: MPI_Comm_free (or finalize) of a communicator
 * with an engine communicator. */
int mca_coll_dfccl_attr_delete(MPI_Comm comm, int keyval, void *attr_val, void *extra_state)
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
int mca_coll_dfccl_attr_copy(MPI_Comm oldcomm, int keyval, void *extra_state, void *attr_in, void *attr_out,
                             int *flag, MPI_Comm newcomm)
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

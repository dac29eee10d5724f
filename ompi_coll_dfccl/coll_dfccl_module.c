/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The module's life cycle: comm_query, enable (saving the previous modules, or
 * dfccl's own fallbacks where there are none), disable and the destructor.
 */
#include "ompi_config.h"

#include <string.h>

#include "ompi/attribute/attribute.h"
#include "ompi/constants.h"
#include "ompi/mca/coll/base/base.h"

#include "coll_dfccl.h"

static int mca_coll_dfccl_module_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm);
static int mca_coll_dfccl_module_disable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm);

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
        mca_coll_dfccl_engine_destroy(m);
    release_previous(m);
    mca_coll_dfccl_watch_free(m->watch);
    if (m->spare) /* never queued here: a queued one keeps the module on the waiting list */
        mca_coll_dfccl_req_put(m->spare);
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
    /* before any module: the progress callback reaches the set-ups, the module queues
     * and the non-blocking fallbacks through these */
    const mca_coll_dfccl_hooks_t hooks = {.setup_advance = mca_coll_dfccl_engine_advance,
                                          .setup_abort = mca_coll_dfccl_engine_abort,
                                          .queue_advance = mca_coll_dfccl_queue_advance,
                                          .sched_test = mca_coll_dfccl_sched_test,
                                          .sched_finish = mca_coll_dfccl_sched_finish};
    mca_coll_dfccl_hooks_register(&hooks);
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
    /* Alone on an intercommunicator, a module all the same: with none at all, Open MPI
     * 4.1 fails the communicator's creation and then crashes freeing it (SIGSEGV in
     * mca_coll_base_comm_unselect, its module list never made). Enabled, this one fills
     * no slot (DFCCL_SAVE_PREV finds nothing to stage for), so the creation fails
     * cleanly with an MPI error naming the first collective nobody provides. */
    if (inter && opal_list_get_size(&ompi_coll_base_framework.framework_components) == 1)
        inter_alone(comm);

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

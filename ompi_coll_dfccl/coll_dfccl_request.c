/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Requests: taking one from the pool, putting it back, handing it to the progress
 * callback (coll_dfccl_progress.c), and the wait of a blocking call.
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
    req->stand_in = false;
    req->desc = NULL;
    req->check = NULL;
    req->sched = NULL;
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

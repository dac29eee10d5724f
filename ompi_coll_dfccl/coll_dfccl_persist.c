/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Persistent collectives (MPIX_<coll>_init, Open MPI 4.1's pcollreq extension) where the
 * communicator has no module for them (dfccl the only coll component). Each
 * collective's *_init entry point comes from its descriptor (MCA_COLL_DFCCL_ENTRIES),
 * as its blocking and MPI_I* ones do; the request keeps the descriptor and the
 * arguments, each MPI_Start runs them as the MPI_I* call would (so engine, staging and
 * fallbacks apply alike) and the progress callback completes the persistent request
 * when that call completes. Slots another component fills keep that component's *_init
 * (coll_dfccl_fallback.c).
 */
#include "ompi_config.h"

#include <string.h>

#include "ompi/constants.h"

#include "coll_dfccl.h"
#include "coll_dfccl_common.h"

/* Run one start of @p req: its collective as the MPI_I* call (engine, staging and
 * fallbacks alike), the result in req->op.inner; a barrier is the communicator's. */
static int persist_run(mca_coll_dfccl_req_t *req)
{
    mca_coll_dfccl_module_t *m = req->module;
    struct ompi_communicator_t *comm = m->comm;
    if (!req->desc)
        return comm->c_coll->coll_ibarrier(comm, &req->op.inner, comm->c_coll->coll_ibarrier_module);
    return mca_coll_dfccl_call(m, req->desc, &req->args, &req->op.inner);
}

static int persist_start(size_t count, ompi_request_t **requests)
{
    for (size_t i = 0; i < count; i++) {
        mca_coll_dfccl_req_t *req = (mca_coll_dfccl_req_t *)requests[i];
        ompi_request_t *r = &req->super.super;
        if (r->req_state == OMPI_REQUEST_ACTIVE)
            return MPI_ERR_REQUEST; /* started twice without a completion between */
        mca_coll_dfccl_op_init(&req->op);
        req->next = NULL;
        r->req_status = ompi_status_empty;
        r->req_status.MPI_ERROR = MPI_SUCCESS;
        int rc = persist_run(req);
        if (rc != OMPI_SUCCESS)
            return rc; /* still inactive and complete: it can be started again or freed */
        r->req_complete = REQUEST_PENDING;
        r->req_state = OMPI_REQUEST_ACTIVE;
        mca_coll_dfccl_req_start(req); /* the progress callback completes it with its inner call */
    }
    return OMPI_SUCCESS;
}

static int persist_free(ompi_request_t **request)
{
    mca_coll_dfccl_req_t *req = (mca_coll_dfccl_req_t *)*request;
    if (!REQUEST_COMPLETE(&req->super.super))
        return MPI_ERR_REQUEST; /* MPI forbids freeing an active collective request */
    struct ompi_communicator_t *comm = req->module->comm;
    mca_coll_dfccl_req_put(req);
    OBJ_RELEASE(comm); /* may destruct the communicator and the module: last */
    *request = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

int mca_coll_dfccl_persist_new(mca_coll_base_module_t *module, const mca_coll_dfccl_coll_desc_t *desc,
                               const mca_coll_dfccl_args_t *a, ompi_request_t **request)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    mca_coll_dfccl_req_t *req = mca_coll_dfccl_req_get(m);
    if (!req)
        return OMPI_ERR_OUT_OF_RESOURCE;
    ompi_request_t *r = &req->super.super;
    OMPI_REQUEST_INIT(r, true); /* complete and inactive until MPI_Start */
    r->req_start = persist_start;
    r->req_free = persist_free;
    req->desc = desc;
    req->args = *a;
    OBJ_RETAIN(m->comm); /* the module lives as long as the request */
    *request = r;
    return OMPI_SUCCESS;
}

int mca_coll_dfccl_barrier_init(struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)comm;
    (void)info;
    const mca_coll_dfccl_args_t a = {.root = 0};
    return mca_coll_dfccl_persist_new(module, NULL, &a, request);
}

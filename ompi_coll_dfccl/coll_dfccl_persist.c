/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Persistent collectives (MPIX_<coll>_init, Open MPI 4.1's pcollreq extension) where the
 * communicator has no module for them (dfccl the only coll component). The request keeps
 * the arguments; each MPI_Start runs the component's own MPI_I* entry point with them (so
 * engine, staging and fallbacks apply as for a direct MPI_I* call) and the progress
 * callback completes the persistent request when that call completes. Slots another
 * component fills keep that component's *_init.
 */
#include "ompi_config.h"

#include <string.h>

#include "ompi/constants.h"

#include "coll_dfccl.h"
#include "coll_dfccl_common.h"

#define DFCCL_PERSIST_BARRIER MCA_COLL_DFCCL_NUM_COLLS /* barrier: no entry of ours, the communicator's */

/* Run one start of @p req: its collective's MPI_I* call, the result in req->op.inner. */
static int persist_run(mca_coll_dfccl_req_t *req)
{
    mca_coll_dfccl_module_t *m = req->module;
    mca_coll_base_module_t *mod = &m->super;
    struct ompi_communicator_t *comm = m->comm;
    const mca_coll_dfccl_args_t *a = &req->args;
    ompi_request_t **in = &req->op.inner;
    void *sb = (void *)a->sbuf;

    switch (req->pcoll) {
    case MCA_COLL_DFCCL_ALLREDUCE:
        return mca_coll_dfccl_iallreduce(sb, a->rbuf, a->scount, a->sdtype, a->op, comm, in, mod);
    case MCA_COLL_DFCCL_REDUCE:
        return mca_coll_dfccl_ireduce(sb, a->rbuf, a->scount, a->sdtype, a->op, a->root, comm, in, mod);
    case MCA_COLL_DFCCL_BCAST:
        return mca_coll_dfccl_ibcast(a->rbuf, a->scount, a->sdtype, a->root, comm, in, mod);
    case MCA_COLL_DFCCL_ALLGATHER:
        return mca_coll_dfccl_iallgather(sb, a->scount, a->sdtype, a->rbuf, a->rcount, a->rdtype, comm, in,
                                         mod);
    case MCA_COLL_DFCCL_REDUCE_SCATTER_BLOCK:
        return mca_coll_dfccl_ireduce_scatter_block(sb, a->rbuf, a->rcount, a->sdtype, a->op, comm, in, mod);
    case MCA_COLL_DFCCL_REDUCE_SCATTER:
        return mca_coll_dfccl_ireduce_scatter(sb, a->rbuf, a->rcounts, a->sdtype, a->op, comm, in, mod);
    case MCA_COLL_DFCCL_ALLTOALL:
        return mca_coll_dfccl_ialltoall(sb, a->scount, a->sdtype, a->rbuf, a->rcount, a->rdtype, comm, in,
                                        mod);
    case MCA_COLL_DFCCL_GATHER:
        return mca_coll_dfccl_igather(sb, a->scount, a->sdtype, a->rbuf, a->rcount, a->rdtype, a->root, comm,
                                      in, mod);
    case MCA_COLL_DFCCL_GATHERV:
        return mca_coll_dfccl_igatherv(sb, a->scount, a->sdtype, a->rbuf, a->rcounts, a->rdispls, a->rdtype,
                                       a->root, comm, in, mod);
    case MCA_COLL_DFCCL_SCATTER:
        return mca_coll_dfccl_iscatter(sb, a->scount, a->sdtype, a->rbuf, a->rcount, a->rdtype, a->root, comm,
                                       in, mod);
    case MCA_COLL_DFCCL_SCATTERV:
        return mca_coll_dfccl_iscatterv(sb, a->scounts, a->sdispls, a->sdtype, a->rbuf, a->rcount, a->rdtype,
                                        a->root, comm, in, mod);
    case MCA_COLL_DFCCL_ALLGATHERV:
        return mca_coll_dfccl_iallgatherv(sb, a->scount, a->sdtype, a->rbuf, a->rcounts, a->rdispls,
                                          a->rdtype, comm, in, mod);
    case MCA_COLL_DFCCL_ALLTOALLV:
        return mca_coll_dfccl_ialltoallv(sb, a->scounts, a->sdispls, a->sdtype, a->rbuf, a->rcounts,
                                         a->rdispls, a->rdtype, comm, in, mod);
    case MCA_COLL_DFCCL_ALLTOALLW:
        return mca_coll_dfccl_ialltoallw(sb, a->scounts, a->sdispls, a->sdtypes, a->rbuf, a->rcounts,
                                         a->rdispls, a->rdtypes, comm, in, mod);
    case MCA_COLL_DFCCL_SCAN:
        return mca_coll_dfccl_iscan(sb, a->rbuf, a->scount, a->sdtype, a->op, comm, in, mod);
    case MCA_COLL_DFCCL_EXSCAN:
        return mca_coll_dfccl_iexscan(sb, a->rbuf, a->scount, a->sdtype, a->op, comm, in, mod);
    case DFCCL_PERSIST_BARRIER:
        return comm->c_coll->coll_ibarrier(comm, in, comm->c_coll->coll_ibarrier_module);
    default: return MPI_ERR_INTERN;
    }
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

static int persist_new(mca_coll_base_module_t *module, int pcoll, const mca_coll_dfccl_args_t *a,
                       ompi_request_t **request)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    mca_coll_dfccl_req_t *req = mca_coll_dfccl_req_get(m);
    if (!req)
        return OMPI_ERR_OUT_OF_RESOURCE;
    ompi_request_t *r = &req->super.super;
    OMPI_REQUEST_INIT(r, true); /* complete and inactive until MPI_Start */
    r->req_start = persist_start;
    r->req_free = persist_free;
    req->pcoll = pcoll;
    req->args = *a;
    OBJ_RETAIN(m->comm); /* the module lives as long as the request */
    *request = r;
    return OMPI_SUCCESS;
}

#define DFCCL_PERSIST(_name, _coll, _args, ...)                                                              \
    static int dfccl_##_name##_init(__VA_ARGS__, struct ompi_communicator_t *comm, struct ompi_info_t *info, \
                                    ompi_request_t **request, mca_coll_base_module_t *module)                \
    {                                                                                                        \
        (void)comm;                                                                                          \
        (void)info;                                                                                          \
        const mca_coll_dfccl_args_t a = MCA_COLL_DFCCL_BRACED _args;                                         \
        return persist_new(module, _coll, &a, request);                                                      \
    }

DFCCL_PERSIST(allreduce, MCA_COLL_DFCCL_ALLREDUCE,
              (.sbuf = sbuf, .rbuf = rbuf, .scount = count, .sdtype = dtype, .op = op), const void *sbuf,
              void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op)
DFCCL_PERSIST(reduce, MCA_COLL_DFCCL_REDUCE,
              (.sbuf = sbuf, .rbuf = rbuf, .scount = count, .sdtype = dtype, .op = op, .root = root),
              const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
              int root)
DFCCL_PERSIST(bcast, MCA_COLL_DFCCL_BCAST, (.rbuf = buf, .scount = count, .sdtype = dtype, .root = root),
              void *buf, int count, struct ompi_datatype_t *dtype, int root)
DFCCL_PERSIST(allgather, MCA_COLL_DFCCL_ALLGATHER,
              (.sbuf = sbuf, .rbuf = rbuf, .scount = scount, .rcount = rcount, .sdtype = sdtype,
               .rdtype = rdtype),
              const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
              struct ompi_datatype_t *rdtype)
DFCCL_PERSIST(reduce_scatter_block, MCA_COLL_DFCCL_REDUCE_SCATTER_BLOCK,
              (.sbuf = sbuf, .rbuf = rbuf, .rcount = rcount, .sdtype = dtype, .op = op), const void *sbuf,
              void *rbuf, int rcount, struct ompi_datatype_t *dtype, struct ompi_op_t *op)
DFCCL_PERSIST(reduce_scatter, MCA_COLL_DFCCL_REDUCE_SCATTER,
              (.sbuf = sbuf, .rbuf = rbuf, .rcounts = rcounts, .sdtype = dtype, .op = op), const void *sbuf,
              void *rbuf, const int *rcounts, struct ompi_datatype_t *dtype, struct ompi_op_t *op)
DFCCL_PERSIST(alltoall, MCA_COLL_DFCCL_ALLTOALL,
              (.sbuf = sbuf, .rbuf = rbuf, .scount = scount, .rcount = rcount, .sdtype = sdtype,
               .rdtype = rdtype),
              const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
              struct ompi_datatype_t *rdtype)
DFCCL_PERSIST(gather, MCA_COLL_DFCCL_GATHER,
              (.sbuf = sbuf, .rbuf = rbuf, .scount = scount, .rcount = rcount, .sdtype = sdtype,
               .rdtype = rdtype, .root = root),
              const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
              struct ompi_datatype_t *rdtype, int root)
DFCCL_PERSIST(gatherv, MCA_COLL_DFCCL_GATHERV,
              (.sbuf = sbuf, .rbuf = rbuf, .scount = scount, .rcounts = rcounts, .rdispls = displs,
               .sdtype = sdtype, .rdtype = rdtype, .root = root),
              const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
              const int *displs, struct ompi_datatype_t *rdtype, int root)
DFCCL_PERSIST(scatter, MCA_COLL_DFCCL_SCATTER,
              (.sbuf = sbuf, .rbuf = rbuf, .scount = scount, .rcount = rcount, .sdtype = sdtype,
               .rdtype = rdtype, .root = root),
              const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
              struct ompi_datatype_t *rdtype, int root)
DFCCL_PERSIST(scatterv, MCA_COLL_DFCCL_SCATTERV,
              (.sbuf = sbuf, .rbuf = rbuf, .scounts = scounts, .sdispls = displs, .rcount = rcount,
               .sdtype = sdtype, .rdtype = rdtype, .root = root),
              const void *sbuf, const int *scounts, const int *displs, struct ompi_datatype_t *sdtype,
              void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root)
DFCCL_PERSIST(allgatherv, MCA_COLL_DFCCL_ALLGATHERV,
              (.sbuf = sbuf, .rbuf = rbuf, .scount = scount, .rcounts = rcounts, .rdispls = displs,
               .sdtype = sdtype, .rdtype = rdtype),
              const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
              const int *displs, struct ompi_datatype_t *rdtype)
DFCCL_PERSIST(alltoallv, MCA_COLL_DFCCL_ALLTOALLV,
              (.sbuf = sbuf, .rbuf = rbuf, .scounts = scounts, .sdispls = sdispls, .rcounts = rcounts,
               .rdispls = rdispls, .sdtype = sdtype, .rdtype = rdtype),
              const void *sbuf, const int *scounts, const int *sdispls, struct ompi_datatype_t *sdtype,
              void *rbuf, const int *rcounts, const int *rdispls, struct ompi_datatype_t *rdtype)
DFCCL_PERSIST(alltoallw, MCA_COLL_DFCCL_ALLTOALLW,
              (.sbuf = sbuf, .rbuf = rbuf, .scounts = scounts, .sdispls = sdispls, .rcounts = rcounts,
               .rdispls = rdispls, .sdtypes = sdtypes, .rdtypes = rdtypes),
              const void *sbuf, const int *scounts, const int *sdispls,
              struct ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts, const int *rdispls,
              struct ompi_datatype_t *const *rdtypes)
DFCCL_PERSIST(scan, MCA_COLL_DFCCL_SCAN,
              (.sbuf = sbuf, .rbuf = rbuf, .scount = count, .sdtype = dtype, .op = op), const void *sbuf,
              void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op)
DFCCL_PERSIST(exscan, MCA_COLL_DFCCL_EXSCAN,
              (.sbuf = sbuf, .rbuf = rbuf, .scount = count, .sdtype = dtype, .op = op), const void *sbuf,
              void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op)

static int dfccl_barrier_init(struct ompi_communicator_t *comm, struct ompi_info_t *info,
                              ompi_request_t **request, mca_coll_base_module_t *module)
{
    (void)comm;
    (void)info;
    const mca_coll_dfccl_args_t a = {.root = 0};
    return persist_new(module, DFCCL_PERSIST_BARRIER, &a, request);
}

int mca_coll_dfccl_persist_slots(mca_coll_dfccl_module_t *m, struct ompi_communicator_t *comm)
{
    int filled = 0;
#define DFCCL_FILL_INIT(_api)                                                                                \
    if (!comm->c_coll->coll_##_api##_init || !comm->c_coll->coll_##_api##_init_module) {                     \
        m->super.coll_##_api##_init = dfccl_##_api##_init;                                                   \
        filled++;                                                                                            \
    }
    DFCCL_FILL_INIT(allreduce)
    DFCCL_FILL_INIT(reduce)
    DFCCL_FILL_INIT(bcast)
    DFCCL_FILL_INIT(allgather)
    DFCCL_FILL_INIT(reduce_scatter_block)
    DFCCL_FILL_INIT(reduce_scatter)
    DFCCL_FILL_INIT(alltoall)
    DFCCL_FILL_INIT(gather)
    DFCCL_FILL_INIT(gatherv)
    DFCCL_FILL_INIT(scatter)
    DFCCL_FILL_INIT(scatterv)
    DFCCL_FILL_INIT(allgatherv)
    DFCCL_FILL_INIT(alltoallv)
    DFCCL_FILL_INIT(alltoallw)
    DFCCL_FILL_INIT(scan)
    DFCCL_FILL_INIT(exscan)
    DFCCL_FILL_INIT(barrier)
#undef DFCCL_FILL_INIT
    return filled;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI_Allreduce, MPI_Iallreduce. MPI_IN_PLACE is the engine's sendbuf == recvbuf. */
#include "coll_dfccl_common.h"

typedef struct {
    mca_coll_dfccl_path_t path;
    dfcclComm_t ecomm;
    dfcclDataType_t etype;
    dfcclRedOp_t eop;
} allreduce_plan_t;

static int allreduce_prepare(mca_coll_dfccl_module_t *m, const void *sbuf, void *rbuf, int count,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op, bool blocking,
                             allreduce_plan_t *p)
{
    mca_coll_dfccl_check_t rec = {.coll = MCA_COLL_DFCCL_ALLREDUCE,
                                  .op = mca_coll_dfccl_op_index(op),
                                  .bytes = mca_coll_dfccl_bytes(dtype, (size_t)count)};
    rec.kind = rec.bytes ? mca_coll_dfccl_kind2(sbuf, rbuf) : MCA_COLL_DFCCL_MEM_HOST;
    bool ok = rec.bytes > 0 && mca_coll_dfccl_reduction_map(dtype, op, &p->etype, &p->eop);
    return mca_coll_dfccl_prologue(m, &rec, ok, blocking, &p->path, &p->ecomm);
}

static int allreduce_start(mca_coll_dfccl_module_t *m, const allreduce_plan_t *p, const void *sbuf,
                           void *rbuf, int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                           mca_coll_dfccl_op_t *o, ompi_request_t **inner_p)
{
    const bool in_place = sbuf == MPI_IN_PLACE;
    void *hs = (void *)sbuf, *hr = rbuf;
    int rc;

    if (p->path == MCA_COLL_DFCCL_PATH_ENGINE) {
        mca_coll_dfccl_op_engine(o, p->ecomm);
        const size_t bytes = (size_t)count * dfcclTypeSize(p->etype);
        if ((rc = mca_coll_dfccl_view(o, rbuf, 0, bytes, in_place, 0, bytes, &hr)) != OMPI_SUCCESS)
            return rc;
        if (in_place)
            hs = hr;
        else if ((rc = mca_coll_dfccl_view(o, sbuf, 0, bytes, true, 0, 0, &hs)) != OMPI_SUCCESS)
            return rc;
        dfcclResult_t res = dfcclAllReduce(hs, hr, (size_t)count, p->etype, p->eop, p->ecomm, &o->ereq);
        return res == dfcclSuccess ? OMPI_SUCCESS : mca_coll_dfccl_engine_error("MPI_Allreduce", res);
    }

    /* staged: any datatype; its whole span goes through host memory, gaps included,
     * so that they survive the copy back */
    ptrdiff_t lo;
    size_t len;
    mca_coll_dfccl_span(dtype, (size_t)count, &lo, &len);
    if ((rc = mca_coll_dfccl_view(o, rbuf, lo, len, true, 0, len, &hr)) != OMPI_SUCCESS)
        return rc;
    if (!in_place && (rc = mca_coll_dfccl_view(o, sbuf, lo, len, true, 0, 0, &hs)) != OMPI_SUCCESS)
        return rc;
    if (inner_p)
        return m->previous_iallreduce(hs, hr, count, dtype, op, m->comm, inner_p,
                                      m->previous_iallreduce_module);
    o->rc = m->previous_allreduce(hs, hr, count, dtype, op, m->comm, m->previous_allreduce_module);
    return OMPI_SUCCESS;
}

int mca_coll_dfccl_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                             struct ompi_op_t *op, struct ompi_communicator_t *comm,
                             mca_coll_base_module_t *module)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    allreduce_plan_t p;
    int rc = allreduce_prepare(m, sbuf, rbuf, count, dtype, op, true, &p);
    if (rc != OMPI_SUCCESS)
        return rc;
    if (p.path == MCA_COLL_DFCCL_PATH_PREVIOUS)
        return m->previous_allreduce(sbuf, rbuf, count, dtype, op, comm, m->previous_allreduce_module);
    MCA_COLL_DFCCL_RUN_BLOCKING(o, allreduce_start(m, &p, sbuf, rbuf, count, dtype, op, o, NULL));
}

int mca_coll_dfccl_iallreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                              struct ompi_op_t *op, struct ompi_communicator_t *comm,
                              ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    allreduce_plan_t p;
    int rc = allreduce_prepare(m, sbuf, rbuf, count, dtype, op, false, &p);
    if (rc != OMPI_SUCCESS)
        return rc;
    if (p.path == MCA_COLL_DFCCL_PATH_PREVIOUS)
        return m->previous_iallreduce(sbuf, rbuf, count, dtype, op, comm, request,
                                      m->previous_iallreduce_module);
    MCA_COLL_DFCCL_RUN_NONBLOCKING(m, p.path, request, o, inner_p,
                                   allreduce_start(m, &p, sbuf, rbuf, count, dtype, op, o, inner_p));
}

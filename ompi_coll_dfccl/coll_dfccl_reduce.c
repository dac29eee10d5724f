/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI_Reduce, MPI_Ireduce. recvbuf matters on the root only; MPI_IN_PLACE (root
 * only) is the engine's sendbuf == recvbuf. */
#include "coll_dfccl_common.h"

typedef struct {
    mca_coll_dfccl_path_t path;
    dfcclComm_t ecomm;
    dfcclDataType_t etype;
    dfcclRedOp_t eop;
} reduce_plan_t;

static int reduce_prepare(mca_coll_dfccl_module_t *m, const void *sbuf, void *rbuf, int count,
                          struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root, bool blocking,
                          reduce_plan_t *p)
{
    mca_coll_dfccl_check_t rec = {.coll = MCA_COLL_DFCCL_REDUCE,
                                  .op = mca_coll_dfccl_op_index(op),
                                  .root = root,
                                  .bytes = mca_coll_dfccl_bytes(dtype, (size_t)count)};
    if (rec.bytes)
        rec.kind = m->rank == root ? mca_coll_dfccl_kind2(sbuf, rbuf) : mca_coll_dfccl_mem_kind(sbuf);
    bool ok = rec.bytes > 0 && mca_coll_dfccl_reduction_map(dtype, op, &p->etype, &p->eop);
    return mca_coll_dfccl_prologue(m, &rec, ok, blocking, &p->path, &p->ecomm);
}

static int reduce_start(mca_coll_dfccl_module_t *m, const reduce_plan_t *p, const void *sbuf, void *rbuf,
                        int count, struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                        mca_coll_dfccl_op_t *o, ompi_request_t **inner_p)
{
    const bool is_root = m->rank == root;
    const bool in_place = sbuf == MPI_IN_PLACE; /* root only */
    void *hs = (void *)sbuf, *hr = rbuf;
    int rc;

    if (p->path == MCA_COLL_DFCCL_PATH_ENGINE) {
        mca_coll_dfccl_op_engine(o, p->ecomm);
        const size_t bytes = (size_t)count * dfcclTypeSize(p->etype);
        hr = NULL;
        if (is_root && (rc = mca_coll_dfccl_view(o, rbuf, 0, bytes, in_place, 0, bytes, &hr)) != OMPI_SUCCESS)
            return rc;
        if (in_place)
            hs = hr;
        else if ((rc = mca_coll_dfccl_view(o, sbuf, 0, bytes, true, 0, 0, &hs)) != OMPI_SUCCESS)
            return rc;
        dfcclResult_t res = dfcclReduce(hs, hr, (size_t)count, p->etype, p->eop, root, p->ecomm, &o->ereq);
        return res == dfcclSuccess ? OMPI_SUCCESS : mca_coll_dfccl_engine_error("MPI_Reduce", res);
    }

    ptrdiff_t lo;
    size_t len;
    mca_coll_dfccl_span(dtype, (size_t)count, &lo, &len);
    if (is_root && (rc = mca_coll_dfccl_view(o, rbuf, lo, len, true, 0, len, &hr)) != OMPI_SUCCESS)
        return rc;
    if (!in_place && (rc = mca_coll_dfccl_view(o, sbuf, lo, len, true, 0, 0, &hs)) != OMPI_SUCCESS)
        return rc;
    if (inner_p)
        return m->previous_ireduce(hs, hr, count, dtype, op, root, m->comm, inner_p,
                                   m->previous_ireduce_module);
    o->rc = m->previous_reduce(hs, hr, count, dtype, op, root, m->comm, m->previous_reduce_module);
    return OMPI_SUCCESS;
}

int mca_coll_dfccl_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                          mca_coll_base_module_t *module)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    reduce_plan_t p;
    int rc = reduce_prepare(m, sbuf, rbuf, count, dtype, op, root, true, &p);
    if (rc != OMPI_SUCCESS)
        return rc;
    if (p.path == MCA_COLL_DFCCL_PATH_PREVIOUS)
        return m->previous_reduce(sbuf, rbuf, count, dtype, op, root, comm, m->previous_reduce_module);
    MCA_COLL_DFCCL_RUN_BLOCKING(o, reduce_start(m, &p, sbuf, rbuf, count, dtype, op, root, o, NULL));
}

int mca_coll_dfccl_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                           ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    reduce_plan_t p;
    int rc = reduce_prepare(m, sbuf, rbuf, count, dtype, op, root, false, &p);
    if (rc != OMPI_SUCCESS)
        return rc;
    if (p.path == MCA_COLL_DFCCL_PATH_PREVIOUS)
        return m->previous_ireduce(sbuf, rbuf, count, dtype, op, root, comm, request,
                                   m->previous_ireduce_module);
    MCA_COLL_DFCCL_RUN_NONBLOCKING(m, p.path, request, o, inner_p,
                                   reduce_start(m, &p, sbuf, rbuf, count, dtype, op, root, o, inner_p));
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI_Allreduce, MPI_Iallreduce. MPI_IN_PLACE is the engine's sendbuf == recvbuf. */
#include "coll_dfccl_common.h"

static bool allreduce_prepare(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
                              mca_coll_dfccl_check_t *rec, mca_coll_dfccl_plan_t *p)
{
    (void)m;
    rec->op = mca_coll_dfccl_op_index(a->op);
    rec->bytes = mca_coll_dfccl_bytes(a->sdtype, (size_t)a->scount);
    rec->types = mca_coll_dfccl_types(a->sdtype);
    rec->kind = rec->bytes ? mca_coll_dfccl_kinds(p, a->sbuf, a->rbuf) : MCA_COLL_DFCCL_MEM_HOST;
    return rec->bytes > 0 && mca_coll_dfccl_reduction_map(a->sdtype, a->op, &p->etype, &p->eop);
}

static int allreduce_start(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
                           const mca_coll_dfccl_plan_t *p, mca_coll_dfccl_op_t *o, ompi_request_t **inner_p)
{
    const void *sbuf = a->sbuf;
    void *rbuf = a->rbuf;
    const int count = a->scount;
    struct ompi_datatype_t *dtype = a->sdtype;
    struct ompi_op_t *op = a->op;
    const bool in_place = sbuf == MPI_IN_PLACE;
    void *hs = (void *)sbuf, *hr = rbuf;
    int rc;

    if (p->path == MCA_COLL_DFCCL_PATH_ENGINE) {
        mca_coll_dfccl_op_engine(o, p->ecomm);
        const size_t bytes = (size_t)count * dfcclTypeSize(p->etype);
        if ((rc = mca_coll_dfccl_view(o, p->rkind, rbuf, 0, bytes, in_place, 0, bytes, &hr)) != OMPI_SUCCESS)
            return rc;
        if (in_place)
            hs = hr;
        else if ((rc = mca_coll_dfccl_view(o, p->skind, sbuf, 0, bytes, true, 0, 0, &hs)) != OMPI_SUCCESS)
            return rc;
        dfcclResult_t res = dfcclAllReduce(hs, hr, (size_t)count, p->etype, p->eop, p->ecomm, &o->ereq);
        return mca_coll_dfccl_engine_result(o, "MPI_Allreduce", res);
    }

    /* staged: any datatype; its whole span goes through host memory, gaps included,
     * so that they survive the copy back */
    ptrdiff_t lo;
    size_t len;
    mca_coll_dfccl_span(dtype, (size_t)count, &lo, &len);
    if ((rc = mca_coll_dfccl_view(o, p->rkind, rbuf, lo, len, true, 0, len, &hr)) != OMPI_SUCCESS)
        return rc;
    if (!in_place && (rc = mca_coll_dfccl_view(o, p->skind, sbuf, lo, len, true, 0, 0, &hs)) != OMPI_SUCCESS)
        return rc;
    return MCA_COLL_DFCCL_STAGED_PREVIOUS(m, allreduce, o, inner_p, hs, hr, count, dtype, op);
}

static int allreduce_previous(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
                              ompi_request_t **request)
{
    return MCA_COLL_DFCCL_PREVIOUS(m, allreduce, request, a->sbuf, a->rbuf, a->scount, a->sdtype, a->op);
}

static const mca_coll_dfccl_coll_desc_t allreduce_desc = {MCA_COLL_DFCCL_ALLREDUCE, allreduce_prepare,
                                                          allreduce_start, allreduce_previous};

MCA_COLL_DFCCL_ENTRIES(allreduce, allreduce_desc,
                       (.sbuf = sbuf, .rbuf = rbuf, .scount = count, .sdtype = dtype, .op = op),
                       const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op)

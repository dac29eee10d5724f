/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI_Reduce, MPI_Ireduce. recvbuf matters on the root only; MPI_IN_PLACE (root
 * only) is the engine's sendbuf == recvbuf. */
#include "coll_dfccl_common.h"

static bool reduce_prepare(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
                           mca_coll_dfccl_check_t *rec, mca_coll_dfccl_plan_t *p)
{
    rec->op = mca_coll_dfccl_op_index(a->op);
    rec->root = a->root;
    rec->bytes = mca_coll_dfccl_bytes(a->sdtype, (size_t)a->scount);
    rec->types = mca_coll_dfccl_types(a->sdtype);
    if (rec->bytes)
        rec->kind = mca_coll_dfccl_kinds(p, a->sbuf, mca_coll_dfccl_is_root(m, a->root) ? a->rbuf : NULL);
    return rec->bytes > 0 && mca_coll_dfccl_reduction_map(a->sdtype, a->op, &p->etype, &p->eop);
}

static int reduce_start(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
                        const mca_coll_dfccl_plan_t *p, mca_coll_dfccl_op_t *o, ompi_request_t **inner_p)
{
    const void *sbuf = a->sbuf;
    void *rbuf = a->rbuf;
    const int count = a->scount, root = a->root;
    struct ompi_datatype_t *dtype = a->sdtype;
    struct ompi_op_t *op = a->op;
    const bool is_root = mca_coll_dfccl_is_root(m, root);
    const bool in_place = sbuf == MPI_IN_PLACE; /* root only */
    void *hs = (void *)sbuf, *hr = rbuf;
    int rc;

    if (p->path == MCA_COLL_DFCCL_PATH_ENGINE) {
        mca_coll_dfccl_op_engine(o, p->ecomm);
        const size_t bytes = (size_t)count * dfcclTypeSize(p->etype);
        hr = NULL;
        if (is_root &&
            (rc = mca_coll_dfccl_view(o, p->rkind, rbuf, 0, bytes, in_place, 0, bytes, &hr)) != OMPI_SUCCESS)
            return rc;
        if (in_place)
            hs = hr;
        else if ((rc = mca_coll_dfccl_view(o, p->skind, sbuf, 0, bytes, true, 0, 0, &hs)) != OMPI_SUCCESS)
            return rc;
        dfcclResult_t res = dfcclReduce(hs, hr, (size_t)count, p->etype, p->eop, root, p->ecomm, &o->ereq);
        return mca_coll_dfccl_engine_result(o, "MPI_Reduce", res);
    }

    ptrdiff_t lo;
    size_t len;
    mca_coll_dfccl_span(dtype, (size_t)count, &lo, &len);
    if (is_root && (rc = mca_coll_dfccl_view(o, p->rkind, rbuf, lo, len, true, 0, len, &hr)) != OMPI_SUCCESS)
        return rc;
    if (!in_place && (rc = mca_coll_dfccl_view(o, p->skind, sbuf, lo, len, true, 0, 0, &hs)) != OMPI_SUCCESS)
        return rc;
    return MCA_COLL_DFCCL_STAGED_PREVIOUS(m, reduce, o, inner_p, hs, hr, count, dtype, op, root);
}

static int reduce_previous(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
                           ompi_request_t **request)
{
    return MCA_COLL_DFCCL_PREVIOUS(m, reduce, request, a->sbuf, a->rbuf, a->scount, a->sdtype, a->op,
                                   a->root);
}

static const mca_coll_dfccl_coll_desc_t reduce_desc = {MCA_COLL_DFCCL_REDUCE, reduce_prepare, reduce_start,
                                                       reduce_previous};

MCA_COLL_DFCCL_ENTRIES(reduce, reduce_desc,
                       (.sbuf = sbuf, .rbuf = rbuf, .scount = count, .sdtype = dtype, .op = op, .root = root),
                       const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op, int root)

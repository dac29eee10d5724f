/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block.
 *
 * MPI_IN_PLACE differs from the engine's convention: MPI takes the input from
 * recvbuf and leaves rank r's block at the start of recvbuf, the engine reduces in
 * place when recvbuf == sendbuf + r * block. So the engine runs in place on
 * recvbuf (the device buffer itself for the GPU daemon, else its host view) and the
 * block is moved to the front when the call completes (a device copy, or a host one).
 */
#include "coll_dfccl_common.h"

int mca_coll_dfccl_rs_in_place(mca_coll_dfccl_op_t *o, const mca_coll_dfccl_plan_t *p, void *rbuf, size_t all,
                               size_t off, size_t mine, void **hs_p, void **hr_p)
{
    void *hall;
    /* all of recvbuf goes in; only its first `mine` bytes come back */
    int rc = mca_coll_dfccl_view(o, p->rkind, rbuf, 0, all, true, 0, mine, &hall);
    if (rc != OMPI_SUCCESS)
        return rc;
    *hs_p = hall;
    *hr_p = (char *)hall + off;
    if (off && mine) {
        o->move_dst = hall;
        o->move_src = *hr_p;
        o->move_len = mine;
        /* the GPU daemon ran it on recvbuf itself: a device copy (host views: a host one) */
        o->move_device = hall == rbuf && p->rkind == MCA_COLL_DFCCL_MEM_DEVICE;
    }
    return OMPI_SUCCESS;
}

int mca_coll_dfccl_rsb_engine_start(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_plan_t *p,
                                    const void *sbuf, void *rbuf, size_t rcount, mca_coll_dfccl_op_t *o)
{
    const dfcclDataType_t etype = p->etype;
    const size_t bytes = rcount * dfcclTypeSize(etype), all = bytes * (size_t)m->lsize;
    void *hs, *hr;
    int rc;

    mca_coll_dfccl_op_engine(o, p->ecomm);
    if (sbuf == MPI_IN_PLACE) {
        if ((rc = mca_coll_dfccl_rs_in_place(o, p, rbuf, all, (size_t)m->rank * bytes, bytes, &hs, &hr)) !=
            OMPI_SUCCESS)
            return rc;
    } else {
        if ((rc = mca_coll_dfccl_view(o, p->skind, sbuf, 0, all, true, 0, 0, &hs)) != OMPI_SUCCESS ||
            (rc = mca_coll_dfccl_view(o, p->rkind, rbuf, 0, bytes, false, 0, bytes, &hr)) != OMPI_SUCCESS)
            return rc;
    }
    dfcclResult_t res = dfcclReduceScatter(hs, hr, rcount, etype, p->eop, p->ecomm, &o->ereq);
    return mca_coll_dfccl_engine_result(o, "MPI_Reduce_scatter_block", res);
}

static bool rsb_prepare(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
                        mca_coll_dfccl_check_t *rec, mca_coll_dfccl_plan_t *p)
{
    (void)m;
    rec->op = mca_coll_dfccl_op_index(a->op);
    rec->bytes = mca_coll_dfccl_bytes(a->sdtype, (size_t)a->rcount);
    rec->types = mca_coll_dfccl_types(a->sdtype);
    if (rec->bytes)
        rec->kind = mca_coll_dfccl_kinds(p, a->sbuf, a->rbuf);
    return rec->bytes > 0 && mca_coll_dfccl_reduction_map(a->sdtype, a->op, &p->etype, &p->eop);
}

static int rsb_start(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
                     const mca_coll_dfccl_plan_t *p, mca_coll_dfccl_op_t *o, ompi_request_t **inner_p)
{
    const void *sbuf = a->sbuf;
    void *rbuf = a->rbuf;
    const int rcount = a->rcount;
    struct ompi_datatype_t *dtype = a->sdtype;
    struct ompi_op_t *op = a->op;
    if (p->path == MCA_COLL_DFCCL_PATH_ENGINE)
        return mca_coll_dfccl_rsb_engine_start(m, p, sbuf, rbuf, (size_t)rcount, o);

    const size_t all = (size_t)rcount * (size_t)m->lsize;
    void *hs = (void *)sbuf, *hr = rbuf;
    ptrdiff_t lo;
    size_t len;
    int rc;
    mca_coll_dfccl_span(dtype, sbuf == MPI_IN_PLACE ? all : (size_t)rcount, &lo, &len);
    if ((rc = mca_coll_dfccl_view(o, p->rkind, rbuf, lo, len, true, 0, len, &hr)) != OMPI_SUCCESS)
        return rc;
    if (sbuf != MPI_IN_PLACE) {
        mca_coll_dfccl_span(dtype, all, &lo, &len);
        if ((rc = mca_coll_dfccl_view(o, p->skind, sbuf, lo, len, true, 0, 0, &hs)) != OMPI_SUCCESS)
            return rc;
    }
    return MCA_COLL_DFCCL_STAGED_PREVIOUS(m, reduce_scatter_block, o, inner_p, hs, hr, rcount, dtype, op);
}

static int rsb_previous(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, ompi_request_t **request)
{
    return MCA_COLL_DFCCL_PREVIOUS(m, reduce_scatter_block, request, a->sbuf, a->rbuf, a->rcount, a->sdtype,
                                   a->op);
}

static const mca_coll_dfccl_coll_desc_t rsb_desc = {MCA_COLL_DFCCL_REDUCE_SCATTER_BLOCK, rsb_prepare,
                                                    rsb_start, rsb_previous};

MCA_COLL_DFCCL_ENTRIES(reduce_scatter_block, rsb_desc,
                       (.sbuf = sbuf, .rbuf = rbuf, .rcount = rcount, .sdtype = dtype, .op = op),
                       const void *sbuf, void *rbuf, int rcount, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op)

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Reduce_scatter, MPI_Ireduce_scatter. Equal recvcounts are a reduce-scatter
 * on the engine; unequal ones the engine's reduce-scatter-v (dfcclReduceScatterv),
 * device buffers on the GPU daemon as they are.
 * MPI_IN_PLACE: input in recvbuf, this rank's part left at its start (the engine reduces
 * in place into this rank's block, moved to the front when the call completes).
 */
#include "coll_dfccl_common.h"

static bool rs_prepare(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
                       mca_coll_dfccl_check_t *rec, mca_coll_dfccl_plan_t *p)
{
    uint64_t hash = 1469598103934665603ull; /* FNV-1a of the counts, for coll_dfccl_check */
    p->total = 0;
    p->disp = 0;
    p->equal = true;
    for (int i = 0; i < m->lsize; i++) {
        if (i == m->rank)
            p->disp = p->total;
        p->total += (size_t)a->rcounts[i];
        p->equal = p->equal && a->rcounts[i] == a->rcounts[0];
        hash = (hash ^ (uint64_t)(uint32_t)a->rcounts[i]) * 1099511628211ull;
    }
    rec->op = mca_coll_dfccl_op_index(a->op);
    rec->bytes = mca_coll_dfccl_bytes(a->sdtype, p->total);
    rec->types = mca_coll_dfccl_types(a->sdtype);
    rec->counts_hash = hash;
    if (rec->bytes)
        rec->kind = mca_coll_dfccl_kinds(p, a->sbuf, a->rbuf);
    return rec->bytes > 0 && mca_coll_dfccl_reduction_map(a->sdtype, a->op, &p->etype, &p->eop);
}

static int rs_engine_start(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_plan_t *p, const void *sbuf,
                           void *rbuf, const int *rcounts, mca_coll_dfccl_op_t *o)
{
    const size_t ts = dfcclTypeSize(p->etype);
    const size_t all = p->total * ts, mine = (size_t)rcounts[m->rank] * ts;
    void *hs, *hr;
    int rc;

    if (p->equal)
        return mca_coll_dfccl_rsb_engine_start(m, p, sbuf, rbuf, (size_t)rcounts[0], o);
    mca_coll_dfccl_op_engine(o, p->ecomm);
    if (sbuf == MPI_IN_PLACE)
        rc = mca_coll_dfccl_rs_in_place(o, p, rbuf, all, p->disp * ts, mine, &hs, &hr);
    else if ((rc = mca_coll_dfccl_view(o, p->skind, sbuf, 0, all, true, 0, 0, &hs)) == OMPI_SUCCESS)
        rc = mca_coll_dfccl_view(o, p->rkind, rbuf, 0, mine, false, 0, mine, &hr);
    if (rc != OMPI_SUCCESS)
        return rc;
    size_t *counts = malloc(sizeof(size_t) * (size_t)m->lsize);
    if (!counts)
        return MPI_ERR_NO_MEM;
    for (int i = 0; i < m->lsize; i++)
        counts[i] = (size_t)rcounts[i];
    dfcclResult_t res = dfcclReduceScatterv(hs, hr, counts, p->etype, p->eop, p->ecomm, &o->ereq);
    free(counts); /* read during the call */
    return mca_coll_dfccl_engine_result(o, "MPI_Reduce_scatter", res);
}

static int rs_start(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
                    const mca_coll_dfccl_plan_t *p, mca_coll_dfccl_op_t *o, ompi_request_t **inner_p)
{
    const void *sbuf = a->sbuf;
    void *rbuf = a->rbuf;
    const int *rcounts = a->rcounts;
    struct ompi_datatype_t *dtype = a->sdtype;
    struct ompi_op_t *op = a->op;
    if (p->path == MCA_COLL_DFCCL_PATH_ENGINE)
        return rs_engine_start(m, p, sbuf, rbuf, rcounts, o);

    void *hs = (void *)sbuf, *hr = rbuf;
    ptrdiff_t lo;
    size_t len;
    int rc;
    mca_coll_dfccl_span(dtype, sbuf == MPI_IN_PLACE ? p->total : (size_t)rcounts[m->rank], &lo, &len);
    if ((rc = mca_coll_dfccl_view(o, p->rkind, rbuf, lo, len, true, 0, len, &hr)) != OMPI_SUCCESS)
        return rc;
    if (sbuf != MPI_IN_PLACE) {
        mca_coll_dfccl_span(dtype, p->total, &lo, &len);
        if ((rc = mca_coll_dfccl_view(o, p->skind, sbuf, lo, len, true, 0, 0, &hs)) != OMPI_SUCCESS)
            return rc;
    }
    return MCA_COLL_DFCCL_STAGED_PREVIOUS(m, reduce_scatter, o, inner_p, hs, hr, rcounts, dtype, op);
}

static int rs_previous(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, ompi_request_t **request)
{
    return MCA_COLL_DFCCL_PREVIOUS(m, reduce_scatter, request, a->sbuf, a->rbuf, a->rcounts, a->sdtype,
                                   a->op);
}

static const mca_coll_dfccl_coll_desc_t rs_desc = {MCA_COLL_DFCCL_REDUCE_SCATTER, rs_prepare, rs_start,
                                                   rs_previous};

MCA_COLL_DFCCL_ENTRIES(reduce_scatter, rs_desc,
                       (.sbuf = sbuf, .rbuf = rbuf, .rcounts = rcounts, .sdtype = dtype, .op = op),
                       const void *sbuf, void *rbuf, const int *rcounts, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op)

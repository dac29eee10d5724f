/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Reduce_scatter, MPI_Ireduce_scatter. Equal recvcounts are a reduce-scatter
 * on the engine; unequal ones an engine all-reduce of the whole input into a host
 * temporary, of which each rank keeps its part when the call completes.
 * MPI_IN_PLACE: input in recvbuf, this rank's part left at its start.
 */
#include "coll_dfccl_common.h"

typedef struct {
    mca_coll_dfccl_path_t path;
    dfcclComm_t ecomm;
    dfcclDataType_t etype;
    dfcclRedOp_t eop;
    size_t total; /* elements over all ranks */
    size_t disp;  /* elements before this rank's part */
    bool equal;   /* every recvcount the same */
} rs_plan_t;

static int rs_prepare(mca_coll_dfccl_module_t *m, const void *sbuf, void *rbuf, const int *rcounts,
                      struct ompi_datatype_t *dtype, struct ompi_op_t *op, bool blocking, rs_plan_t *p)
{
    uint64_t hash = 1469598103934665603ull; /* FNV-1a of the counts, for coll_dfccl_check */
    p->total = 0;
    p->disp = 0;
    p->equal = true;
    for (int i = 0; i < m->size; i++) {
        if (i == m->rank)
            p->disp = p->total;
        p->total += (size_t)rcounts[i];
        p->equal = p->equal && rcounts[i] == rcounts[0];
        hash = (hash ^ (uint64_t)(uint32_t)rcounts[i]) * 1099511628211ull;
    }
    mca_coll_dfccl_check_t rec = {.coll = MCA_COLL_DFCCL_REDUCE_SCATTER,
                                  .op = mca_coll_dfccl_op_index(op),
                                  .bytes = mca_coll_dfccl_bytes(dtype, p->total),
                                  .counts_hash = hash};
    if (rec.bytes)
        rec.kind = mca_coll_dfccl_kind2(sbuf, rbuf);
    bool ok = rec.bytes > 0 && mca_coll_dfccl_reduction_map(dtype, op, &p->etype, &p->eop);
    return mca_coll_dfccl_prologue(m, &rec, ok, blocking, &p->path, &p->ecomm);
}

static int rs_engine_start(mca_coll_dfccl_module_t *m, const rs_plan_t *p, const void *sbuf, void *rbuf,
                           const int *rcounts, mca_coll_dfccl_op_t *o)
{
    const size_t ts = dfcclTypeSize(p->etype);
    const size_t all = p->total * ts, mine = (size_t)rcounts[m->rank] * ts;
    void *hs, *hr;
    int rc;

    if (p->equal)
        return mca_coll_dfccl_rsb_engine_start(m, p->ecomm, sbuf, rbuf, (size_t)rcounts[0], p->etype, p->eop,
                                               o);
    if (!(o->tmp = malloc(all)))
        return MPI_ERR_NO_MEM;
    if (sbuf == MPI_IN_PLACE) {
        if ((rc = mca_coll_dfccl_view(o, rbuf, 0, all, true, 0, mine, &hr)) != OMPI_SUCCESS)
            return rc;
        hs = hr;
    } else if ((rc = mca_coll_dfccl_view(o, sbuf, 0, all, true, 0, 0, &hs)) != OMPI_SUCCESS ||
               (rc = mca_coll_dfccl_view(o, rbuf, 0, mine, false, 0, mine, &hr)) != OMPI_SUCCESS) {
        return rc;
    }
    /* at completion: this rank's part of the full result, then staged out */
    o->move_dst = hr;
    o->move_src = (char *)o->tmp + p->disp * ts;
    o->move_len = mine;
    dfcclResult_t res = dfcclAllReduce(hs, o->tmp, p->total, p->etype, p->eop, p->ecomm, &o->ereq);
    return res == dfcclSuccess ? OMPI_SUCCESS : mca_coll_dfccl_engine_error("MPI_Reduce_scatter", res);
}

static int rs_start(mca_coll_dfccl_module_t *m, const rs_plan_t *p, const void *sbuf, void *rbuf,
                    const int *rcounts, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                    mca_coll_dfccl_op_t *o, ompi_request_t **inner_p)
{
    if (p->path == MCA_COLL_DFCCL_PATH_ENGINE)
        return rs_engine_start(m, p, sbuf, rbuf, rcounts, o);

    void *hs = (void *)sbuf, *hr = rbuf;
    ptrdiff_t lo;
    size_t len;
    int rc;
    mca_coll_dfccl_span(dtype, sbuf == MPI_IN_PLACE ? p->total : (size_t)rcounts[m->rank], &lo, &len);
    if ((rc = mca_coll_dfccl_view(o, rbuf, lo, len, true, 0, len, &hr)) != OMPI_SUCCESS)
        return rc;
    if (sbuf != MPI_IN_PLACE) {
        mca_coll_dfccl_span(dtype, p->total, &lo, &len);
        if ((rc = mca_coll_dfccl_view(o, sbuf, lo, len, true, 0, 0, &hs)) != OMPI_SUCCESS)
            return rc;
    }
    if (inner_p)
        return m->previous_ireduce_scatter(hs, hr, rcounts, dtype, op, m->comm, inner_p,
                                           m->previous_ireduce_scatter_module);
    o->rc =
        m->previous_reduce_scatter(hs, hr, rcounts, dtype, op, m->comm, m->previous_reduce_scatter_module);
    return OMPI_SUCCESS;
}

int mca_coll_dfccl_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    rs_plan_t p;
    int rc = rs_prepare(m, sbuf, rbuf, rcounts, dtype, op, true, &p);
    if (rc != OMPI_SUCCESS)
        return rc;
    if (p.path == MCA_COLL_DFCCL_PATH_PREVIOUS)
        return m->previous_reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm,
                                          m->previous_reduce_scatter_module);
    MCA_COLL_DFCCL_RUN_BLOCKING(o, rs_start(m, &p, sbuf, rbuf, rcounts, dtype, op, o, NULL));
}

int mca_coll_dfccl_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm, ompi_request_t **request,
                                   mca_coll_base_module_t *module)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    rs_plan_t p;
    int rc = rs_prepare(m, sbuf, rbuf, rcounts, dtype, op, false, &p);
    if (rc != OMPI_SUCCESS)
        return rc;
    if (p.path == MCA_COLL_DFCCL_PATH_PREVIOUS)
        return m->previous_ireduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, request,
                                           m->previous_ireduce_scatter_module);
    MCA_COLL_DFCCL_RUN_NONBLOCKING(m, p.path, request, o, inner_p,
                                   rs_start(m, &p, sbuf, rbuf, rcounts, dtype, op, o, inner_p));
}

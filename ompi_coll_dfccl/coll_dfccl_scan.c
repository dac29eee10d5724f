/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Scan, MPI_Exscan and their MPI_I* forms. Predefined ops on engine types run on the
 * engine (dfcclScan / dfcclExscan, folded in rank order); anything else (user-defined
 * ops, MAXLOC, non-contiguous datatypes) is staged through host memory for the
 * previous module. MPI_IN_PLACE: the input is in the receive buffer.
 */
#include "coll_dfccl_common.h"

/* ex: MPI_Exscan */
static bool prepare(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, mca_coll_dfccl_check_t *rec,
                    mca_coll_dfccl_plan_t *p, bool ex)
{
    (void)m;
    (void)ex;
    rec->op = mca_coll_dfccl_op_index(a->op);
    rec->bytes = mca_coll_dfccl_bytes(a->sdtype, (size_t)a->scount);
    rec->types = mca_coll_dfccl_types(a->sdtype);
    rec->kind = rec->bytes ? mca_coll_dfccl_kinds(p, a->sbuf, a->rbuf) : MCA_COLL_DFCCL_MEM_HOST;
    return rec->bytes > 0 && mca_coll_dfccl_reduction_map(a->sdtype, a->op, &p->etype, &p->eop);
}

static int start(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, const mca_coll_dfccl_plan_t *p,
                 mca_coll_dfccl_op_t *o, ompi_request_t **inner_p, bool ex)
{
    const bool in_place = a->sbuf == MPI_IN_PLACE;
    void *hs = (void *)a->sbuf, *hr = a->rbuf;
    int rc;
    if (p->path == MCA_COLL_DFCCL_PATH_ENGINE) {
        mca_coll_dfccl_op_engine(o, p->ecomm);
        const size_t bytes = (size_t)a->scount * dfcclTypeSize(p->etype);
        /* exscan leaves rank 0's output as it was: a host copy of it is read in */
        const bool keep = in_place || (ex && m->rank == 0);
        if ((rc = mca_coll_dfccl_view(o, p->rkind, a->rbuf, 0, bytes, keep, 0, bytes, &hr)) != OMPI_SUCCESS)
            return rc;
        if (in_place)
            hs = hr;
        else if ((rc = mca_coll_dfccl_view(o, p->skind, a->sbuf, 0, bytes, true, 0, 0, &hs)) != OMPI_SUCCESS)
            return rc;
        dfcclResult_t res = ex ? dfcclExscan(hs, hr, (size_t)a->scount, p->etype, p->eop, p->ecomm, &o->ereq)
                               : dfcclScan(hs, hr, (size_t)a->scount, p->etype, p->eop, p->ecomm, &o->ereq);
        return mca_coll_dfccl_engine_result(o, ex ? "MPI_Exscan" : "MPI_Scan", res);
    }
    rc = mca_coll_dfccl_stage_blocks(o, p->skind, (void *)a->sbuf, 1, (size_t)a->scount, NULL, NULL, false,
                                     a->sdtype, NULL, true, false, &hs);
    if (rc == OMPI_SUCCESS)
        rc = mca_coll_dfccl_stage_blocks(o, p->rkind, a->rbuf, 1, (size_t)a->scount, NULL, NULL, false,
                                         a->sdtype, NULL, true, true, &hr);
    if (rc != OMPI_SUCCESS)
        return rc;
    if (ex) {
        return MCA_COLL_DFCCL_STAGED_PREVIOUS(m, exscan, o, inner_p, hs, hr, a->scount, a->sdtype, a->op);
    }
    return MCA_COLL_DFCCL_STAGED_PREVIOUS(m, scan, o, inner_p, hs, hr, a->scount, a->sdtype, a->op);
}

static int previous(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, ompi_request_t **request,
                    bool ex)
{
    if (ex)
        return MCA_COLL_DFCCL_PREVIOUS(m, exscan, request, a->sbuf, a->rbuf, a->scount, a->sdtype, a->op);
    return MCA_COLL_DFCCL_PREVIOUS(m, scan, request, a->sbuf, a->rbuf, a->scount, a->sdtype, a->op);
}

MCA_COLL_DFCCL_VARIANT_DESC(scan, MCA_COLL_DFCCL_SCAN, false);
MCA_COLL_DFCCL_VARIANT_DESC(exscan, MCA_COLL_DFCCL_EXSCAN, true);

MCA_COLL_DFCCL_ENTRIES(scan, scan_desc,
                       (.sbuf = sbuf, .rbuf = rbuf, .scount = count, .sdtype = dtype, .op = op),
                       const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op)

MCA_COLL_DFCCL_ENTRIES(exscan, exscan_desc,
                       (.sbuf = sbuf, .rbuf = rbuf, .scount = count, .sdtype = dtype, .op = op),
                       const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op)

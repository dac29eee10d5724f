/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Gather, MPI_Gatherv and their MPI_I* forms. Contiguous blocks run on the engine as
 * bytes (dfcclGather / dfcclGatherv); other datatypes are staged through host memory
 * for the previous module, so no device pointer reaches a host-only algorithm. The
 * receive buffer counts at the root only; MPI_IN_PLACE at the root leaves its block in
 * place.
 */
#include "coll_dfccl_common.h"

/* v: MPI_Gatherv (its recvcounts count at the root only, and may be NULL elsewhere).
 * The engine runs every datatype (a rank packs what is not contiguous), so the path
 * depends on the memory kind alone, which every rank agrees on. */
static bool prepare(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, mca_coll_dfccl_check_t *rec,
                    mca_coll_dfccl_plan_t *p, bool v)
{
    (void)p;
    const bool root = mca_coll_dfccl_is_root(m, a->root), in_place = root && a->sbuf == MPI_IN_PLACE;
    size_t rbytes = 0;
    rec->root = a->root;
    /* what each rank contributes: the same everywhere for MPI_Gather */
    if (!v)
        rec->bytes = in_place ? mca_coll_dfccl_bytes(a->rdtype, (size_t)a->rcount)
                              : mca_coll_dfccl_bytes(a->sdtype, (size_t)a->scount);
    rec->types = mca_coll_dfccl_types(in_place ? a->rdtype : a->sdtype);
    const int64_t sbytes = in_place ? 0 : mca_coll_dfccl_bytes(a->sdtype, (size_t)a->scount);
    if (root)
        for (int i = 0; i < m->size; i++)
            rbytes += (size_t)mca_coll_dfccl_bytes(
                a->rdtype, (size_t)(v ? (a->rcounts[i] > 0 ? a->rcounts[i] : 0) : a->rcount));
    rec->kind = mca_coll_dfccl_kind_v(m, p, a->sbuf, sbytes > 0, root ? a->rbuf : NULL, rbytes > 0);
    return true;
}

static int engine_start(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
                        const mca_coll_dfccl_plan_t *p, mca_coll_dfccl_op_t *o, bool v)
{
    const bool root = mca_coll_dfccl_is_root(m, a->root), in_place = root && a->sbuf == MPI_IN_PLACE;
    const int n = m->size;
    size_t *tab = mca_coll_dfccl_vtab(n), sb = 0, so = 0;
    void *hs = NULL, *hr = NULL;
    int rc = OMPI_SUCCESS;
    if (!tab)
        return MPI_ERR_NO_MEM;
    mca_coll_dfccl_op_engine(o, p->ecomm);
    if (root)
        rc = mca_coll_dfccl_engine_side(o, p->rkind, true, in_place, a->rbuf, n, v ? a->rcounts : NULL,
                                        a->rcount, v ? a->rdispls : NULL, a->rdtype, NULL, tab, tab + n, &hr);
    if (rc == OMPI_SUCCESS && in_place) {
        sb = tab[a->root];
        hs = (char *)hr + tab[n + a->root];
    } else if (rc == OMPI_SUCCESS) {
        rc = mca_coll_dfccl_engine_side(o, p->skind, false, false, (void *)a->sbuf, 1, NULL, a->scount, NULL,
                                        a->sdtype, NULL, &sb, &so, &hs);
        hs = (char *)hs + so;
    }
    if (rc == OMPI_SUCCESS) {
        /* as bytes; MPI_Gather's blocks are equal and back to back (engine_side packs
         * them otherwise): no table for the daemon to read */
        dfcclResult_t res = v ? dfcclGatherv(hs, sb, hr, root ? tab : NULL, root ? tab + n : NULL, dfcclUint8,
                                             a->root, p->ecomm, &o->ereq)
                              : dfcclGather(hs, hr, sb, dfcclUint8, a->root, p->ecomm, &o->ereq);
        rc = res == dfcclSuccess ? OMPI_SUCCESS
                                 : mca_coll_dfccl_engine_error(v ? "MPI_Gatherv" : "MPI_Gather", res);
    }
    free(tab);
    return rc;
}

static int start(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, const mca_coll_dfccl_plan_t *p,
                 mca_coll_dfccl_op_t *o, ompi_request_t **inner_p, bool v)
{
    if (p->path == MCA_COLL_DFCCL_PATH_ENGINE)
        return engine_start(m, a, p, o, v);
    const bool root = mca_coll_dfccl_is_root(m, a->root);
    void *hs = (void *)a->sbuf, *hr = a->rbuf;
    int rc = mca_coll_dfccl_stage_blocks(o, p->skind, (void *)a->sbuf, 1, (size_t)a->scount, NULL, NULL,
                                         false, a->sdtype, NULL, true, false, &hs);
    if (rc == OMPI_SUCCESS && root)
        rc = v ? mca_coll_dfccl_stage_blocks(o, p->rkind, a->rbuf, m->size, 0, a->rcounts, a->rdispls, false,
                                             a->rdtype, NULL, true, true, &hr)
               : mca_coll_dfccl_stage_blocks(o, p->rkind, a->rbuf, 1, (size_t)a->rcount * (size_t)m->size,
                                             NULL, NULL, false, a->rdtype, NULL, true, true, &hr);
    if (rc != OMPI_SUCCESS)
        return rc;
    if (v) {
        return MCA_COLL_DFCCL_STAGED_PREVIOUS(m, gatherv, o, inner_p, hs, a->scount, a->sdtype, hr,
                                              a->rcounts, a->rdispls, a->rdtype, a->root);
    }
    return MCA_COLL_DFCCL_STAGED_PREVIOUS(m, gather, o, inner_p, hs, a->scount, a->sdtype, hr, a->rcount,
                                          a->rdtype, a->root);
}

static int previous(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, ompi_request_t **request,
                    bool v)
{
    if (v)
        return MCA_COLL_DFCCL_PREVIOUS(m, gatherv, request, a->sbuf, a->scount, a->sdtype, a->rbuf,
                                       a->rcounts, a->rdispls, a->rdtype, a->root);
    return MCA_COLL_DFCCL_PREVIOUS(m, gather, request, a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount,
                                   a->rdtype, a->root);
}

MCA_COLL_DFCCL_VARIANT_DESC(gather, MCA_COLL_DFCCL_GATHER, false);
MCA_COLL_DFCCL_VARIANT_DESC(gatherv, MCA_COLL_DFCCL_GATHERV, true);

MCA_COLL_DFCCL_ENTRIES(gather, gather_desc,
                       (.sbuf = sbuf, .rbuf = rbuf, .scount = scount, .rcount = rcount, .sdtype = sdtype,
                        .rdtype = rdtype, .root = root),
                       const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                       struct ompi_datatype_t *rdtype, int root)

MCA_COLL_DFCCL_ENTRIES(gatherv, gatherv_desc,
                       (.sbuf = sbuf, .rbuf = rbuf, .scount = scount, .rcounts = rcounts, .rdispls = displs,
                        .sdtype = sdtype, .rdtype = rdtype, .root = root),
                       const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                       const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype, int root)

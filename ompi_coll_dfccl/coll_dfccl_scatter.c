/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Scatter, MPI_Scatterv and their MPI_I* forms. Contiguous blocks run on the engine
 * as bytes (dfcclScatter / dfcclScatterv); other datatypes are staged through host
 * memory for the previous module, so no device pointer reaches a host-only algorithm.
 * The send buffer counts at the root only; MPI_IN_PLACE at the root leaves its block
 * in place.
 */
#include "coll_dfccl_common.h"

/* v: MPI_Scatterv (its sendcounts count at the root only, and may be NULL elsewhere).
 * The engine runs every datatype (a rank packs what is not contiguous), so the path
 * depends on the memory kind alone. */
static bool prepare(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, mca_coll_dfccl_check_t *rec,
                    mca_coll_dfccl_plan_t *p, bool v)
{
    (void)p;
    const bool root = mca_coll_dfccl_is_root(m, a->root), in_place = root && a->rbuf == MPI_IN_PLACE;
    size_t sbytes = 0;
    rec->root = a->root;
    /* what each rank receives: the same everywhere for MPI_Scatter */
    if (!v)
        rec->bytes = in_place ? mca_coll_dfccl_bytes(a->sdtype, (size_t)a->scount)
                              : mca_coll_dfccl_bytes(a->rdtype, (size_t)a->rcount);
    rec->types = mca_coll_dfccl_types(in_place ? a->sdtype : a->rdtype);
    const int64_t rbytes = in_place ? 0 : mca_coll_dfccl_bytes(a->rdtype, (size_t)a->rcount);
    if (root)
        for (int i = 0; i < m->size; i++)
            sbytes += (size_t)mca_coll_dfccl_bytes(
                a->sdtype, (size_t)(v ? (a->scounts[i] > 0 ? a->scounts[i] : 0) : a->scount));
    rec->kind =
        mca_coll_dfccl_kind_v(m, p, root ? a->sbuf : NULL, sbytes > 0, in_place ? NULL : a->rbuf, rbytes > 0);
    return true;
}

static int engine_start(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
                        const mca_coll_dfccl_plan_t *p, mca_coll_dfccl_op_t *o, bool v)
{
    const bool root = mca_coll_dfccl_is_root(m, a->root), in_place = root && a->rbuf == MPI_IN_PLACE;
    const int n = m->size;
    size_t *tab = mca_coll_dfccl_vtab(n), rb = 0, ro = 0;
    void *hs = NULL, *hr = NULL;
    int rc = OMPI_SUCCESS;
    if (!tab)
        return MPI_ERR_NO_MEM;
    mca_coll_dfccl_op_engine(o, p->ecomm);
    if (root)
        rc = mca_coll_dfccl_engine_side(o, p->skind, false, false, (void *)a->sbuf, n, v ? a->scounts : NULL,
                                        a->scount, v ? a->sdispls : NULL, a->sdtype, NULL, tab, tab + n, &hs);
    if (rc == OMPI_SUCCESS && in_place) {
        /* the root's block stays where it is in sendbuf */
        rb = tab[a->root];
        hr = (char *)hs + tab[n + a->root];
    } else if (rc == OMPI_SUCCESS) {
        rc = mca_coll_dfccl_engine_side(o, p->rkind, true, false, a->rbuf, 1, NULL, a->rcount, NULL,
                                        a->rdtype, NULL, &rb, &ro, &hr);
        hr = (char *)hr + ro;
    }
    if (rc == OMPI_SUCCESS) {
        /* MPI_Scatter's blocks are equal and back to back: no table (see gather) */
        dfcclResult_t res = v ? dfcclScatterv(hs, root ? tab : NULL, root ? tab + n : NULL, hr, rb,
                                              dfcclUint8, a->root, p->ecomm, &o->ereq)
                              : dfcclScatter(hs, hr, rb, dfcclUint8, a->root, p->ecomm, &o->ereq);
        rc = res == dfcclSuccess ? OMPI_SUCCESS
                                 : mca_coll_dfccl_engine_error(v ? "MPI_Scatterv" : "MPI_Scatter", res);
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
    int rc = OMPI_SUCCESS;
    if (root)
        rc = v ? mca_coll_dfccl_stage_blocks(o, p->skind, (void *)a->sbuf, m->size, 0, a->scounts, a->sdispls,
                                             false, a->sdtype, NULL, true, false, &hs)
               : mca_coll_dfccl_stage_blocks(o, p->skind, (void *)a->sbuf, 1,
                                             (size_t)a->scount * (size_t)m->size, NULL, NULL, false,
                                             a->sdtype, NULL, true, false, &hs);
    if (rc == OMPI_SUCCESS)
        rc = mca_coll_dfccl_stage_blocks(o, p->rkind, a->rbuf, 1, (size_t)a->rcount, NULL, NULL, false,
                                         a->rdtype, NULL, true, true, &hr);
    if (rc != OMPI_SUCCESS)
        return rc;
    if (v) {
        return MCA_COLL_DFCCL_STAGED_PREVIOUS(m, scatterv, o, inner_p, hs, a->scounts, a->sdispls, a->sdtype,
                                              hr, a->rcount, a->rdtype, a->root);
    }
    return MCA_COLL_DFCCL_STAGED_PREVIOUS(m, scatter, o, inner_p, hs, a->scount, a->sdtype, hr, a->rcount,
                                          a->rdtype, a->root);
}

static int previous(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, ompi_request_t **request,
                    bool v)
{
    if (v)
        return MCA_COLL_DFCCL_PREVIOUS(m, scatterv, request, a->sbuf, a->scounts, a->sdispls, a->sdtype,
                                       a->rbuf, a->rcount, a->rdtype, a->root);
    return MCA_COLL_DFCCL_PREVIOUS(m, scatter, request, a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount,
                                   a->rdtype, a->root);
}

MCA_COLL_DFCCL_VARIANT_DESC(scatter, MCA_COLL_DFCCL_SCATTER, false);
MCA_COLL_DFCCL_VARIANT_DESC(scatterv, MCA_COLL_DFCCL_SCATTERV, true);

MCA_COLL_DFCCL_ENTRIES(scatter, scatter_desc,
                       (.sbuf = sbuf, .rbuf = rbuf, .scount = scount, .rcount = rcount, .sdtype = sdtype,
                        .rdtype = rdtype, .root = root),
                       const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                       struct ompi_datatype_t *rdtype, int root)

MCA_COLL_DFCCL_ENTRIES(scatterv, scatterv_desc,
                       (.sbuf = sbuf, .rbuf = rbuf, .scounts = scounts, .sdispls = displs, .rcount = rcount,
                        .sdtype = sdtype, .rdtype = rdtype, .root = root),
                       const void *sbuf, const int *scounts, const int *displs,
                       struct ompi_datatype_t *sdtype, void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                       int root)

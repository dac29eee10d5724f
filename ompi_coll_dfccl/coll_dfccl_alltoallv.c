/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Alltoallv, MPI_Alltoallw and their MPI_I* forms, on the engine as bytes
 * (dfcclAllToAllv; for w, a type per peer and byte displacements): contiguous blocks as
 * they are, other datatypes packed. With MPI_IN_PLACE the data to send is in the receive
 * buffer, which the engine's pairwise exchange overwrites while it still sends from it:
 * the send side is a packed copy of the receive blocks, taken at the call.
 */
#include "coll_dfccl_common.h"

/* w: MPI_Alltoallw. The engine runs every datatype (a rank packs what is not
 * contiguous), in place or not, so the path depends on the memory kind alone. */
static bool prepare(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, mca_coll_dfccl_check_t *rec,
                    mca_coll_dfccl_plan_t *p, bool w)
{
    (void)p;
    const bool in_place = a->sbuf == MPI_IN_PLACE;
    int64_t sbytes = 0, rbytes = 0;
    /* every rank's counts differ: nothing but the path and kind to compare */
    rec->types = w ? 0 : mca_coll_dfccl_types(in_place ? a->rdtype : a->sdtype);
    for (int i = 0; i < m->size; i++) {
        if (!in_place && a->scounts[i] > 0)
            sbytes += mca_coll_dfccl_bytes(w ? a->sdtypes[i] : a->sdtype, (size_t)a->scounts[i]);
        if (a->rcounts[i] > 0)
            rbytes += mca_coll_dfccl_bytes(w ? a->rdtypes[i] : a->rdtype, (size_t)a->rcounts[i]);
    }
    rec->kind = mca_coll_dfccl_kind_v(m, p, a->sbuf, sbytes > 0, a->rbuf, rbytes > 0);
    return true;
}

static int engine_start(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
                        const mca_coll_dfccl_plan_t *p, mca_coll_dfccl_op_t *o, bool w)
{
    const int n = m->size;
    size_t *tab = mca_coll_dfccl_vtab(n);
    void *hs = NULL, *hr = NULL;
    if (!tab)
        return MPI_ERR_NO_MEM;
    mca_coll_dfccl_op_engine(o, p->ecomm);
    int rc = mca_coll_dfccl_engine_side(o, p->rkind, true, false, a->rbuf, n, a->rcounts, 0, a->rdispls,
                                        a->rdtype, w ? a->rdtypes : NULL, tab + 2 * n, tab + 3 * n, &hr);
    /* in place: MPI ignores the send arguments; the receive blocks, copied, are sent */
    if (rc == OMPI_SUCCESS && a->sbuf == MPI_IN_PLACE)
        rc = mca_coll_dfccl_engine_side(o, p->rkind, false, true, a->rbuf, n, a->rcounts, 0, a->rdispls,
                                        a->rdtype, w ? a->rdtypes : NULL, tab, tab + n, &hs);
    else if (rc == OMPI_SUCCESS)
        rc = mca_coll_dfccl_engine_side(o, p->skind, false, false, (void *)a->sbuf, n, a->scounts, 0,
                                        a->sdispls, a->sdtype, w ? a->sdtypes : NULL, tab, tab + n, &hs);
    if (rc == OMPI_SUCCESS) {
        dfcclResult_t res =
            dfcclAllToAllv(hs, tab, tab + n, hr, tab + 2 * n, tab + 3 * n, dfcclUint8, p->ecomm, &o->ereq);
        rc = mca_coll_dfccl_engine_result(o, w ? "MPI_Alltoallw" : "MPI_Alltoallv", res);
    }
    free(tab);
    return rc;
}

static int start(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, const mca_coll_dfccl_plan_t *p,
                 mca_coll_dfccl_op_t *o, ompi_request_t **inner_p, bool w)
{
    if (p->path == MCA_COLL_DFCCL_PATH_ENGINE)
        return engine_start(m, a, p, o, w);
    void *hs = (void *)a->sbuf, *hr = a->rbuf;
    int rc = mca_coll_dfccl_stage_blocks(o, p->skind, (void *)a->sbuf, m->size, 0, a->scounts, a->sdispls, w,
                                         a->sdtype, a->sdtypes, true, false, &hs);
    if (rc == OMPI_SUCCESS)
        rc = mca_coll_dfccl_stage_blocks(o, p->rkind, a->rbuf, m->size, 0, a->rcounts, a->rdispls, w,
                                         a->rdtype, a->rdtypes, true, true, &hr);
    if (rc != OMPI_SUCCESS)
        return rc;
    if (w) {
        return MCA_COLL_DFCCL_STAGED_PREVIOUS(m, alltoallw, o, inner_p, hs, a->scounts, a->sdispls,
                                              a->sdtypes, hr, a->rcounts, a->rdispls, a->rdtypes);
    }
    return MCA_COLL_DFCCL_STAGED_PREVIOUS(m, alltoallv, o, inner_p, hs, a->scounts, a->sdispls, a->sdtype, hr,
                                          a->rcounts, a->rdispls, a->rdtype);
}

static int previous(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, ompi_request_t **request,
                    bool w)
{
    if (w)
        return MCA_COLL_DFCCL_PREVIOUS(m, alltoallw, request, a->sbuf, a->scounts, a->sdispls, a->sdtypes,
                                       a->rbuf, a->rcounts, a->rdispls, a->rdtypes);
    return MCA_COLL_DFCCL_PREVIOUS(m, alltoallv, request, a->sbuf, a->scounts, a->sdispls, a->sdtype, a->rbuf,
                                   a->rcounts, a->rdispls, a->rdtype);
}

MCA_COLL_DFCCL_VARIANT_DESC(alltoallv, MCA_COLL_DFCCL_ALLTOALLV, false);
MCA_COLL_DFCCL_VARIANT_DESC(alltoallw, MCA_COLL_DFCCL_ALLTOALLW, true);

MCA_COLL_DFCCL_ENTRIES(alltoallv, alltoallv_desc,
                       (.sbuf = sbuf, .rbuf = rbuf, .scounts = scounts, .sdispls = sdispls,
                        .rcounts = rcounts, .rdispls = rdispls, .sdtype = sdtype, .rdtype = rdtype),
                       const void *sbuf, const int *scounts, const int *sdispls,
                       struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, const int *rdispls,
                       struct ompi_datatype_t *rdtype)

MCA_COLL_DFCCL_ENTRIES(alltoallw, alltoallw_desc,
                       (.sbuf = sbuf, .rbuf = rbuf, .scounts = scounts, .sdispls = sdispls,
                        .rcounts = rcounts, .rdispls = rdispls, .sdtypes = sdtypes, .rdtypes = rdtypes),
                       const void *sbuf, const int *scounts, const int *sdispls,
                       struct ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                       const int *rdispls, struct ompi_datatype_t *const *rdtypes)

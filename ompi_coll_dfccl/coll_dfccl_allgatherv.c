/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Allgatherv, MPI_Iallgatherv. Contiguous blocks run on the engine as bytes
 * (dfcclAllGatherv); other datatypes are staged through host memory for the previous
 * module (the receive side as the span its blocks cover). MPI_IN_PLACE: each rank's
 * block is already in the receive buffer.
 */
#include "coll_dfccl_common.h"

/* The engine runs every datatype (a rank packs what is not contiguous), so the path
 * depends on the memory kind alone. */
static bool prepare(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, mca_coll_dfccl_check_t *rec,
                    mca_coll_dfccl_plan_t *p, bool unused)
{
    (void)unused;
    (void)p;
    const bool in_place = a->sbuf == MPI_IN_PLACE;
    uint64_t hash = 1469598103934665603ull, total = 0; /* FNV-1a of the counts */
    for (int i = 0; i < m->size; i++) {
        hash = (hash ^ (uint64_t)(uint32_t)a->rcounts[i]) * 1099511628211ull;
        total += (uint64_t)(a->rcounts[i] > 0 ? a->rcounts[i] : 0);
    }
    rec->counts_hash = hash;
    rec->bytes = mca_coll_dfccl_bytes(a->rdtype, total);
    rec->types = mca_coll_dfccl_types(a->rdtype);
    const int64_t sbytes = in_place ? 0 : mca_coll_dfccl_bytes(a->sdtype, (size_t)a->scount);
    rec->kind = mca_coll_dfccl_kind_v(m, p, a->sbuf, sbytes > 0, a->rbuf, rec->bytes > 0);
    return true;
}

static int engine_start(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
                        const mca_coll_dfccl_plan_t *p, mca_coll_dfccl_op_t *o)
{
    const bool in_place = a->sbuf == MPI_IN_PLACE;
    const int n = m->size;
    size_t *tab = mca_coll_dfccl_vtab(n), sb = 0, so = 0;
    void *hs = NULL, *hr = NULL;
    if (!tab)
        return MPI_ERR_NO_MEM;
    mca_coll_dfccl_op_engine(o, p->ecomm);
    int rc = mca_coll_dfccl_engine_side(o, p->rkind, true, in_place, a->rbuf, n, a->rcounts, 0, a->rdispls,
                                        a->rdtype, NULL, tab, tab + n, &hr);
    if (rc == OMPI_SUCCESS && in_place) {
        sb = tab[m->rank];
        hs = (char *)hr + tab[n + m->rank];
    } else if (rc == OMPI_SUCCESS) {
        rc = mca_coll_dfccl_engine_side(o, p->skind, false, false, (void *)a->sbuf, 1, NULL, a->scount, NULL,
                                        a->sdtype, NULL, &sb, &so, &hs);
        hs = (char *)hs + so;
    }
    if (rc == OMPI_SUCCESS) {
        dfcclResult_t res = dfcclAllGatherv(hs, sb, hr, tab, tab + n, dfcclUint8, p->ecomm, &o->ereq);
        rc = mca_coll_dfccl_engine_result(o, "MPI_Allgatherv", res);
    }
    free(tab);
    return rc;
}

static int start(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, const mca_coll_dfccl_plan_t *p,
                 mca_coll_dfccl_op_t *o, ompi_request_t **inner_p, bool unused)
{
    (void)unused;
    if (p->path == MCA_COLL_DFCCL_PATH_ENGINE)
        return engine_start(m, a, p, o);
    void *hs = (void *)a->sbuf, *hr = a->rbuf;
    int rc = mca_coll_dfccl_stage_blocks(o, p->skind, (void *)a->sbuf, 1, (size_t)a->scount, NULL, NULL,
                                         false, a->sdtype, NULL, true, false, &hs);
    if (rc == OMPI_SUCCESS)
        rc = mca_coll_dfccl_stage_blocks(o, p->rkind, a->rbuf, m->size, 0, a->rcounts, a->rdispls, false,
                                         a->rdtype, NULL, true, true, &hr);
    if (rc != OMPI_SUCCESS)
        return rc;
    return MCA_COLL_DFCCL_STAGED_PREVIOUS(m, allgatherv, o, inner_p, hs, a->scount, a->sdtype, hr, a->rcounts,
                                          a->rdispls, a->rdtype);
}

static int previous(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, ompi_request_t **request,
                    bool unused)
{
    (void)unused;
    return MCA_COLL_DFCCL_PREVIOUS(m, allgatherv, request, a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcounts,
                                   a->rdispls, a->rdtype);
}

MCA_COLL_DFCCL_VARIANT_DESC(allgatherv, MCA_COLL_DFCCL_ALLGATHERV, false);

MCA_COLL_DFCCL_ENTRIES(allgatherv, allgatherv_desc,
                       (.sbuf = sbuf, .rbuf = rbuf, .scount = scount, .rcounts = rcounts, .rdispls = displs,
                        .sdtype = sdtype, .rdtype = rdtype),
                       const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                       const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype)

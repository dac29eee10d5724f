/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Gather, MPI_Gatherv, MPI_Scatter, MPI_Scatterv and their MPI_I* forms: the rooted
 * collectives, one the other's mirror. Each is seen from its blocks: `many` is the root's
 * buffer of N blocks (a gather's receive buffer, a scatter's send buffer; it counts at
 * the root only), `one` every rank's own block. Contiguous blocks run on the engine as
 * bytes (dfcclGather(v) / dfcclScatter(v)); other datatypes are staged through host
 * memory for the previous module, so no device pointer reaches a host-only algorithm.
 * MPI_IN_PLACE at the root (for `one`) leaves the root's block where it is in `many`.
 */
#include "coll_dfccl_common.h"

/* The last argument of prepare/start/previous (MCA_COLL_DFCCL_VARIANT_DESC's variant). */
#define ROOTED_V       1 /* the v-form: `many`'s counts and displacements per rank */
#define ROOTED_SCATTER 2 /* the root sends `many`; else it receives it */

typedef struct {
    bool scatter, v, root, in_place;
    void *one;
    int one_count;
    struct ompi_datatype_t *one_type;
    void *many; /* NULL off the root */
    int many_count;
    const int *many_counts, *many_displs;
    struct ompi_datatype_t *many_type;
} rooted_t;

static rooted_t view(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, int how)
{
    rooted_t r;
    r.scatter = how & ROOTED_SCATTER;
    r.v = how & ROOTED_V;
    r.root = mca_coll_dfccl_is_root(m, a->root);
    r.one = r.scatter ? a->rbuf : (void *)a->sbuf;
    r.in_place = r.root && r.one == MPI_IN_PLACE;
    r.one_count = r.scatter ? a->rcount : a->scount;
    r.one_type = r.scatter ? a->rdtype : a->sdtype;
    r.many = !r.root ? NULL : r.scatter ? (void *)a->sbuf : a->rbuf;
    r.many_count = r.scatter ? a->scount : a->rcount;
    r.many_counts = r.scatter ? a->scounts : a->rcounts;
    r.many_displs = r.scatter ? a->sdispls : a->rdispls;
    r.many_type = r.scatter ? a->sdtype : a->rdtype;
    return r;
}

/* The engine runs every datatype (a rank packs what is not contiguous), so the path
 * depends on the memory kind alone, which every rank agrees on. */
static bool prepare(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, mca_coll_dfccl_check_t *rec,
                    mca_coll_dfccl_plan_t *p, int how)
{
    const rooted_t r = view(m, a, how);
    rec->root = a->root;
    /* a rank's block: the same everywhere in the non-v forms */
    if (!r.v)
        rec->bytes = r.in_place ? mca_coll_dfccl_bytes(r.many_type, (size_t)r.many_count)
                                : mca_coll_dfccl_bytes(r.one_type, (size_t)r.one_count);
    rec->types = mca_coll_dfccl_types(r.in_place ? r.many_type : r.one_type);
    const int64_t one_bytes = r.in_place ? 0 : mca_coll_dfccl_bytes(r.one_type, (size_t)r.one_count);
    size_t many_bytes = 0;
    if (r.root)
        for (int i = 0; i < m->size; i++)
            many_bytes += (size_t)mca_coll_dfccl_bytes(
                r.many_type, (size_t)(r.v ? (r.many_counts[i] > 0 ? r.many_counts[i] : 0) : r.many_count));
    const void *one = r.in_place ? NULL : r.one;
    rec->kind = r.scatter ? mca_coll_dfccl_kind_v(m, p, r.many, many_bytes > 0, one, one_bytes > 0)
                          : mca_coll_dfccl_kind_v(m, p, one, one_bytes > 0, r.many, many_bytes > 0);
    return true;
}

static int engine_start(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
                        const mca_coll_dfccl_plan_t *p, mca_coll_dfccl_op_t *o, const rooted_t *r)
{
    const int n = m->size;
    const mca_coll_dfccl_mem_t one_kind = r->scatter ? p->rkind : p->skind;
    const mca_coll_dfccl_mem_t many_kind = r->scatter ? p->skind : p->rkind;
    size_t *tab = mca_coll_dfccl_vtab(n), ob = 0, oo = 0;
    void *hone = NULL, *hmany = NULL;
    int rc = OMPI_SUCCESS;
    if (!tab)
        return MPI_ERR_NO_MEM;
    mca_coll_dfccl_op_engine(o, p->ecomm);
    if (r->root) /* a gather's root keeps its own block's contents when in place */
        rc = mca_coll_dfccl_engine_side(
            o, many_kind, !r->scatter, !r->scatter && r->in_place, r->many, n, r->v ? r->many_counts : NULL,
            r->many_count, r->v ? r->many_displs : NULL, r->many_type, NULL, tab, tab + n, &hmany);
    if (rc == OMPI_SUCCESS && r->in_place) {
        /* the root's block stays where it is in `many` */
        ob = tab[a->root];
        hone = (char *)hmany + tab[n + a->root];
    } else if (rc == OMPI_SUCCESS) {
        rc = mca_coll_dfccl_engine_side(o, one_kind, r->scatter, false, r->one, 1, NULL, r->one_count, NULL,
                                        r->one_type, NULL, &ob, &oo, &hone);
        hone = (char *)hone + oo;
    }
    if (rc == OMPI_SUCCESS) {
        /* as bytes; the non-v forms' blocks are equal and back to back (engine_side packs
         * them otherwise): no table for the daemon to read */
        size_t *counts = r->root ? tab : NULL, *displs = r->root ? tab + n : NULL;
        dfcclResult_t res;
        if (r->scatter)
            res =
                r->v ? dfcclScatterv(hmany, counts, displs, hone, ob, dfcclUint8, a->root, p->ecomm, &o->ereq)
                     : dfcclScatter(hmany, hone, ob, dfcclUint8, a->root, p->ecomm, &o->ereq);
        else
            res = r->v
                      ? dfcclGatherv(hone, ob, hmany, counts, displs, dfcclUint8, a->root, p->ecomm, &o->ereq)
                      : dfcclGather(hone, hmany, ob, dfcclUint8, a->root, p->ecomm, &o->ereq);
        static const char *const names[4] = {"MPI_Gather", "MPI_Gatherv", "MPI_Scatter", "MPI_Scatterv"};
        rc = mca_coll_dfccl_engine_result(o, names[r->scatter * 2 + r->v], res);
    }
    free(tab);
    return rc;
}

static int start(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, const mca_coll_dfccl_plan_t *p,
                 mca_coll_dfccl_op_t *o, ompi_request_t **inner_p, int how)
{
    const rooted_t r = view(m, a, how);
    if (p->path == MCA_COLL_DFCCL_PATH_ENGINE)
        return engine_start(m, a, p, o, &r);
    const mca_coll_dfccl_mem_t one_kind = r.scatter ? p->rkind : p->skind;
    const mca_coll_dfccl_mem_t many_kind = r.scatter ? p->skind : p->rkind;
    void *hone = r.one, *hmany = r.scatter ? (void *)a->sbuf : a->rbuf;
    int rc = mca_coll_dfccl_stage_blocks(o, one_kind, r.one, 1, (size_t)r.one_count, NULL, NULL, false,
                                         r.one_type, NULL, true, r.scatter, &hone);
    if (rc == OMPI_SUCCESS && r.root)
        rc =
            r.v ? mca_coll_dfccl_stage_blocks(o, many_kind, r.many, m->size, 0, r.many_counts, r.many_displs,
                                              false, r.many_type, NULL, true, !r.scatter, &hmany)
                : mca_coll_dfccl_stage_blocks(o, many_kind, r.many, 1, (size_t)r.many_count * (size_t)m->size,
                                              NULL, NULL, false, r.many_type, NULL, true, !r.scatter, &hmany);
    if (rc != OMPI_SUCCESS)
        return rc;
    if (r.scatter && r.v)
        return MCA_COLL_DFCCL_STAGED_PREVIOUS(m, scatterv, o, inner_p, hmany, a->scounts, a->sdispls,
                                              a->sdtype, hone, a->rcount, a->rdtype, a->root);
    if (r.scatter)
        return MCA_COLL_DFCCL_STAGED_PREVIOUS(m, scatter, o, inner_p, hmany, a->scount, a->sdtype, hone,
                                              a->rcount, a->rdtype, a->root);
    if (r.v)
        return MCA_COLL_DFCCL_STAGED_PREVIOUS(m, gatherv, o, inner_p, hone, a->scount, a->sdtype, hmany,
                                              a->rcounts, a->rdispls, a->rdtype, a->root);
    return MCA_COLL_DFCCL_STAGED_PREVIOUS(m, gather, o, inner_p, hone, a->scount, a->sdtype, hmany, a->rcount,
                                          a->rdtype, a->root);
}

static int previous(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, ompi_request_t **request,
                    int how)
{
    switch (how) {
    case ROOTED_SCATTER | ROOTED_V:
        return MCA_COLL_DFCCL_PREVIOUS(m, scatterv, request, a->sbuf, a->scounts, a->sdispls, a->sdtype,
                                       a->rbuf, a->rcount, a->rdtype, a->root);
    case ROOTED_SCATTER:
        return MCA_COLL_DFCCL_PREVIOUS(m, scatter, request, a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount,
                                       a->rdtype, a->root);
    case ROOTED_V:
        return MCA_COLL_DFCCL_PREVIOUS(m, gatherv, request, a->sbuf, a->scount, a->sdtype, a->rbuf,
                                       a->rcounts, a->rdispls, a->rdtype, a->root);
    default:
        return MCA_COLL_DFCCL_PREVIOUS(m, gather, request, a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount,
                                       a->rdtype, a->root);
    }
}

MCA_COLL_DFCCL_VARIANT_DESC(gather, MCA_COLL_DFCCL_GATHER, 0);
MCA_COLL_DFCCL_VARIANT_DESC(gatherv, MCA_COLL_DFCCL_GATHERV, ROOTED_V);
MCA_COLL_DFCCL_VARIANT_DESC(scatter, MCA_COLL_DFCCL_SCATTER, ROOTED_SCATTER);
MCA_COLL_DFCCL_VARIANT_DESC(scatterv, MCA_COLL_DFCCL_SCATTERV, ROOTED_SCATTER | ROOTED_V);

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

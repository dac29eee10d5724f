/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Gather, MPI_Gatherv and their MPI_I* forms. The engine does not run them yet:
 * device buffers are staged through host memory for the previous module, so no device
 * pointer reaches a host-only algorithm; host buffers go to it untouched. The receive
 * buffer counts at the root only; MPI_IN_PLACE at the root leaves its block in place.
 */
#include "coll_dfccl_common.h"

/* v: MPI_Gatherv (its recvcounts count at the root only, and may be NULL elsewhere) */
static bool prepare(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, mca_coll_dfccl_check_t *rec,
                    bool v)
{
    const bool root = m->rank == a->root, in_place = a->sbuf == MPI_IN_PLACE;
    rec->root = a->root;
    rec->loose = 1;
    /* what each rank contributes: the same everywhere for MPI_Gather */
    if (!v)
        rec->bytes = in_place ? mca_coll_dfccl_bytes(a->rdtype, (size_t)a->rcount)
                              : mca_coll_dfccl_bytes(a->sdtype, (size_t)a->scount);
    rec->types = mca_coll_dfccl_types(in_place ? a->rdtype : a->sdtype);
    rec->kind = mca_coll_dfccl_kind2(a->sbuf, root ? a->rbuf : NULL);
    return false;
}

static int start(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, mca_coll_dfccl_op_t *o,
                 ompi_request_t **inner_p, bool v)
{
    const bool root = m->rank == a->root;
    void *hs = (void *)a->sbuf, *hr = a->rbuf;
    int rc = mca_coll_dfccl_stage_blocks(o, (void *)a->sbuf, 1, (size_t)a->scount, NULL, NULL, false,
                                         a->sdtype, NULL, true, false, &hs);
    if (rc == OMPI_SUCCESS && root)
        rc = v ? mca_coll_dfccl_stage_blocks(o, a->rbuf, m->size, 0, a->rcounts, a->rdispls, false, a->rdtype,
                                             NULL, true, true, &hr)
               : mca_coll_dfccl_stage_blocks(o, a->rbuf, 1, (size_t)a->rcount * (size_t)m->size, NULL, NULL,
                                             false, a->rdtype, NULL, true, true, &hr);
    if (rc != OMPI_SUCCESS)
        return rc;
    if (v) {
        if (inner_p)
            return m->previous_igatherv(hs, a->scount, a->sdtype, hr, a->rcounts, a->rdispls, a->rdtype,
                                        a->root, m->comm, inner_p, m->previous_igatherv_module);
        o->rc = m->previous_gatherv(hs, a->scount, a->sdtype, hr, a->rcounts, a->rdispls, a->rdtype, a->root,
                                    m->comm, m->previous_gatherv_module);
        return OMPI_SUCCESS;
    }
    if (inner_p)
        return m->previous_igather(hs, a->scount, a->sdtype, hr, a->rcount, a->rdtype, a->root, m->comm,
                                   inner_p, m->previous_igather_module);
    o->rc = m->previous_gather(hs, a->scount, a->sdtype, hr, a->rcount, a->rdtype, a->root, m->comm,
                               m->previous_gather_module);
    return OMPI_SUCCESS;
}

static int previous(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, ompi_request_t **request,
                    bool v)
{
    if (v)
        return request
                   ? m->previous_igatherv(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcounts, a->rdispls,
                                          a->rdtype, a->root, m->comm, request, m->previous_igatherv_module)
                   : m->previous_gatherv(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcounts, a->rdispls,
                                         a->rdtype, a->root, m->comm, m->previous_gatherv_module);
    return request ? m->previous_igather(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount, a->rdtype,
                                         a->root, m->comm, request, m->previous_igather_module)
                   : m->previous_gather(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount, a->rdtype, a->root,
                                        m->comm, m->previous_gather_module);
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

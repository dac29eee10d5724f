/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Alltoallv, MPI_Alltoallw and their MPI_I* forms. The engine does not run them
 * yet: device buffers are staged through host memory for the previous module (each side
 * as the span its blocks cover: counts and displacements in the datatype's extent for
 * v, per-peer datatypes and byte displacements for w), host buffers go to it untouched.
 * MPI_IN_PLACE: the data to send is in the receive buffer.
 */
#include "coll_dfccl_common.h"

/* w: MPI_Alltoallw */
static bool prepare(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, mca_coll_dfccl_check_t *rec,
                    bool w)
{
    (void)m;
    (void)w;
    rec->loose = 1; /* every rank's counts differ: nothing else to compare */
    rec->kind = mca_coll_dfccl_kind2(a->sbuf, a->rbuf);
    return false;
}

static int start(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, mca_coll_dfccl_op_t *o,
                 ompi_request_t **inner_p, bool w)
{
    void *hs = (void *)a->sbuf, *hr = a->rbuf;
    int rc = mca_coll_dfccl_stage_blocks(o, (void *)a->sbuf, m->size, 0, a->scounts, a->sdispls, w, a->sdtype,
                                         a->sdtypes, true, false, &hs);
    if (rc == OMPI_SUCCESS)
        rc = mca_coll_dfccl_stage_blocks(o, a->rbuf, m->size, 0, a->rcounts, a->rdispls, w, a->rdtype,
                                         a->rdtypes, true, true, &hr);
    if (rc != OMPI_SUCCESS)
        return rc;
    if (w) {
        if (inner_p)
            return m->previous_ialltoallw(hs, a->scounts, a->sdispls, a->sdtypes, hr, a->rcounts, a->rdispls,
                                          a->rdtypes, m->comm, inner_p, m->previous_ialltoallw_module);
        o->rc = m->previous_alltoallw(hs, a->scounts, a->sdispls, a->sdtypes, hr, a->rcounts, a->rdispls,
                                      a->rdtypes, m->comm, m->previous_alltoallw_module);
        return OMPI_SUCCESS;
    }
    if (inner_p)
        return m->previous_ialltoallv(hs, a->scounts, a->sdispls, a->sdtype, hr, a->rcounts, a->rdispls,
                                      a->rdtype, m->comm, inner_p, m->previous_ialltoallv_module);
    o->rc = m->previous_alltoallv(hs, a->scounts, a->sdispls, a->sdtype, hr, a->rcounts, a->rdispls,
                                  a->rdtype, m->comm, m->previous_alltoallv_module);
    return OMPI_SUCCESS;
}

static int previous(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a, ompi_request_t **request,
                    bool w)
{
    if (w)
        return request
                   ? m->previous_ialltoallw(a->sbuf, a->scounts, a->sdispls, a->sdtypes, a->rbuf, a->rcounts,
                                            a->rdispls, a->rdtypes, m->comm, request,
                                            m->previous_ialltoallw_module)
                   : m->previous_alltoallw(a->sbuf, a->scounts, a->sdispls, a->sdtypes, a->rbuf, a->rcounts,
                                           a->rdispls, a->rdtypes, m->comm, m->previous_alltoallw_module);
    return request ? m->previous_ialltoallv(a->sbuf, a->scounts, a->sdispls, a->sdtype, a->rbuf, a->rcounts,
                                            a->rdispls, a->rdtype, m->comm, request,
                                            m->previous_ialltoallv_module)
                   : m->previous_alltoallv(a->sbuf, a->scounts, a->sdispls, a->sdtype, a->rbuf, a->rcounts,
                                           a->rdispls, a->rdtype, m->comm, m->previous_alltoallv_module);
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

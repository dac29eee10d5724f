/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI_Allgather, MPI_Iallgather: contiguous data as bytes. MPI_IN_PLACE (own block
 * already at recvbuf + rank * block) is the engine's in-place convention. */
#include "coll_dfccl_common.h"

static bool allgather_prepare(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
                              mca_coll_dfccl_check_t *rec, mca_coll_dfccl_plan_t *p)
{
    return mca_coll_dfccl_blocks_prepare(m, a, 1, rec, p);
}

static int allgather_start(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
                           const mca_coll_dfccl_plan_t *p, mca_coll_dfccl_op_t *o, ompi_request_t **inner_p)
{
    const void *sbuf = a->sbuf;
    void *rbuf = a->rbuf;
    const int scount = a->scount, rcount = a->rcount;
    struct ompi_datatype_t *sdtype = a->sdtype, *rdtype = a->rdtype;
    const bool in_place = sbuf == MPI_IN_PLACE;
    const size_t n = (size_t)m->size;
    void *hs = (void *)sbuf, *hr = rbuf;
    int rc;

    if (p->path == MCA_COLL_DFCCL_PATH_ENGINE) {
        mca_coll_dfccl_op_engine(o, p->ecomm);
        const size_t all = n * p->bytes;
        if ((rc = mca_coll_dfccl_view(o, p->rkind, (char *)rbuf + p->roff, 0, all, in_place, 0, all, &hr)) !=
            OMPI_SUCCESS)
            return rc;
        if (in_place)
            hs = (char *)hr + (size_t)m->rank * p->bytes;
        else if ((rc = mca_coll_dfccl_view(o, p->skind, (char *)sbuf + p->soff, 0, p->bytes, true, 0, 0,
                                           &hs)) != OMPI_SUCCESS)
            return rc;
        dfcclResult_t res = dfcclAllGather(hs, hr, p->bytes, dfcclUint8, p->ecomm, &o->ereq);
        return mca_coll_dfccl_engine_result(o, "MPI_Allgather", res);
    }

    ptrdiff_t lo;
    size_t len;
    mca_coll_dfccl_span(rdtype, (size_t)rcount * n, &lo, &len);
    if ((rc = mca_coll_dfccl_view(o, p->rkind, rbuf, lo, len, true, 0, len, &hr)) != OMPI_SUCCESS)
        return rc;
    if (!in_place) {
        mca_coll_dfccl_span(sdtype, (size_t)scount, &lo, &len);
        if ((rc = mca_coll_dfccl_view(o, p->skind, sbuf, lo, len, true, 0, 0, &hs)) != OMPI_SUCCESS)
            return rc;
    }
    return MCA_COLL_DFCCL_STAGED_PREVIOUS(m, allgather, o, inner_p, hs, scount, sdtype, hr, rcount, rdtype);
}

static int allgather_previous(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
                              ompi_request_t **request)
{
    return MCA_COLL_DFCCL_PREVIOUS(m, allgather, request, a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount,
                                   a->rdtype);
}

static const mca_coll_dfccl_coll_desc_t allgather_desc = {MCA_COLL_DFCCL_ALLGATHER, allgather_prepare,
                                                          allgather_start, allgather_previous};

MCA_COLL_DFCCL_ENTRIES(allgather, allgather_desc,
                       (.sbuf = sbuf, .rbuf = rbuf, .scount = scount, .rcount = rcount, .sdtype = sdtype,
                        .rdtype = rdtype),
                       const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                       struct ompi_datatype_t *rdtype)

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Alltoall, MPI_Ialltoall: contiguous data as bytes. The engine has no in-place
 * all-to-all, so with MPI_IN_PLACE the data is first copied out of recvbuf into a
 * temporary that serves as sendbuf: device memory beside recvbuf when the GPU daemon
 * runs the call, else a host copy.
 */
#include "coll_dfccl_common.h"

static bool alltoall_prepare(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
                             mca_coll_dfccl_check_t *rec, mca_coll_dfccl_plan_t *p)
{
    return mca_coll_dfccl_blocks_prepare(m, a, (size_t)m->size, rec, p);
}

static int alltoall_start(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
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
        void *ruser = (char *)rbuf + p->roff;
        if ((rc = mca_coll_dfccl_view(o, p->rkind, ruser, 0, all, false, 0, all, &hr)) != OMPI_SUCCESS)
            return rc;
        if (!in_place) {
            if ((rc = mca_coll_dfccl_view(o, p->skind, (char *)sbuf + p->soff, 0, all, true, 0, 0, &hs)) !=
                OMPI_SUCCESS)
                return rc;
        } else if (hr != ruser) {
            /* staged: a second host copy of recvbuf, read in, is the send side */
            if ((rc = mca_coll_dfccl_view(o, p->rkind, ruser, 0, all, true, 0, 0, &hs)) != OMPI_SUCCESS)
                return rc;
        } else if (p->rkind == MCA_COLL_DFCCL_MEM_DEVICE) {
            /* the GPU daemon reads recvbuf itself: a device copy of it is the send side */
            if (!(o->dev_tmp = mca_coll_dfccl_device_alloc(all, ruser)))
                return MPI_ERR_NO_MEM;
            if (mca_coll_dfccl_copy(o->dev_tmp, ruser, all, true) != OMPI_SUCCESS)
                return MPI_ERR_OTHER;
            hs = o->dev_tmp;
        } else {
            if (!(o->tmp = malloc(all)))
                return MPI_ERR_NO_MEM;
            memcpy(o->tmp, ruser, all);
            hs = o->tmp;
        }
        dfcclResult_t res = dfcclAllToAll(hs, hr, p->bytes, dfcclUint8, p->ecomm, &o->ereq);
        return mca_coll_dfccl_engine_result(o, "MPI_Alltoall", res);
    }

    ptrdiff_t lo;
    size_t len;
    mca_coll_dfccl_span(rdtype, (size_t)rcount * n, &lo, &len);
    if ((rc = mca_coll_dfccl_view(o, p->rkind, rbuf, lo, len, true, 0, len, &hr)) != OMPI_SUCCESS)
        return rc;
    if (!in_place) {
        mca_coll_dfccl_span(sdtype, (size_t)scount * n, &lo, &len);
        if ((rc = mca_coll_dfccl_view(o, p->skind, sbuf, lo, len, true, 0, 0, &hs)) != OMPI_SUCCESS)
            return rc;
    }
    return MCA_COLL_DFCCL_STAGED_PREVIOUS(m, alltoall, o, inner_p, hs, scount, sdtype, hr, rcount, rdtype);
}

static int alltoall_previous(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
                             ompi_request_t **request)
{
    return MCA_COLL_DFCCL_PREVIOUS(m, alltoall, request, a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount,
                                   a->rdtype);
}

static const mca_coll_dfccl_coll_desc_t alltoall_desc = {MCA_COLL_DFCCL_ALLTOALL, alltoall_prepare,
                                                         alltoall_start, alltoall_previous};

MCA_COLL_DFCCL_ENTRIES(alltoall, alltoall_desc,
                       (.sbuf = sbuf, .rbuf = rbuf, .scount = scount, .rcount = rcount, .sdtype = sdtype,
                        .rdtype = rdtype),
                       const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                       struct ompi_datatype_t *rdtype)

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Alltoall, MPI_Ialltoall: contiguous data as bytes. The engine has no in-place
 * all-to-all, so with MPI_IN_PLACE the data is first copied out of recvbuf into a
 * temporary (or its staged host copy) that serves as sendbuf.
 */
#include "coll_dfccl_common.h"

typedef struct {
    mca_coll_dfccl_path_t path;
    dfcclComm_t ecomm;
    ptrdiff_t soff, roff; /* where the contiguous bytes start */
    size_t block;         /* bytes per peer */
} alltoall_plan_t;

static int alltoall_prepare(mca_coll_dfccl_module_t *m, const void *sbuf, int scount,
                            struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                            struct ompi_datatype_t *rdtype, bool blocking, alltoall_plan_t *p)
{
    const bool in_place = sbuf == MPI_IN_PLACE;
    const size_t n = (size_t)m->size;
    size_t rbytes = 0, sbytes = 0;
    bool ok = mca_coll_dfccl_contiguous(rdtype, (size_t)rcount * n, &p->roff, &rbytes);
    p->block = rbytes / n;
    p->soff = 0;
    if (!in_place)
        ok = mca_coll_dfccl_contiguous(sdtype, (size_t)scount * n, &p->soff, &sbytes) && ok &&
             sbytes == rbytes;
    mca_coll_dfccl_check_t rec = {.coll = MCA_COLL_DFCCL_ALLTOALL, .bytes = (int64_t)p->block};
    if (rec.bytes)
        rec.kind =
            mca_coll_dfccl_kind2(in_place ? NULL : (const char *)sbuf + p->soff, (char *)rbuf + p->roff);
    return mca_coll_dfccl_prologue(m, &rec, ok && p->block > 0, blocking, &p->path, &p->ecomm);
}

static int alltoall_start(mca_coll_dfccl_module_t *m, const alltoall_plan_t *p, const void *sbuf, int scount,
                          struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                          struct ompi_datatype_t *rdtype, mca_coll_dfccl_op_t *o, ompi_request_t **inner_p)
{
    const bool in_place = sbuf == MPI_IN_PLACE;
    const size_t n = (size_t)m->size;
    void *hs = (void *)sbuf, *hr = rbuf;
    int rc;

    if (p->path == MCA_COLL_DFCCL_PATH_ENGINE) {
        mca_coll_dfccl_op_engine(o, p->ecomm);
        if (in_place)
            o->device_direct = false; /* the send side is a host copy of recvbuf */
        const size_t all = n * p->block;
        void *ruser = (char *)rbuf + p->roff;
        if ((rc = mca_coll_dfccl_view(o, ruser, 0, all, false, 0, all, &hr)) != OMPI_SUCCESS)
            return rc;
        if (!in_place) {
            if ((rc = mca_coll_dfccl_view(o, (char *)sbuf + p->soff, 0, all, true, 0, 0, &hs)) !=
                OMPI_SUCCESS)
                return rc;
        } else if (hr != ruser) {
            /* staged: a second host copy of recvbuf, read in, is the send side */
            if ((rc = mca_coll_dfccl_view(o, ruser, 0, all, true, 0, 0, &hs)) != OMPI_SUCCESS)
                return rc;
        } else {
            if (!(o->tmp = malloc(all)))
                return MPI_ERR_NO_MEM;
            memcpy(o->tmp, ruser, all);
            hs = o->tmp;
        }
        dfcclResult_t res = dfcclAllToAll(hs, hr, p->block, dfcclUint8, p->ecomm, &o->ereq);
        return res == dfcclSuccess ? OMPI_SUCCESS : mca_coll_dfccl_engine_error("MPI_Alltoall", res);
    }

    ptrdiff_t lo;
    size_t len;
    mca_coll_dfccl_span(rdtype, (size_t)rcount * n, &lo, &len);
    if ((rc = mca_coll_dfccl_view(o, rbuf, lo, len, true, 0, len, &hr)) != OMPI_SUCCESS)
        return rc;
    if (!in_place) {
        mca_coll_dfccl_span(sdtype, (size_t)scount * n, &lo, &len);
        if ((rc = mca_coll_dfccl_view(o, sbuf, lo, len, true, 0, 0, &hs)) != OMPI_SUCCESS)
            return rc;
    }
    if (inner_p)
        return m->previous_ialltoall(hs, scount, sdtype, hr, rcount, rdtype, m->comm, inner_p,
                                     m->previous_ialltoall_module);
    o->rc =
        m->previous_alltoall(hs, scount, sdtype, hr, rcount, rdtype, m->comm, m->previous_alltoall_module);
    return OMPI_SUCCESS;
}

int mca_coll_dfccl_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                            int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                            mca_coll_base_module_t *module)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    alltoall_plan_t p;
    int rc = alltoall_prepare(m, sbuf, scount, sdtype, rbuf, rcount, rdtype, true, &p);
    if (rc != OMPI_SUCCESS)
        return rc;
    if (p.path == MCA_COLL_DFCCL_PATH_PREVIOUS)
        return m->previous_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                    m->previous_alltoall_module);
    MCA_COLL_DFCCL_RUN_BLOCKING(o,
                                alltoall_start(m, &p, sbuf, scount, sdtype, rbuf, rcount, rdtype, o, NULL));
}

int mca_coll_dfccl_ialltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                             int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                             ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    alltoall_plan_t p;
    int rc = alltoall_prepare(m, sbuf, scount, sdtype, rbuf, rcount, rdtype, false, &p);
    if (rc != OMPI_SUCCESS)
        return rc;
    if (p.path == MCA_COLL_DFCCL_PATH_PREVIOUS)
        return m->previous_ialltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                     m->previous_ialltoall_module);
    MCA_COLL_DFCCL_RUN_NONBLOCKING(
        m, p.path, request, o, inner_p,
        alltoall_start(m, &p, sbuf, scount, sdtype, rbuf, rcount, rdtype, o, inner_p));
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI_Allgather, MPI_Iallgather: contiguous data as bytes. MPI_IN_PLACE (own block
 * already at recvbuf + rank * block) is the engine's in-place convention. */
#include "coll_dfccl_common.h"

typedef struct {
    mca_coll_dfccl_path_t path;
    dfcclComm_t ecomm;
    ptrdiff_t soff, roff; /* where the contiguous bytes start */
    size_t block;         /* bytes per rank */
} allgather_plan_t;

static int allgather_prepare(mca_coll_dfccl_module_t *m, const void *sbuf, int scount,
                             struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                             struct ompi_datatype_t *rdtype, bool blocking, allgather_plan_t *p)
{
    const bool in_place = sbuf == MPI_IN_PLACE;
    size_t rbytes = 0, sbytes = 0;
    bool ok = mca_coll_dfccl_contiguous(rdtype, (size_t)rcount * (size_t)m->size, &p->roff, &rbytes);
    p->block = rbytes / (size_t)m->size;
    p->soff = 0;
    if (!in_place)
        ok = mca_coll_dfccl_contiguous(sdtype, (size_t)scount, &p->soff, &sbytes) && ok && sbytes == p->block;
    mca_coll_dfccl_check_t rec = {.coll = MCA_COLL_DFCCL_ALLGATHER, .bytes = (int64_t)p->block};
    if (rec.bytes)
        rec.kind =
            mca_coll_dfccl_kind2(in_place ? NULL : (const char *)sbuf + p->soff, (char *)rbuf + p->roff);
    return mca_coll_dfccl_prologue(m, &rec, ok && p->block > 0, blocking, &p->path, &p->ecomm);
}

static int allgather_start(mca_coll_dfccl_module_t *m, const allgather_plan_t *p, const void *sbuf,
                           int scount, struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                           struct ompi_datatype_t *rdtype, mca_coll_dfccl_op_t *o, ompi_request_t **inner_p)
{
    const bool in_place = sbuf == MPI_IN_PLACE;
    const size_t n = (size_t)m->size;
    void *hs = (void *)sbuf, *hr = rbuf;
    int rc;

    if (p->path == MCA_COLL_DFCCL_PATH_ENGINE) {
        mca_coll_dfccl_op_engine(o, p->ecomm);
        const size_t all = n * p->block;
        if ((rc = mca_coll_dfccl_view(o, (char *)rbuf + p->roff, 0, all, in_place, 0, all, &hr)) !=
            OMPI_SUCCESS)
            return rc;
        if (in_place)
            hs = (char *)hr + (size_t)m->rank * p->block;
        else if ((rc = mca_coll_dfccl_view(o, (char *)sbuf + p->soff, 0, p->block, true, 0, 0, &hs)) !=
                 OMPI_SUCCESS)
            return rc;
        dfcclResult_t res = dfcclAllGather(hs, hr, p->block, dfcclUint8, p->ecomm, &o->ereq);
        return res == dfcclSuccess ? OMPI_SUCCESS : mca_coll_dfccl_engine_error("MPI_Allgather", res);
    }

    ptrdiff_t lo;
    size_t len;
    mca_coll_dfccl_span(rdtype, (size_t)rcount * n, &lo, &len);
    if ((rc = mca_coll_dfccl_view(o, rbuf, lo, len, true, 0, len, &hr)) != OMPI_SUCCESS)
        return rc;
    if (!in_place) {
        mca_coll_dfccl_span(sdtype, (size_t)scount, &lo, &len);
        if ((rc = mca_coll_dfccl_view(o, sbuf, lo, len, true, 0, 0, &hs)) != OMPI_SUCCESS)
            return rc;
    }
    if (inner_p)
        return m->previous_iallgather(hs, scount, sdtype, hr, rcount, rdtype, m->comm, inner_p,
                                      m->previous_iallgather_module);
    o->rc =
        m->previous_allgather(hs, scount, sdtype, hr, rcount, rdtype, m->comm, m->previous_allgather_module);
    return OMPI_SUCCESS;
}

int mca_coll_dfccl_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                             int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                             mca_coll_base_module_t *module)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    allgather_plan_t p;
    int rc = allgather_prepare(m, sbuf, scount, sdtype, rbuf, rcount, rdtype, true, &p);
    if (rc != OMPI_SUCCESS)
        return rc;
    if (p.path == MCA_COLL_DFCCL_PATH_PREVIOUS)
        return m->previous_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                     m->previous_allgather_module);
    MCA_COLL_DFCCL_RUN_BLOCKING(o,
                                allgather_start(m, &p, sbuf, scount, sdtype, rbuf, rcount, rdtype, o, NULL));
}

int mca_coll_dfccl_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                              int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                              ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    allgather_plan_t p;
    int rc = allgather_prepare(m, sbuf, scount, sdtype, rbuf, rcount, rdtype, false, &p);
    if (rc != OMPI_SUCCESS)
        return rc;
    if (p.path == MCA_COLL_DFCCL_PATH_PREVIOUS)
        return m->previous_iallgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                      m->previous_iallgather_module);
    MCA_COLL_DFCCL_RUN_NONBLOCKING(
        m, p.path, request, o, inner_p,
        allgather_start(m, &p, sbuf, scount, sdtype, rbuf, rcount, rdtype, o, inner_p));
}

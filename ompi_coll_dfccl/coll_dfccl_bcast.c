/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI_Bcast, MPI_Ibcast: any datatype laid out as one contiguous run goes to the
 * engine as bytes (the engine broadcast is in place when sendbuf == recvbuf). */
#include "coll_dfccl_common.h"

static bool bcast_prepare(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
                          mca_coll_dfccl_check_t *rec, mca_coll_dfccl_plan_t *p)
{
    (void)m;
    bool ok = mca_coll_dfccl_contiguous(a->sdtype, (size_t)a->scount, &p->roff, &p->bytes);
    rec->root = a->root;
    rec->bytes = mca_coll_dfccl_bytes(a->sdtype, (size_t)a->scount);
    rec->types = mca_coll_dfccl_types(a->sdtype);
    if (rec->bytes)
        rec->kind = mca_coll_dfccl_kinds(p, NULL, (char *)a->rbuf + p->roff);
    return ok && p->bytes > 0;
}

static int bcast_start(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
                       const mca_coll_dfccl_plan_t *p, mca_coll_dfccl_op_t *o, ompi_request_t **inner_p)
{
    void *buf = a->rbuf;
    const int count = a->scount, root = a->root;
    struct ompi_datatype_t *dtype = a->sdtype;
    const bool is_root = mca_coll_dfccl_is_root(m, root);
    void *hb;
    int rc;

    if (p->path == MCA_COLL_DFCCL_PATH_ENGINE) {
        mca_coll_dfccl_op_engine(o, p->ecomm);
        /* the root's data goes in, everybody else's comes out */
        if ((rc = mca_coll_dfccl_view(o, p->rkind, (char *)buf + p->roff, 0, p->bytes, is_root, 0,
                                      is_root ? 0 : p->bytes, &hb)) != OMPI_SUCCESS)
            return rc;
        dfcclResult_t res = dfcclBroadcast(hb, hb, p->bytes, dfcclUint8, root, p->ecomm, &o->ereq);
        return mca_coll_dfccl_engine_result(o, "MPI_Bcast", res);
    }

    /* staged: the whole span, gaps included, in and back out */
    ptrdiff_t lo;
    size_t len;
    mca_coll_dfccl_span(dtype, (size_t)count, &lo, &len);
    if ((rc = mca_coll_dfccl_view(o, p->rkind, buf, lo, len, true, 0, is_root ? 0 : len, &hb)) !=
        OMPI_SUCCESS)
        return rc;
    return MCA_COLL_DFCCL_STAGED_PREVIOUS(m, bcast, o, inner_p, hb, count, dtype, root);
}

static int bcast_previous(mca_coll_dfccl_module_t *m, const mca_coll_dfccl_args_t *a,
                          ompi_request_t **request)
{
    return MCA_COLL_DFCCL_PREVIOUS(m, bcast, request, a->rbuf, a->scount, a->sdtype, a->root);
}

static const mca_coll_dfccl_coll_desc_t bcast_desc = {MCA_COLL_DFCCL_BCAST, bcast_prepare, bcast_start,
                                                      bcast_previous};

MCA_COLL_DFCCL_ENTRIES(bcast, bcast_desc,
                       (.sbuf = buf, .rbuf = buf, .scount = count, .sdtype = dtype, .root = root), void *buf,
                       int count, struct ompi_datatype_t *dtype, int root)

/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI_Bcast, MPI_Ibcast: any datatype laid out as one contiguous run goes to the
 * engine as bytes (the engine broadcast is in place when sendbuf == recvbuf). */
#include "coll_dfccl_common.h"

typedef struct {
    mca_coll_dfccl_path_t path;
    dfcclComm_t ecomm;
    ptrdiff_t offset; /* where the contiguous bytes start */
    size_t bytes;
} bcast_plan_t;

static int bcast_prepare(mca_coll_dfccl_module_t *m, void *buf, int count, struct ompi_datatype_t *dtype,
                         int root, bool blocking, bcast_plan_t *p)
{
    bool ok = mca_coll_dfccl_contiguous(dtype, (size_t)count, &p->offset, &p->bytes);
    mca_coll_dfccl_check_t rec = {.coll = MCA_COLL_DFCCL_BCAST, .root = root, .bytes = (int64_t)p->bytes};
    if (rec.bytes)
        rec.kind = mca_coll_dfccl_mem_kind((char *)buf + p->offset);
    return mca_coll_dfccl_prologue(m, &rec, ok && p->bytes > 0, blocking, &p->path, &p->ecomm);
}

static int bcast_start(mca_coll_dfccl_module_t *m, const bcast_plan_t *p, void *buf, int count,
                       struct ompi_datatype_t *dtype, int root, mca_coll_dfccl_op_t *o,
                       ompi_request_t **inner_p)
{
    const bool is_root = m->rank == root;
    void *hb;
    int rc;

    if (p->path == MCA_COLL_DFCCL_PATH_ENGINE) {
        mca_coll_dfccl_op_engine(o, p->ecomm);
        /* the root's data goes in, everybody else's comes out */
        if ((rc = mca_coll_dfccl_view(o, (char *)buf + p->offset, 0, p->bytes, is_root, 0,
                                      is_root ? 0 : p->bytes, &hb)) != OMPI_SUCCESS)
            return rc;
        dfcclResult_t res = dfcclBroadcast(hb, hb, p->bytes, dfcclUint8, root, p->ecomm, &o->ereq);
        return res == dfcclSuccess ? OMPI_SUCCESS : mca_coll_dfccl_engine_error("MPI_Bcast", res);
    }

    /* staged: the whole span, gaps included, in and back out */
    ptrdiff_t lo;
    size_t len;
    mca_coll_dfccl_span(dtype, (size_t)count, &lo, &len);
    if ((rc = mca_coll_dfccl_view(o, buf, lo, len, true, 0, is_root ? 0 : len, &hb)) != OMPI_SUCCESS)
        return rc;
    if (inner_p)
        return m->previous_ibcast(hb, count, dtype, root, m->comm, inner_p, m->previous_ibcast_module);
    o->rc = m->previous_bcast(hb, count, dtype, root, m->comm, m->previous_bcast_module);
    return OMPI_SUCCESS;
}

int mca_coll_dfccl_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    bcast_plan_t p;
    int rc = bcast_prepare(m, buf, count, dtype, root, true, &p);
    if (rc != OMPI_SUCCESS)
        return rc;
    if (p.path == MCA_COLL_DFCCL_PATH_PREVIOUS)
        return m->previous_bcast(buf, count, dtype, root, comm, m->previous_bcast_module);
    MCA_COLL_DFCCL_RUN_BLOCKING(o, bcast_start(m, &p, buf, count, dtype, root, o, NULL));
}

int mca_coll_dfccl_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                          struct ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *module)
{
    mca_coll_dfccl_module_t *m = (mca_coll_dfccl_module_t *)module;
    bcast_plan_t p;
    int rc = bcast_prepare(m, buf, count, dtype, root, false, &p);
    if (rc != OMPI_SUCCESS)
        return rc;
    if (p.path == MCA_COLL_DFCCL_PATH_PREVIOUS)
        return m->previous_ibcast(buf, count, dtype, root, comm, request, m->previous_ibcast_module);
    MCA_COLL_DFCCL_RUN_NONBLOCKING(m, p.path, request, o, inner_p,
                                   bcast_start(m, &p, buf, count, dtype, root, o, inner_p));
}

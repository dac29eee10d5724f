/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Staging: the engine's or the previous module's view of a user buffer. Host memory and
 * device memory the GPU daemon takes are used in place; other device memory is copied
 * into host memory for the call and copied back when it completes.
 */
#include "ompi_config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"

#include "coll_dfccl.h"
#include "coll_dfccl_cuda.h"
#include "coll_dfccl_dtypes.h"
#include "coll_dfccl_stage.h"

int mca_coll_dfccl_view(mca_coll_dfccl_op_t *op, mca_coll_dfccl_mem_t kind, const void *user, ptrdiff_t lo,
                        size_t len, bool copy_in, size_t out_off, size_t out_len, void **view_p)
{
    if (!len || kind == MCA_COLL_DFCCL_MEM_HOST) {
        *view_p = (void *)user;
        return OMPI_SUCCESS;
    }
    if (op->device_direct) {
        /* the GPU daemon reads the buffer on its own: with coll_dfccl_device_sync the
         * application's legacy-stream work still in flight lands first, once per
         * operation (synchronous copies into it are covered by SYNC_MEMOPS, which
         * mca_coll_dfccl_mem_kind set) */
        if (!op->device_synced) {
            op->device_synced = true;
            if (mca_coll_dfccl_device_ready() != OMPI_SUCCESS)
                return OMPI_ERROR;
        }
        *view_p = (void *)user;
        return OMPI_SUCCESS;
    }
    return mca_coll_dfccl_stage_in(op, (void *)user, lo, len, copy_in, out_off, out_len, view_p);
}

int mca_coll_dfccl_stage_in(mca_coll_dfccl_op_t *op, void *user, ptrdiff_t lo, size_t len, bool copy_in,
                            size_t out_off, size_t out_len, void **view_p)
{
    if (op->nstage == (int)(sizeof(op->stage) / sizeof(op->stage[0])))
        return MPI_ERR_INTERN;
    char *host = mca_coll_dfccl_host_alloc(len);
    if (!host)
        return MPI_ERR_NO_MEM;
    mca_coll_dfccl_stage_t *s = &op->stage[op->nstage++];
    s->user = (char *)user + lo;
    s->host = host;
    s->out_off = out_off;
    s->out_len = out_len;
    if (copy_in && mca_coll_dfccl_copy(host, s->user, len, false) != OMPI_SUCCESS)
        return MPI_ERR_OTHER;
    *view_p = host - lo;
    return OMPI_SUCCESS;
}

int mca_coll_dfccl_stage_blocks(mca_coll_dfccl_op_t *op, mca_coll_dfccl_mem_t kind, void *buf, int n,
                                size_t count, const int *counts, const int *displs, bool displ_bytes,
                                struct ompi_datatype_t *dtype, struct ompi_datatype_t *const *dtypes,
                                bool copy_in, bool copy_out, void **view_p)
{
    ptrdiff_t lo = PTRDIFF_MAX, hi = PTRDIFF_MIN;
    *view_p = buf;
    if (!buf || buf == MPI_IN_PLACE)
        return OMPI_SUCCESS;
    for (int i = 0; i < (counts ? n : 1); i++) {
        struct ompi_datatype_t *dt = dtypes ? dtypes[i] : dtype;
        const size_t c = counts ? (size_t)(counts[i] > 0 ? counts[i] : 0) : count;
        if (!c)
            continue;
        ptrdiff_t lb, extent, blo;
        size_t blen;
        ompi_datatype_get_extent(dt, &lb, &extent);
        const ptrdiff_t base =
            displs ? (displ_bytes ? (ptrdiff_t)displs[i] : (ptrdiff_t)displs[i] * extent) : 0;
        mca_coll_dfccl_span(dt, c, &blo, &blen);
        if (!blen)
            continue;
        lo = base + blo < lo ? base + blo : lo;
        hi = base + blo + (ptrdiff_t)blen > hi ? base + blo + (ptrdiff_t)blen : hi;
    }
    if (lo >= hi)
        return OMPI_SUCCESS; /* nothing of it is touched */
    return mca_coll_dfccl_view(op, kind, buf, lo, (size_t)(hi - lo), copy_in, 0,
                               copy_out ? (size_t)(hi - lo) : 0, view_p);
}

int mca_coll_dfccl_stages_finish(mca_coll_dfccl_op_t *op, int rc)
{
    for (int i = 0; i < op->nstage; i++) {
        mca_coll_dfccl_stage_t *s = &op->stage[i];
        if (rc == OMPI_SUCCESS && s->out_len &&
            mca_coll_dfccl_copy((char *)s->user + s->out_off, s->host + s->out_off, s->out_len, true) !=
                OMPI_SUCCESS)
            rc = MPI_ERR_OTHER;
        mca_coll_dfccl_host_free(s->host);
    }
    op->nstage = 0;
    free(op->tmp);
    op->tmp = NULL;
    return rc;
}

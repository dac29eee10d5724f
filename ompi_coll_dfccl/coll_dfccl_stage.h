/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Staging (coll_dfccl_stage.c): a call's view of its user buffers. The memory kind of
 * each buffer is decided once per call (the collective's prepare, mca_coll_dfccl_kinds)
 * and passed down here, never asked again.
 */
#ifndef MCA_COLL_DFCCL_STAGE_H
#define MCA_COLL_DFCCL_STAGE_H

#include "coll_dfccl.h"
#include "coll_dfccl_cuda.h"

/**
 * @brief The engine's view of a user buffer region [user + lo, user + lo + len) of
 *        memory kind @p kind: the buffer itself for host memory and for device memory
 *        the GPU daemon takes (op->device_direct), else a staged host copy (copied in
 *        when @p copy_in; [out_off, out_off + out_len) copied back at completion).
 *        *@p view_p becomes the address to use in place of @p user.
 */
int mca_coll_dfccl_view(mca_coll_dfccl_op_t *op, mca_coll_dfccl_mem_t kind, const void *user, ptrdiff_t lo,
                        size_t len, bool copy_in, size_t out_off, size_t out_len, void **view_p);
/**
 * @brief Stage the region a v-described buffer covers: block i is @p counts[i] elements
 *        of @p dtypes[i] (or @p dtype for all) at displacement @p displs[i] (in the
 *        datatype's extent, or in bytes with @p displ_bytes), i < @p n; @p counts NULL is
 *        one block of @p count elements at 0. Host memory (@p kind, the buffer's) is
 *        used as it is. *@p view_p becomes the address the previous module uses in
 *        place of @p buf.
 */
int mca_coll_dfccl_stage_blocks(mca_coll_dfccl_op_t *op, mca_coll_dfccl_mem_t kind, void *buf, int n,
                                size_t count, const int *counts, const int *displs, bool displ_bytes,
                                struct ompi_datatype_t *dtype, struct ompi_datatype_t *const *dtypes,
                                bool copy_in, bool copy_out, void **view_p);
/** @brief Stage in a user region; *@p view_p becomes the host address matching @p user. */
int mca_coll_dfccl_stage_in(mca_coll_dfccl_op_t *op, void *user, ptrdiff_t lo, size_t len, bool copy_in,
                            size_t out_off, size_t out_len, void **view_p);
/** @brief At the end of a call: copy its staged regions back (when @p rc is success),
 *         free them. Returns @p rc or the first failure. */
int mca_coll_dfccl_stages_finish(mca_coll_dfccl_op_t *op, int rc);
/** @brief Completion of a call: host-side move, unpack its packed receive sides, stage
 *         out, free (coll_dfccl_pack.c, over the stages). Returns an MPI error code. */
int mca_coll_dfccl_op_finish(mca_coll_dfccl_op_t *op, int rc);

#endif /* MCA_COLL_DFCCL_STAGE_H */

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory kinds and staging. Device memory is recognised through the CUDA driver,
 * opened with dlopen at the first query, so the component loads and passes every
 * call through on a machine without a GPU or driver. Until the GPU backend exists,
 * device buffers are staged: copied into host memory, run on the engine's CPU
 * backend (or the previous module), copied back. Everything CUDA-specific lives in
 * coll_dfccl_cuda.c so that the GPU backend can replace the staging there.
 */
#ifndef MCA_COLL_DFCCL_CUDA_H
#define MCA_COLL_DFCCL_CUDA_H

#include <stddef.h>

typedef enum {
    MCA_COLL_DFCCL_MEM_HOST = 0,   /**< pageable, pinned or managed: the CPU can touch it */
    MCA_COLL_DFCCL_MEM_DEVICE = 1, /**< device memory: the CPU can't touch it */
} mca_coll_dfccl_mem_t;

/** @brief Kind of the memory @p ptr points to; HOST without a driver or for NULL.
 *         Device memory gets the driver's SYNC_MEMOPS attribute the first time. */
mca_coll_dfccl_mem_t mca_coll_dfccl_mem_kind(const void *ptr);

/** @brief Copy @p len bytes; either side may be device memory. OMPI_SUCCESS or OMPI_ERROR. */
int mca_coll_dfccl_copy(void *dst, const void *src, size_t len);

/** @brief With coll_dfccl_device_sync: wait for the calling context's legacy default
 *         stream. OMPI_SUCCESS or OMPI_ERROR. */
int mca_coll_dfccl_device_ready(void);

/** @brief The calling thread's current CUDA context (NULL without one). */
void *mca_coll_dfccl_cuda_context(void);
/** @brief Make @p ctx current on the calling thread (a thread working for the caller
 *         of mca_coll_dfccl_cuda_context: the engine's set-up uses the caller's device). */
void mca_coll_dfccl_cuda_use_context(void *ctx);

/** @brief Host memory for a staged copy of a device buffer. NULL when out of memory. */
void *mca_coll_dfccl_host_alloc(size_t len);
void mca_coll_dfccl_host_free(void *ptr);

/** @brief Device memory in the context of the device pointer @p like (a scratch buffer
 *         for packed data the GPU daemon moves); NULL without a driver or memory. */
void *mca_coll_dfccl_device_alloc(size_t len, const void *like);
void mca_coll_dfccl_device_free(void *ptr);

/** @brief Drop the driver handle (component close). */
void mca_coll_dfccl_cuda_fini(void);

#endif /* MCA_COLL_DFCCL_CUDA_H */

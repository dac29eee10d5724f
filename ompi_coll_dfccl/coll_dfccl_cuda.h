/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory kinds and copies. Device memory is recognised through the CUDA driver,
 * opened with dlopen at the first query, so the component loads and passes every
 * call through on a machine without a GPU or driver. Device buffers run on the GPU
 * daemon as they are; they are copied through host memory only where the engine
 * communicator has no GPU part, for the previous module (a call the engine can't
 * run, coll_dfccl_device_staged=1) and for packing. Everything CUDA-specific lives
 * in coll_dfccl_cuda.c.
 *
 * mca_coll_dfccl_mem_kind is asked once per buffer and call (mca_coll_dfccl_kinds); it
 * is libdfccl's detector (dfcclPointerGetKind: the driver API without cuInit, so a
 * process that never used CUDA gets "host" without a CUDA context), with managed memory
 * counted as host, which the CPU (previous module, CPU daemon) may touch as it is.
 */
#ifndef MCA_COLL_DFCCL_CUDA_H
#define MCA_COLL_DFCCL_CUDA_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    MCA_COLL_DFCCL_MEM_HOST = 0,   /**< pageable, pinned or managed: the CPU can touch it */
    MCA_COLL_DFCCL_MEM_DEVICE = 1, /**< device memory: the CPU can't touch it */
} mca_coll_dfccl_mem_t;

/** @brief Kind of the memory @p ptr points to; HOST without a driver or for NULL.
 *         Device memory gets the driver's SYNC_MEMOPS attribute the first time. */
mca_coll_dfccl_mem_t mca_coll_dfccl_mem_kind(const void *ptr);

/** @brief Copy @p len bytes; either side may be device memory (@p dst_device: @p dst
 *         is, as the caller decided; the copy has then landed when this returns).
 *         OMPI_SUCCESS or OMPI_ERROR. */
int mca_coll_dfccl_copy(void *dst, const void *src, size_t len, bool dst_device);

/** @brief With coll_dfccl_device_sync: wait for the calling context's legacy default
 *         stream. OMPI_SUCCESS or OMPI_ERROR. */
int mca_coll_dfccl_device_ready(void);

/** @brief true when a CUDA driver is loaded here (device buffers can occur). */
bool mca_coll_dfccl_cuda_driver(void);

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

/** @brief Copy @p len bytes between device addresses whose ranges may overlap (landed
 *         when this returns). OMPI_SUCCESS or an error. */
int mca_coll_dfccl_device_move(void *dst, const void *src, size_t len);

/** @brief Drop the driver handle (component close). */
void mca_coll_dfccl_cuda_fini(void);

#endif /* MCA_COLL_DFCCL_CUDA_H */

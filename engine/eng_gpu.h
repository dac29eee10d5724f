/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine's view of the GPU backend (cuda/): plain C types only, so the host engine
 * (gcc, C11) and the CUDA host code (nvcc, C++) share it. Built without CUDA,
 * engine/gpu_none.c answers "no GPU". */
#ifndef DFCCL_ENG_GPU_H
#define DFCCL_ENG_GPU_H

#include <stdint.h>

#include "dfccl.h"
#include "eng_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct eng_gpu_comm eng_gpu_comm_t;

/* 1 when the GPU backend is built and this process sees a CUDA device. */
int eng_gpu_available(void);
/* 1 when the GPU backend was built in (0: gpu_none.c). */
int eng_gpu_built(void);
/* The CUDA devices this process sees, one line each, into buf (dfcclGetBuildInfo);
 * returns how many, or -1 with the reason in buf. */
int eng_gpu_describe(char *buf, size_t len);

/* 1 when p points to device (or managed) memory. */
int eng_gpu_is_device_ptr(const void *p);

/* Collective over the communicator's ranks (uses the bootstrap all-gather). Every rank
 * must call it; *gc_p is NULL on every rank when any rank cannot use its GPU. is_net
 * (NULL: no peer on the net): the peers reached over the net transport, through
 * host-staged FIFOs. */
dfcclResult_t eng_gpu_comm_create(eng_gpu_comm_t **gc_p, int rank, int nranks, uint64_t uid,
                                  const uint8_t *is_net, dfcclAllgatherFn_t ag, void *ctx);

/* Local: fails what is pending on the communicator, frees its device memory. */
void eng_gpu_comm_destroy(eng_gpu_comm_t *gc);

/* Submit a collective; *done_p / *result_p are the request's completion and result
 * words (host-mapped, written by the daemon); *id_p is released by eng_gpu_release.
 * a->blocks (nblocks entries, or NULL) is copied into memory the daemon reads. */
dfcclResult_t eng_gpu_submit(eng_gpu_comm_t *gc, const eng_coll_args_t *a, size_t nblocks, uint32_t **done_p,
                             int32_t **result_p, int *id_p);

/* Fail what is pending on the communicator, and every later collective, with code (a
 * peer died): the daemon reads the word while it waits. */
void eng_gpu_comm_abort(eng_gpu_comm_t *gc, dfcclResult_t code);

/* Host-side progress: relaunch the daemon when it quit with work pending. */
void eng_gpu_progress(void);

void eng_gpu_release(int id);

void eng_gpu_comm_stats(eng_gpu_comm_t *gc, dfcclStats_t *stats_p);

#ifdef __cplusplus
}
#endif

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine's view of the GPU backend (cuda/): plain C types only, so the host engine
 * (gcc, C11) and the CUDA host code (nvcc, C++) share it. A build without CUDA has no
 * backend (eng_gpu is NULL), not a stub. */
#ifndef DFCCL_ENG_GPU_H
#define DFCCL_ENG_GPU_H

#include <stdint.h>

#include "dfccl.h"
#include "eng_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct eng_gpu_comm eng_gpu_comm_t;

/* The GPU backend's calls. eng_gpu is NULL in a build without CUDA (transport.c): every
 * pointer is then host memory and no communicator has a GPU part. */
typedef struct eng_gpu_backend {
    /* 1 when this process sees a CUDA device it can use. */
    int (*available)(void);
    /* The CUDA devices this process sees, one line each, into buf (dfcclGetBuildInfo);
     * returns how many, or -1 with the reason in buf. */
    int (*describe)(char *buf, size_t len);
    /* Collective over the communicator's ranks (uses the bootstrap all-gather). Every
     * rank must call it; *gc_p is NULL on every rank when any rank cannot use its GPU.
     * tp[p]: the transport (transport.h) that reaches peer p, whose GPU instance the
     * daemon's connection with p uses; used: the bit set of transports any pair uses;
     * arrived[p]: rank p's count of collectives submitted to its GPU daemon (in its
     * shared segment; NULL for a net peer), which submit bumps for this rank and
     * DFCCL_TRACE's stalled stretches read for the others. boot: the set-up's table,
     * where its all-gathers receive (eng_boot_ag, transport.h). */
    dfcclResult_t (*comm_create)(eng_gpu_comm_t **gc_p, int rank, int nranks, uint64_t uid, const uint8_t *tp,
                                 uint32_t used, uint64_t *const *arrived, dfcclAllgatherFn_t ag, void *ctx,
                                 void *boot);
    /* Local: fails what is pending on the communicator, frees its device memory. */
    void (*comm_destroy)(eng_gpu_comm_t *gc);
    /* Fail what is pending on the communicator, and every later collective, with code (a
     * peer died): the daemon reads the word while it waits. */
    void (*comm_abort)(eng_gpu_comm_t *gc, dfcclResult_t code);
    void (*comm_stats)(eng_gpu_comm_t *gc, dfcclStats_t *stats_p);
    /* The channels (daemon blocks) the communicator runs on, the same on every rank. */
    uint32_t (*comm_channels)(const eng_gpu_comm_t *gc);
    /* Submit a collective; *done_p / *result_p are the request's completion and result
     * words (host-mapped, written by the daemon); *id_p is released by release. a->blocks
     * (nblocks entries, or NULL) is copied into memory the daemon reads; *seq_p: its
     * number among the communicator's GPU collectives; *ns_p (DFCCL_TRACE, else 0): when
     * it was submitted (eng_now_ns), stamped after this rank's count of GPU submissions
     * counts it and before the daemon can see it. */
    dfcclResult_t (*submit)(eng_gpu_comm_t *gc, const eng_coll_args_t *a, size_t nblocks, uint32_t **done_p,
                            int32_t **result_p, int *id_p, uint64_t *seq_p, uint64_t *ns_p);
    /* The zero-copy read (engine/algo_read.h): fill *desc, the export descriptor peers
     * read buf (bytes long, device memory) through; never fails: a buffer it cannot
     * export gets a descriptor every reader answers with PUSH. */
    void (*read_export)(eng_gpu_comm_t *gc, const void *buf, uint64_t bytes, eng_block_t *desc);
    /* Host-side progress: relaunch the daemon when it quit with work pending. */
    void (*progress)(void);
    void (*release)(int id);
} eng_gpu_backend_t;

extern const eng_gpu_backend_t *const eng_gpu;

#ifdef __cplusplus
}
#endif

#endif

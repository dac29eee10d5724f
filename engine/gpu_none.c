/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPU backend of a build without CUDA: no device memory exists, so every pointer is
 * host memory and no communicator has a GPU part. */
#include <stdio.h>
#include <string.h>

#include "eng_gpu.h"
#include "eng_log.h"

int eng_gpu_built(void)
{
    return 0;
}

int eng_gpu_describe(char *buf, size_t len)
{
    snprintf(buf, len, "libdfccl was built without CUDA");
    return -1;
}

int eng_gpu_available(void)
{
    return 0;
}

int eng_gpu_is_device_ptr(const void *p)
{
    (void)p;
    return 0;
}

dfcclResult_t eng_gpu_comm_create(eng_gpu_comm_t **gc_p, int rank, int nranks, uint64_t uid,
                                  const uint8_t *is_net, dfcclAllgatherFn_t ag, void *ctx)
{
    (void)rank, (void)nranks, (void)uid, (void)is_net, (void)ag, (void)ctx;
    *gc_p = NULL;
    return dfcclSuccess;
}

void eng_gpu_comm_destroy(eng_gpu_comm_t *gc)
{
    (void)gc;
}

dfcclResult_t eng_gpu_submit(eng_gpu_comm_t *gc, const eng_coll_args_t *a, size_t nblocks, uint32_t **done_p,
                             int32_t **result_p, int *id_p)
{
    (void)gc, (void)a, (void)nblocks, (void)done_p, (void)result_p, (void)id_p;
    return eng_set_error(dfcclUnsupported, "dfccl",
                         "device buffers need the GPU backend (built without CUDA)");
}

void eng_gpu_comm_abort(eng_gpu_comm_t *gc, dfcclResult_t code)
{
    (void)gc, (void)code;
}

void eng_gpu_progress(void)
{
}

void eng_gpu_release(int id)
{
    (void)id;
}

void eng_gpu_comm_stats(eng_gpu_comm_t *gc, dfcclStats_t *stats_p)
{
    (void)gc;
    memset(stats_p, 0, sizeof(*stats_p));
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* Where the GPU backend's FIFOs live in each rank's device memory (plain C: used by
 * cuda/gpu_ipc.cu and cuda/gpu_net.cu, checked by the unit tests). For every (slot,
 * channel) group a receiver holds one connection per source rank: the one from rank R-1, the ring's
 * direction (rings and chains stream over it), has large steps; every other one is sized
 * for a one-shot contribution (also alltoall's steps). Both ends compute the same
 * offsets and step sizes from (group, source, receiver). */
#ifndef DFCCL_ENG_GPU_LAYOUT_H
#define DFCCL_ENG_GPU_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "eng_inline.h"
#include "eng_types.h"

/* control words ahead of each connection's data (16-byte aligned data follows) */
#define ENG_GPU_CTRL_BYTES (DFCCL_DIV_UP(sizeof(eng_conn_ctrl_t), 256) * 256)

/* step size of the connections off the ring's direction: a one-shot contribution fits
 * their FIFO depth (it travels in one chunk per step), an LL one one step (its lines are
 * twice its bytes) */
DFCCL_INLINE uint64_t eng_gpu_small_chunk(uint64_t oneshot_max, uint64_t ll_max, uint32_t depth,
                                          uint64_t gpu_chunk)
{
    const uint64_t want = DFCCL_MAX(DFCCL_MAX(DFCCL_DIV_UP(oneshot_max, depth), 2 * ll_max), (uint64_t)4096);
    return DFCCL_MIN(DFCCL_DIV_UP(want, 64) * 64, gpu_chunk);
}

/* bytes per step from src to R, and from me to p */
DFCCL_INLINE uint64_t eng_gpu_step(int src, int R, int N, uint64_t big, uint64_t small)
{
    return src == (R - 1 + N) % N ? big : small;
}

/* offset of the connection src -> R in R's memory; big/small are whole connections
 * (control + depth steps). eng_gpu_fifo_off(groups, 0, 0, ...) is the total. */
DFCCL_INLINE size_t eng_gpu_fifo_off(size_t g, int src, int R, int N, size_t big, size_t small)
{
    const int pred = (R - 1 + N) % N;
    const size_t in_group = src <= pred ? (size_t)src * small : big + (size_t)(src - 1) * small;
    return g * (big + (size_t)(N - 1) * small) + in_group;
}

#endif

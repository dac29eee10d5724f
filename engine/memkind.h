/* SPDX-License-Identifier: BSD-3-Clause */
/* The memory kind of a buffer (engine/memkind.c), for the engine's choice of daemon. */
#ifndef DFCCL_MEMKIND_H
#define DFCCL_MEMKIND_H

#include "dfccl.h"

/* dfcclPointerGetKind without the argument check. */
dfcclMemKind_t eng_mem_kind(const void *ptr);

/* Whether the GPU daemon runs a buffer: device memory always (the CPU can't touch it),
 * managed memory where the communicator has a GPU part (else the CPU daemon, which can
 * touch it too). */
static inline int eng_gpu_buffer(const void *ptr, int comm_has_gpu)
{
    const dfcclMemKind_t k = eng_mem_kind(ptr);
    return k == dfcclMemDevice || (k == dfcclMemManaged && comm_has_gpu);
}

#endif

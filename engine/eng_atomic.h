/* SPDX-License-Identifier: BSD-3-Clause */
/* Host memory-ordering helpers, named for their ordering (liburing barrier.h style).
 * Every flag in dfccl is published with dfccl_store_release after the data it guards,
 * and read with dfccl_load_acquire before that data is read. The GPU twin
 * (cuda/cuda_atomic.cuh) mirrors these names with a _sys/_gpu scope suffix. */
#ifndef DFCCL_ENG_ATOMIC_H
#define DFCCL_ENG_ATOMIC_H

#include <stdatomic.h>
#include <stdint.h>

#include "eng_inline.h"

#define DFCCL_READ_ONCE(_var)        (*(volatile __typeof__(_var) *)&(_var))
#define DFCCL_WRITE_ONCE(_var, _val) (*(volatile __typeof__(_var) *)&(_var) = (_val))

DFCCL_INLINE uint64_t dfccl_load_acquire64(const uint64_t *p)
{
    return atomic_load_explicit((_Atomic uint64_t *)p, memory_order_acquire);
}

DFCCL_INLINE void dfccl_store_release64(uint64_t *p, uint64_t v)
{
    atomic_store_explicit((_Atomic uint64_t *)p, v, memory_order_release);
}

DFCCL_INLINE uint64_t dfccl_load_relaxed64(const uint64_t *p)
{
    return atomic_load_explicit((_Atomic uint64_t *)p, memory_order_relaxed);
}

DFCCL_INLINE void dfccl_store_relaxed64(uint64_t *p, uint64_t v)
{
    atomic_store_explicit((_Atomic uint64_t *)p, v, memory_order_relaxed);
}

DFCCL_INLINE uint32_t dfccl_load_acquire32(const uint32_t *p)
{
    return atomic_load_explicit((_Atomic uint32_t *)p, memory_order_acquire);
}

DFCCL_INLINE void dfccl_store_release32(uint32_t *p, uint32_t v)
{
    atomic_store_explicit((_Atomic uint32_t *)p, v, memory_order_release);
}

DFCCL_INLINE uint64_t dfccl_fetch_add64(uint64_t *p, uint64_t v)
{
    return atomic_fetch_add_explicit((_Atomic uint64_t *)p, v, memory_order_relaxed);
}

DFCCL_INLINE void dfccl_fence_seq_cst(void)
{
    atomic_thread_fence(memory_order_seq_cst);
}

DFCCL_INLINE void dfccl_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

#endif

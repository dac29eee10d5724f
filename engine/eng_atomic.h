/* SPDX-License-Identifier: BSD-3-Clause */
/* Host memory-ordering helpers, named for their ordering (liburing barrier.h style).
 * Every flag in dfccl is published with dfccl_store_release after the data it guards,
 * and read with dfccl_load_acquire before that data is read. The GPU twin
 * (cuda/cuda_atomic.cuh) mirrors these names with a _sys/_gpu scope suffix. */
#ifndef DFCCL_ENG_ATOMIC_H
#define DFCCL_ENG_ATOMIC_H

#include <stdint.h>

/* GCC's __atomic builtins, not <stdatomic.h>: the GPU backend's host code (nvcc, C++)
 * uses the same vocabulary. Host code only. */
#define DFCCL_ATOMIC_INLINE static inline

#define DFCCL_READ_ONCE(_var)        (*(volatile __typeof__(_var) *)&(_var))
#define DFCCL_WRITE_ONCE(_var, _val) (*(volatile __typeof__(_var) *)&(_var) = (_val))

DFCCL_ATOMIC_INLINE uint64_t dfccl_load_acquire64(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

DFCCL_ATOMIC_INLINE void dfccl_store_release64(uint64_t *p, uint64_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

DFCCL_ATOMIC_INLINE uint64_t dfccl_load_relaxed64(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}

DFCCL_ATOMIC_INLINE void dfccl_store_relaxed64(uint64_t *p, uint64_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELAXED);
}

DFCCL_ATOMIC_INLINE uint32_t dfccl_load_acquire32(const uint32_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

DFCCL_ATOMIC_INLINE void dfccl_store_release32(uint32_t *p, uint32_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

DFCCL_ATOMIC_INLINE uint64_t dfccl_fetch_add64(uint64_t *p, uint64_t v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

/* The same for words of any type (flags of int32, enums, pointers, counters), named for
 * the ordering each call site needs. The typed helpers above stay for the 32/64-bit
 * flags of the FIFOs. */
#define dfccl_load_acquire(_p)          __atomic_load_n((_p), __ATOMIC_ACQUIRE)
#define dfccl_load_relaxed(_p)          __atomic_load_n((_p), __ATOMIC_RELAXED)
#define dfccl_load_seq_cst(_p)          __atomic_load_n((_p), __ATOMIC_SEQ_CST)
#define dfccl_store_release(_p, _v)     __atomic_store_n((_p), (_v), __ATOMIC_RELEASE)
#define dfccl_store_relaxed(_p, _v)     __atomic_store_n((_p), (_v), __ATOMIC_RELAXED)
#define dfccl_store_seq_cst(_p, _v)     __atomic_store_n((_p), (_v), __ATOMIC_SEQ_CST)
#define dfccl_fetch_add_relaxed(_p, _v) __atomic_fetch_add((_p), (_v), __ATOMIC_RELAXED)
#define dfccl_fetch_add_release(_p, _v) __atomic_fetch_add((_p), (_v), __ATOMIC_RELEASE)
#define dfccl_fetch_add_seq_cst(_p, _v) __atomic_fetch_add((_p), (_v), __ATOMIC_SEQ_CST)
#define dfccl_fetch_sub_relaxed(_p, _v) __atomic_fetch_sub((_p), (_v), __ATOMIC_RELAXED)
#define dfccl_fetch_sub_seq_cst(_p, _v) __atomic_fetch_sub((_p), (_v), __ATOMIC_SEQ_CST)
#define dfccl_add_fetch_relaxed(_p, _v) __atomic_add_fetch((_p), (_v), __ATOMIC_RELAXED)
#define dfccl_sub_fetch_acq_rel(_p, _v) __atomic_sub_fetch((_p), (_v), __ATOMIC_ACQ_REL)
#define dfccl_exchange_relaxed(_p, _v)  __atomic_exchange_n((_p), (_v), __ATOMIC_RELAXED)
/* 1 if *p was *expected and is now desired; else *expected gets *p */
#define dfccl_cas_relaxed(_p, _expected, _desired)                                                           \
    __atomic_compare_exchange_n((_p), (_expected), (_desired), 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)

DFCCL_ATOMIC_INLINE void dfccl_fence_seq_cst(void)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* Earlier loads before later loads (a seqlock's reader: its fields, then its count again;
 * engine/sig.c), and earlier stores before later stores (its writer: the count zeroed,
 * then the fields). On x86 both are compiler barriers only. */
DFCCL_ATOMIC_INLINE void dfccl_fence_acquire(void)
{
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
}

DFCCL_ATOMIC_INLINE void dfccl_fence_release(void)
{
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

DFCCL_ATOMIC_INLINE void dfccl_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* One macro for code shared by the CPU backend (gcc, C11) and the GPU backend (nvcc):
 * never write `static inline` directly in a shared header. */
#ifndef DFCCL_ENG_INLINE_H
#define DFCCL_ENG_INLINE_H

#ifdef __CUDACC__
#define DFCCL_INLINE      static __host__ __device__ __forceinline__
#define DFCCL_HOST_DEVICE __host__ __device__
/* algorithms and primitives run inside the daemon only: device code under nvcc */
#define DFCCL_DEV_INLINE static __device__ __forceinline__
/* a large state machine kept out of the daemon's main loop, whose registers it would spill */
#define DFCCL_DEV_OUTLINE static __device__ __noinline__
#else
#define DFCCL_INLINE static inline
#define DFCCL_HOST_DEVICE
#define DFCCL_DEV_INLINE  static inline
#define DFCCL_DEV_OUTLINE static inline
#endif

/* Element loops are shared by the CPU daemon (one thread) and the GPU daemon (a thread
 * block striding over the elements). */
#ifdef __CUDA_ARCH__
#define DFCCL_TID      ((size_t)threadIdx.x)
#define DFCCL_NTHREADS ((size_t)blockDim.x)
/* FIFO data is written by another process: load it from L2 (ld.global.cg), never from a
 * line this SM's L1 kept from an earlier use of the same slot */
#define DFCCL_LOAD(_p) __ldcg(_p)
#else
#define DFCCL_TID      ((size_t)0)
#define DFCCL_NTHREADS ((size_t)1)
#define DFCCL_LOAD(_p) (*(_p))
#endif

#define DFCCL_LIKELY(_x)     __builtin_expect(!!(_x), 1)
#define DFCCL_UNLIKELY(_x)   __builtin_expect(!!(_x), 0)
#define DFCCL_CACHELINE      64
#define DFCCL_MIN(_a, _b)    ((_a) < (_b) ? (_a) : (_b))
#define DFCCL_MAX(_a, _b)    ((_a) > (_b) ? (_a) : (_b))
#define DFCCL_DIV_UP(_a, _b) (((_a) + (_b)-1) / (_b))

/* x % d and x / d for the small divisors of the hot paths (FIFO depth, slots, channels,
 * element sizes): a mask or a shift when d is a power of two, as it is by default. A
 * 64-bit division is a long dependent instruction sequence on the GPU (~0.3 us measured
 * on the daemon's critical path), and a small collective is a chain of such steps. */
#ifdef __CUDA_ARCH__
#define DFCCL_POPC64(_x) ((unsigned)__popcll(_x))
#else
#define DFCCL_POPC64(_x) ((unsigned)__builtin_popcountll(_x))
#endif
DFCCL_INLINE uint64_t eng_mod(uint64_t x, uint64_t d)
{
    return (d & (d - 1)) == 0 ? x & (d - 1) : x % d;
}
DFCCL_INLINE uint64_t eng_div(uint64_t x, uint64_t d)
{
    return (d & (d - 1)) == 0 ? x >> DFCCL_POPC64(d - 1) : x / d;
}

#endif

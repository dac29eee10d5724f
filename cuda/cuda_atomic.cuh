/* SPDX-License-Identifier: BSD-3-Clause */
/* Device memory-ordering helpers, named for ordering and scope (the GPU twin of
 * engine/eng_atomic.h; NCCL op128.h naming). _sys: visible to the host and to IPC peers
 * (other processes, other GPUs); _gpu: this device only. */
#ifndef DFCCL_CUDA_ATOMIC_CUH
#define DFCCL_CUDA_ATOMIC_CUH

#include <stdint.h>

__device__ __forceinline__ uint64_t ld_acquire_sys_u64(const uint64_t *p)
{
    uint64_t v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ uint64_t ld_acquire_gpu_u64(const uint64_t *p)
{
    uint64_t v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void st_release_gpu_u64(uint64_t *p, uint64_t v)
{
    asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ uint64_t atom_add_acq_rel_gpu_u64(uint64_t *p, uint64_t v)
{
    uint64_t old;
    asm volatile("atom.acq_rel.gpu.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
    return old;
}

/* Flag operations at the scope a connection needs (eng_conn_t.sys). */
__device__ __forceinline__ uint64_t ld_acquire_u64(const uint64_t *p, uint32_t sys)
{
    return sys ? ld_acquire_sys_u64(p) : ld_acquire_gpu_u64(p);
}

__device__ __forceinline__ uint64_t ld_volatile_u64(const uint64_t *p)
{
    uint64_t v;
    asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ uint32_t ld_volatile_u32(const uint32_t *p)
{
    uint32_t v;
    asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void st_release_sys_u64(uint64_t *p, uint64_t v)
{
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ void st_release_sys_u32(uint32_t *p, uint32_t v)
{
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ void st_volatile_u64(uint64_t *p, uint64_t v)
{
    asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ void st_volatile_u32(uint32_t *p, uint32_t v)
{
    asm volatile("st.volatile.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

/* LL lines: one 16-byte access, so both flags and both data words arrive together
 * (NCCL's LL protocol relies on the same). */
__device__ __forceinline__ void st_volatile_v4_u32(void *p, uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(a), "r"(b), "r"(c), "r"(d)
                 : "memory");
}

__device__ __forceinline__ uint4 ld_volatile_v4_u32(const void *p)
{
    uint4 v;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
    return v;
}

__device__ __forceinline__ void fence_acq_rel_sys(void)
{
    asm volatile("fence.acq_rel.sys;" ::: "memory");
}

__device__ __forceinline__ void fence_sc_sys(void)
{
    asm volatile("fence.sc.sys;" ::: "memory");
}

__device__ __forceinline__ void fence_acq_rel_gpu(void)
{
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
}

__device__ __forceinline__ void st_release_u64(uint64_t *p, uint64_t v, uint32_t sys)
{
    if (sys)
        st_release_sys_u64(p, v);
    else
        st_release_gpu_u64(p, v);
}

__device__ __forceinline__ void fence_acq_rel(uint32_t sys)
{
    if (sys)
        fence_acq_rel_sys();
    else
        fence_acq_rel_gpu();
}

/* Nanoseconds from the device's global timer: thresholds mean the same as on the CPU. */
__device__ __forceinline__ uint64_t globaltimer_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

#endif
